// AttachJobRunner (attach_job.h): the attach job's stages over the registry, a drop folder,
// inotify and the shared analysis of external traces (server/daemon/external/produced_files.h).
#include "server/daemon/attach/attach_job.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <thread>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "common/io/rank_artifacts.h"
#include "common/status/exit_code.h"
#include "common/status/status_macros.h"
#include "server/daemon/attach/process_facts.h"
#include "server/daemon/external/produced_files.h"

namespace libreyolo::daemon::attach {
namespace {

using std::chrono::milliseconds;

// How long a target may take to poll after its request was set: two intervals (a process
// silent that long has left the registry anyway).
constexpr milliseconds kDeliveryWait = milliseconds(kPollInterval) * kStalePolls + kPollSlack;
// Iteration mode's allowance per iteration asked (a step of a large model on a busy box).
constexpr milliseconds kPerIteration{2000};
constexpr milliseconds kTick{200};

bool Alive(pid_t pid) { return ::kill(pid, 0) == 0 || errno == EPERM; }

// The file Kineto writes when it ignored our ACTIVITIES_LOG_FILE (spec §1.6), when it is there
// and newer than the request.
bool KinetoUsedItsDefault(pid_t pid, int64_t since_unix_ms) {
  struct stat st {};
  const std::string path = absl::StrCat("/tmp/libkineto_activities_", pid, ".json");
  if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  const int64_t mtime_ms =
      static_cast<int64_t>(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1000000;
  return mtime_ms >= since_unix_ms - 1000;
}

// Whether a --pid target is alive but neither polls nor has a polling descendant yet.
bool AwaitsFirstPoll(const v1::AttachSpec& spec, const std::vector<AttachableProcess>& listed) {
  for (const int32_t pid : spec.pids()) {
    if (!Alive(pid)) continue;
    const bool known = std::any_of(listed.begin(), listed.end(), [&](const AttachableProcess& p) {
      return p.pid == pid || std::find(p.facts.ancestors.begin(), p.facts.ancestors.end(), pid) !=
                                 p.facts.ancestors.end();
    });
    if (!known) return true;
  }
  return false;
}

std::string Seconds(int64_t ms) { return absl::StrFormat("%.1f s", static_cast<double>(ms) / 1e3); }

std::string ClockTime(int64_t unix_ms) {
  return absl::FormatTime("%H:%M:%E3S", absl::FromUnixMillis(unix_ms), absl::LocalTimeZone());
}

// The folder every drop folder of this daemon goes under, made when missing: a directory of
// the daemon's own (never a symlink or another user's entry planted in /tmp), mode 0711 so that
// a traced process's user can reach the folder made for it and list nothing else.
absl::Status EnsureDropRoot(const std::string& root) {
  if (::mkdir(root.c_str(), 0711) != 0 && errno != EEXIST) {
    return absl::InternalError(absl::StrCat("cannot make ", root, ": ", std::strerror(errno)));
  }
  struct stat st {};
  if (::lstat(root.c_str(), &st) != 0) {
    return absl::InternalError(absl::StrCat("cannot stat ", root, ": ", std::strerror(errno)));
  }
  if (!S_ISDIR(st.st_mode) || st.st_uid != ::geteuid()) {
    return absl::FailedPreconditionError(absl::StrCat(
        root, " is not a directory of libreyolod's user (uid ", ::geteuid(),
        "): another user made it first; remove it, or set the daemon's drop folder elsewhere"));
  }
  if ((st.st_mode & 07777) != 0711 && ::chmod(root.c_str(), 0711) != 0) {
    return absl::InternalError(absl::StrCat("cannot chmod ", root, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

// The traced processes' KINETO_ONDEMAND_TRACE_DIR, opened for the job: an absolute path without
// "..", its last component no symlink, a directory owned by `producer` (the process's user,
// who chose it: never a directory of root's or another user's). The drop folder is made and
// read through /proc/self/fd/<fd>, so a path the producer renames or relinks afterwards
// changes nothing the (root) daemon touches. -1 with `why` when it does not qualify.
int OpenProducerDir(const std::string& dir, uid_t producer, std::string* why) {
  if (dir.empty() || dir[0] != '/' || absl::StrContains(dir, "/../") ||
      absl::EndsWith(dir, "/..")) {
    *why = "not an absolute path without ..";
    return -1;
  }
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    *why = std::strerror(errno);
    return -1;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || st.st_uid != producer) {
    *why = absl::StrCat("not a directory of the process's user (uid ", producer, ")");
    ::close(fd);
    return -1;
  }
  return fd;
}

// The artifact name AnalyseIntoJob gives each traced process's trace: the profile's own for
// one process; for several, "rank<R>." names numbered in RANK order when every process has a
// distinct RANK, else in pid order.
std::map<pid_t, std::string> TraceArtifactNames(const std::vector<external::TracedProcess>& ps) {
  std::vector<external::TracedProcess> order = ps;
  std::set<int64_t> ranks;
  for (const auto& p : ps) {
    if (p.rank) ranks.insert(*p.rank);
  }
  const bool by_rank = ranks.size() == ps.size();
  std::sort(order.begin(), order.end(), [&](const auto& a, const auto& b) {
    return by_rank ? *a.rank < *b.rank : a.pid < b.pid;
  });
  std::map<pid_t, std::string> out;
  for (size_t i = 0; i < order.size(); ++i) {
    out[order[i].pid] = RankArtifactName(static_cast<int64_t>(i), kTraceFileName);
  }
  return out;
}

}  // namespace

// One job's state across its stages.
struct AttachRun {
  AttachRun(const v1::Job& j, const ProgressFn& p, const engine::CancelToken& c)
      : job(j), spec(j.request().attach()), progress(p), cancel(c) {}
  const v1::Job& job;
  const v1::AttachSpec& spec;
  const ProgressFn& progress;
  const engine::CancelToken& cancel;
  TargetSelection selection;
  std::optional<external::DropFolder> folder;  // as the daemon opens it
  std::string drop_path;                        // as the traced process names it
  int parent_fd = -1;  // the process's KINETO_ONDEMAND_TRACE_DIR, held open (OpenProducerDir)
  std::unique_ptr<TraceArrivals> arrivals;
  std::map<pid_t, uint64_t> tickets;       // targets whose request is pending or delivered
  std::map<pid_t, int64_t> delivered_ms;   // by pid
  std::map<pid_t, std::string> notes;      // what happened to a traced process
  std::vector<pid_t> written;              // traces arrived, in order
  int64_t requested_ms = 0, start_ms = 0, written_ms = 0;
  std::optional<int> warmup_s;          // ACTIVITIES_WARMUP_PERIOD_SECS sent (KinetoWarmupSecs)
  milliseconds warmup = kKinetoWarmup;  // the warm-up Kineto takes

  void Report(const std::string& stage, int64_t done, int64_t total, std::string message) const {
    if (progress) progress(JobProgress{stage, done, total, std::move(message)});
  }
  bool Cancelled() const { return cancel.cancelled.load(); }
};

AttachJobRunner::AttachJobRunner(AttachEndpoint* endpoint, JobStore* store,
                                 const LiveConfig& config, const Clock& clock)
    : endpoint_(endpoint),
      store_(store),
      config_(config),
      clock_(clock),
      drop_root_(absl::StrCat("/tmp/libreyolod-", ::geteuid())) {}

std::string AttachJobRunner::ToolFor(const v1::Job& job) const {
  (void)job;
  return kToolKineto;
}

std::string AttachJobRunner::DescribeDevice(const std::string& device) const {
  return absl::StrCat(device, ": traces of running processes by their own Kineto (",
                      endpoint_->registry().size(), " polling)");
}

// Whether a process holds a GPU device now (its open descriptors, process_facts.h).
static std::optional<bool> HoldsGpu(pid_t pid) { return HoldsGpuDevice(pid); }

// select: the targets, the owner checked.
absl::Status AttachJobRunner::Select(AttachRun& run) const {
  ASSIGN_OR_RETURN(const AttachOwner owner, ResolveOwner(run.job));
  run.Report("select", 0, 0, "choosing the processes to trace");
  absl::StatusOr<TargetSelection> chosen =
      SelectTargets(run.spec, endpoint_->registry().List(), owner, HoldsGpu);
  // A process started a moment ago has not polled yet (its first poll comes within an
  // interval; a private daemon this very command started has an empty registry): a --pid
  // that is alive and that no registered process is or descends from is waited for, up to two
  // intervals (real time: the registry fills from real polls).
  for (int64_t tick = 0; !chosen.ok() && absl::IsNotFound(chosen.status()) && !run.Cancelled() &&
                         tick < kDeliveryWait / kTick;
       ++tick) {
    if (!AwaitsFirstPoll(run.spec, endpoint_->registry().List())) break;
    if (tick == 0) {
      run.Report("select", 0, 0, "waiting for the process's first poll (every 5 s)");
    }
    std::this_thread::sleep_for(kTick);
    chosen = SelectTargets(run.spec, endpoint_->registry().List(), owner, HoldsGpu);
  }
  ASSIGN_OR_RETURN(run.selection, std::move(chosen));
  std::vector<std::string> said;
  for (const AttachableProcess& p : run.selection.traced) said.push_back(absl::StrCat(p.pid));
  std::string msg = absl::StrCat("tracing ", said.size(), " process(es): ", absl::StrJoin(said, ", "));
  for (const v1::AttachTarget& t : run.selection.skipped) {
    absl::StrAppend(&msg, "; skipped ", t.pid(), ": ", t.reason());
  }
  run.Report("select", 1, 1, msg);
  return absl::OkStatus();
}

// prepare: the drop folder (under the processes' KINETO_ONDEMAND_TRACE_DIR when they all name
// the same one, else the daemon's /tmp folder) and its inotify watch, before any request.
absl::Status AttachJobRunner::Prepare(AttachRun& run) const {
  const std::vector<AttachableProcess>& traced = run.selection.traced;
  const std::string& theirs = traced.front().facts.ondemand_trace_dir;
  const uid_t producer = traced.front().uid;
  const bool same = !theirs.empty() && std::all_of(traced.begin(), traced.end(), [&](const auto& p) {
    return p.facts.ondemand_trace_dir == theirs;
  });
  std::string where;
  absl::StatusOr<external::DropFolder> folder = absl::UnknownError("");
  if (same) {
    std::string why;
    run.parent_fd = OpenProducerDir(theirs, producer, &why);
    if (run.parent_fd >= 0) {
      folder = external::MakeDropFolder(absl::StrCat("/proc/self/fd/", run.parent_fd),
                                        run.job.id(), producer);
      if (!folder.ok()) why = std::string(folder.status().message());
    }
    if (folder.ok()) {
      run.drop_path = absl::StrCat(theirs, "/", run.job.id());
      where = absl::StrCat("under the processes' KINETO_ONDEMAND_TRACE_DIR (", theirs, ")");
    } else {
      run.Report("prepare", 0, 1, absl::StrCat("cannot use KINETO_ONDEMAND_TRACE_DIR ", theirs,
                                               ": ", why, "; using /tmp"));
    }
  }
  if (!folder.ok()) {
    RETURN_IF_ERROR(EnsureDropRoot(drop_root_));
    folder = external::MakeDropFolder(drop_root_, run.job.id(), producer);
    RETURN_IF_ERROR(folder.status());
    run.drop_path = folder->path;
    where = absl::StrCat("under /tmp (", drop_root_, "), where Kineto accepts an on-demand path");
  }
  run.folder = *std::move(folder);
  ASSIGN_OR_RETURN(run.arrivals, TraceArrivals::Watch(run.folder->path));
  run.Report("prepare", 1, 1, absl::StrCat("drop folder ", run.drop_path, " ", where));
  return absl::OkStatus();
}

// request: one configuration, one shared start, set pending for every target.
absl::Status AttachJobRunner::Request(AttachRun& run) const {
  run.requested_ms = clock_.NowUnixMs();
  // Unknown (another user's /proc/<pid>/fd unreadable) counts as holding one.
  const bool any_gpu = std::any_of(run.selection.traced.begin(), run.selection.traced.end(),
                                   [](const AttachableProcess& p) {
                                     return HoldsGpuDevice(p.pid).value_or(true);
                                   });
  run.warmup_s = KinetoWarmupSecs(run.spec, any_gpu);
  if (run.warmup_s) run.warmup = std::chrono::seconds(*run.warmup_s);
  run.start_ms = SharedStartUnixMs(run.selection.traced, run.requested_ms, run.warmup);
  TraceRequest request;
  request.log_file = absl::StrCat(run.drop_path, "/", run.job.id(), ".json");
  request.start_unix_ms = run.start_ms;
  request.trace_id = run.job.id();
  request.warmup_s = run.warmup_s;
  const std::string text = KinetoConfigText(run.spec, request);
  for (const AttachableProcess& p : run.selection.traced) {
    absl::StatusOr<uint64_t> ticket = endpoint_->registry().SetPendingConfig(p.pid, text);
    if (!ticket.ok()) {
      return absl::Status(ticket.status().code(),
                          absl::StrCat(ticket.status().message(), ": nothing was asked of it"));
    }
    run.tickets[p.pid] = *ticket;
  }
  std::vector<std::string> waits;
  for (const AttachableProcess& p : run.selection.traced) {
    waits.push_back(absl::StrCat(p.pid, " (last polled ",
                                 Seconds(run.requested_ms - p.last_poll_unix_ms), " ago)"));
  }
  run.Report("waiting", 0, static_cast<int64_t>(run.tickets.size()),
             absl::StrCat("waiting for the next poll of ", absl::StrJoin(waits, ", "),
                          "; processes poll every ", kPollInterval.count(), " s"));
  return absl::OkStatus();
}

// deliver: each target's next poll takes the request. A target that does not poll within
// kDeliveryWait has its request withdrawn; the job goes on with those that took it.
absl::Status AttachJobRunner::Deliver(AttachRun& run) const {
  AttachRegistry& registry = endpoint_->registry();
  const Clock::SteadyTime deadline = clock_.SteadyNow() + kDeliveryWait;
  const int64_t total = static_cast<int64_t>(run.tickets.size());
  const milliseconds slice_each =
      std::max(milliseconds(10), kTick / std::max<int64_t>(1, total));
  std::map<pid_t, uid_t> uid_of;
  for (const AttachableProcess& p : run.selection.traced) uid_of[p.pid] = p.uid;
  while (true) {
    if (run.Cancelled()) return absl::CancelledError("cancelled before every process polled");
    bool open = false;
    for (const auto& [pid, ticket] : run.tickets) {
      if (run.delivered_ms.count(pid) > 0 || run.notes.count(pid) > 0) continue;
      const auto slice = std::min(deadline, clock_.SteadyNow() + slice_each);
      if (std::optional<Delivery> d = registry.WaitForDelivery(ticket, slice)) {
        run.delivered_ms[pid] = d->delivered_unix_ms;
        std::string msg = absl::StrCat("config delivered to ", pid, " after ",
                                       Seconds(d->delivered_unix_ms - run.requested_ms));
        if (!run.spec.has_iterations() &&
            d->delivered_unix_ms + run.warmup.count() > run.start_ms) {
          run.notes[pid] = "took the request too late to warm up before the shared start";
          absl::StrAppend(&msg, ": too late to warm up before the start (Kineto may drop it)");
        }
        run.Report("delivered", static_cast<int64_t>(run.delivered_ms.size()), total, msg);
      } else if (!Alive(pid) || !registry.IsRegistered(pid, uid_of[pid])) {
        registry.CancelPending(ticket);
        run.notes[pid] = Alive(pid) ? "stopped polling before it took the request"
                                    : "exited before it took the request";
      } else {
        open = true;
      }
    }
    if (!open) break;
    if (clock_.SteadyNow() >= deadline) {
      for (const auto& [pid, ticket] : run.tickets) {
        if (run.delivered_ms.count(pid) > 0 || run.notes.count(pid) > 0) continue;
        registry.CancelPending(ticket);
        run.notes[pid] = absl::StrCat("did not take the request within ",
                                      Seconds(kDeliveryWait.count()),
                                      " (busy with its own torch.profiler, or stuck)");
      }
      break;
    }
  }
  if (run.delivered_ms.empty()) {
    std::vector<std::string> why;
    for (const auto& [pid, note] : run.notes) why.push_back(absl::StrCat(pid, " ", note));
    return absl::DeadlineExceededError(
        absl::StrCat("no process took the trace request: ", absl::StrJoin(why, "; ")));
  }
  return absl::OkStatus();
}

// collect: the window, then the traces under their final names (inotify), until the deadline.
absl::Status AttachJobRunner::Collect(AttachRun& run) const {
  std::vector<std::string> expected;
  std::map<std::string, pid_t> pid_of;
  int64_t last_delivery = 0;
  for (const auto& [pid, at] : run.delivered_ms) {
    expected.push_back(TraceFileName(run.job.id(), pid));
    pid_of[expected.back()] = pid;
    last_delivery = std::max(last_delivery, at);
  }
  const bool iterations = run.spec.has_iterations();
  const int64_t window_ms = iterations ? 0 : AttachDurationMs(run.spec);
  const int64_t end_ms = iterations
                             ? last_delivery + run.warmup.count() +
                                   run.spec.iterations() * kPerIteration.count()
                             : run.start_ms + window_ms;
  const Clock::SteadyTime deadline =
      clock_.SteadyNow() + milliseconds(std::max<int64_t>(0, end_ms - clock_.NowUnixMs())) + margin_;
  run.Report("warmup", 0, 0,
             iterations ? absl::StrCat("Kineto warms up, then records ", run.spec.iterations(),
                                       " iteration(s) from the next step")
                        : absl::StrCat(run.warmup_s ? absl::StrCat(
                                                          "Kineto warms up for ", *run.warmup_s,
                                                          " s (nothing on a GPU to trace)")
                                                    : std::string("Kineto warms up (5 s)"),
                                       "; the window starts at ", ClockTime(run.start_ms),
                                       " and lasts ", window_ms, " ms"));
  bool collecting_said = iterations;
  std::vector<std::string> pending = expected;
  while (!pending.empty()) {
    if (run.Cancelled()) return absl::CancelledError("cancelled while the trace was collected");
    if (!collecting_said && clock_.NowUnixMs() >= run.start_ms) {
      collecting_said = true;
      run.Report("collecting", 0, window_ms, absl::StrCat("collecting for ", window_ms, " ms"));
    }
    const std::vector<std::string> arrived = run.arrivals->WaitFor(
        pending, std::chrono::steady_clock::now() + kTick, [&] { return run.Cancelled(); }, kTick);
    for (const std::string& name : arrived) {
      const pid_t pid = pid_of[name];
      run.written.push_back(pid);
      run.written_ms = clock_.NowUnixMs();
      run.notes.erase(pid);
      run.Report("written", static_cast<int64_t>(run.written.size()),
                 static_cast<int64_t>(expected.size()),
                 absl::StrCat("trace of ", pid, " written ",
                              Seconds(run.written_ms - run.requested_ms), " after the request"));
      pending.erase(std::find(pending.begin(), pending.end(), name));
    }
    for (auto it = pending.begin(); it != pending.end();) {
      const pid_t pid = pid_of[*it];
      if (KinetoUsedItsDefault(pid, run.delivered_ms[pid])) {
        return absl::FailedPreconditionError(absl::StrCat(
            "Kineto in process ", pid, " ignored the trace path it was given and wrote "
            "/tmp/libkineto_activities_", pid, ".json instead (a Kineto that accepts on-demand "
            "paths only under /tmp or its KINETO_ONDEMAND_TRACE_DIR, with the drop folder ",
            run.drop_path, " outside both): that file is not taken into the job"));
      }
      if (!Alive(pid)) {
        run.notes[pid] = "exited mid-trace";
        run.Report("written", static_cast<int64_t>(run.written.size()),
                   static_cast<int64_t>(expected.size()),
                   absl::StrCat("process ", pid, " exited before its trace was written"));
        it = pending.erase(it);
      } else {
        ++it;
      }
    }
    if (clock_.SteadyNow() >= deadline) break;
  }
  if (run.written.empty()) return NothingWritten(run, end_ms);
  for (const std::string& name : pending) {
    run.notes[pid_of[name]] = "its trace did not arrive before the deadline";
  }
  return absl::OkStatus();
}

absl::Status AttachJobRunner::NothingWritten(const AttachRun& run, int64_t end_ms) const {
  std::vector<std::string> exited, silent;
  for (const auto& [pid, at] : run.delivered_ms) {
    (void)at;
    const auto note = run.notes.find(pid);
    if (note != run.notes.end() && note->second == "exited mid-trace") {
      exited.push_back(absl::StrCat(pid));
    } else {
      silent.push_back(absl::StrCat(pid));
    }
  }
  if (silent.empty()) {
    return absl::AbortedError(absl::StrCat("process(es) ", absl::StrJoin(exited, ", "),
                                           " exited mid-trace: no trace was written"));
  }
  std::string msg = absl::StrCat("no trace arrived from ", absl::StrJoin(silent, ", "), " within ",
                                 Seconds(margin_.count()), " after the window's end (",
                                 ClockTime(end_ms), ")");
  if (run.spec.has_iterations()) {
    absl::StrAppend(&msg, ": iteration mode needs the process to step an optimizer or a "
                          "profiler, and it may never do; attach with --duration-ms instead");
  } else {
    absl::StrAppend(&msg, ": its Kineto may have dropped the request (a start too close to "
                          "its pickup, or its own profiler started); see the process's log");
  }
  return absl::DeadlineExceededError(msg);
}

// analyse: the traces into the job's artifacts and profile.
absl::Status AttachJobRunner::Analyse(AttachRun& run, RunOutcome* out) const {
  run.Report("analysing", 0, static_cast<int64_t>(run.written.size()),
             absl::StrCat("analysing ", run.written.size(), " trace(s)"));
  std::vector<external::TracedProcess> processes;
  for (const AttachableProcess& p : run.selection.traced) {
    if (std::find(run.written.begin(), run.written.end(), p.pid) == run.written.end()) continue;
    processes.push_back(external::TracedProcess{p.pid, p.facts.rank, p.facts.command_line,
                                                TraceFileName(run.job.id(), p.pid),
                                                p.facts.world_size});
  }
  external::TraceOrigin origin;
  origin.tool = kToolKineto;
  origin.request_trace_id = run.job.id();
  const int64_t max_bytes = config_.Get()->limits.max_artifact_bytes;
  std::vector<v1::Artifact> artifacts;
  RETURN_IF_ERROR(external::AnalyseIntoJob(run.job, *run.folder, processes, origin, store_,
                                           max_bytes, &artifacts));
  out->artifacts = std::move(artifacts);
  const std::map<pid_t, std::string> names = TraceArtifactNames(processes);
  for (v1::AttachTarget& t : out->attach_targets) {
    if (const auto it = names.find(t.pid()); it != names.end()) t.set_trace(it->second);
  }
  const int64_t now = clock_.NowUnixMs();
  std::vector<std::string> parts;
  int64_t first_delivery = INT64_MAX;
  for (const auto& [pid, at] : run.delivered_ms) first_delivery = std::min(first_delivery, at);
  parts.push_back(absl::StrCat("delivered +", Seconds(first_delivery - run.requested_ms)));
  if (!run.spec.has_iterations()) {
    parts.push_back(absl::StrCat("window +", Seconds(run.start_ms - run.requested_ms), ".. +",
                                 Seconds(run.start_ms + AttachDurationMs(run.spec) -
                                         run.requested_ms)));
  }
  parts.push_back(absl::StrCat("written +", Seconds(run.written_ms - run.requested_ms)));
  parts.push_back(absl::StrCat("analysed +", Seconds(now - run.requested_ms)));
  run.Report("analysed", static_cast<int64_t>(processes.size()),
             static_cast<int64_t>(processes.size()),
             absl::StrCat("from the request: ", absl::StrJoin(parts, ", ")));
  return absl::OkStatus();
}

// The outcome's targets: traced first (with what happened to them), then the skipped.
void AttachJobRunner::RecordTargets(const AttachRun& run, RunOutcome* out) const {
  out->attach_targets.clear();
  for (const AttachableProcess& p : run.selection.traced) {
    v1::AttachTarget t = TracedTarget(p);
    if (const auto it = run.notes.find(p.pid); it != run.notes.end()) t.set_reason(it->second);
    out->attach_targets.push_back(std::move(t));
  }
  for (const v1::AttachTarget& t : run.selection.skipped) out->attach_targets.push_back(t);
}

RunOutcome AttachJobRunner::Run(const v1::Job& job, const ProgressFn& progress,
                                const engine::CancelToken& cancel) {
  RunOutcome out;
  if (job.kind() != v1::JOB_KIND_ATTACH || !job.request().has_attach()) {
    out.status = absl::InvalidArgumentError("not an attach job: the attach lane runs only those");
    out.exit_code = ExitCodeForStatus(out.status);
    return out;
  }
  AttachRun run(job, progress, cancel);
  absl::Status s = Select(run);
  if (s.ok()) s = Prepare(run);
  if (s.ok()) s = Request(run);
  if (s.ok()) s = Deliver(run);
  if (s.ok()) s = Collect(run);
  RecordTargets(run, &out);
  if (s.ok()) s = Analyse(run, &out);
  // Requests not taken yet are withdrawn; one taken cannot be: Kineto runs it on its own.
  bool started = false;
  for (const auto& [pid, ticket] : run.tickets) {
    (void)pid;
    AttachRegistry& registry = endpoint_->registry();
    if (!registry.CancelPending(ticket) && registry.DeliveryOf(ticket).has_value()) started = true;
    registry.Forget(ticket);
  }
  if (run.folder) external::RemoveDropFolder(*run.folder);
  if (run.parent_fd >= 0) ::close(run.parent_fd);
  if (!s.ok()) {
    store_->DiscardArtifacts(job.id());  // nothing half-written stays
    out.artifacts.clear();
    if (absl::IsCancelled(s) && started) {
      out.cancel_note =
          "a trace Kineto had already taken cannot be stopped: the process finishes its window "
          "and writes into a drop folder that is gone, so nothing is kept";
    }
  }
  out.status = s;
  out.exit_code = ExitCodeForStatus(s);
  return out;
}

}  // namespace libreyolo::daemon::attach
