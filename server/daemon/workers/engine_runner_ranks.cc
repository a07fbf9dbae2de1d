// EngineRunner's data-parallel jobs (engine_runner.h, RunRanks): the ranks of one job on the
// workers of its device slots, supervised together.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <iostream>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/analysis/profile_json_write.h"
#include "common/io/atomic_file.h"
#include "common/io/file_reader.h"
#include "common/io/rank_artifacts.h"
#include "common/io/unique_fd.h"
#include "common/readers/ranks_view.h"
#include "common/status/status_macros.h"
#include "common/status/thread_guard.h"
#include "wire/job_spec/job_spec.h"
#include "server/daemon/workers/engine_runner.h"

namespace libreyolo::daemon {
namespace {

namespace fs = std::filesystem;

// A TCP port on loopback that nothing listens on now, for rank 0's TCPStore. Another process
// may take it before rank 0 binds it: the rendezvous then fails with the reason, and the job
// with it (it is not retried behind the caller's back).
absl::StatusOr<int> FreeLoopbackPort() {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return absl::UnavailableError("no socket for the rendezvous port");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return absl::UnavailableError("cannot find a free loopback port for the rendezvous");
  }
  return static_cast<int>(ntohs(addr.sin_port));
}

// One rank's run, as its thread leaves it.
struct RankRun {
  engine::CancelToken cancel;
  EngineWorker* worker = nullptr;
  pid_t pid = 0;
  EngineWorker::JobEnd end;
  int64_t finished = -1;  // the order in which ranks ended (0 = first); -1 while running
};

bool Succeeded(const EngineWorker::JobEnd& end) { return end.done && end.done->code() == 0; }

// A rank's run on its thread, under the thread's catch-all (common/status/thread_guard.h): an
// exception is this rank's death, which fails the job.
EngineWorker::JobEnd RunRankGuarded(int64_t rank, const std::string& job,
                                    const std::function<EngineWorker::JobEnd()>& run) {
  EngineWorker::JobEnd end;
  RunGuarded(absl::StrCat("rank ", rank, " of job ", job), "the job fails", [&] { end = run(); },
             [&](const std::string& what) {
               end = EngineWorker::JobEnd{};
               end.death = absl::StrCat("libreyolod's thread for this rank threw: ", what);
             });
  return end;
}

bool DiedOnItsOwn(const EngineWorker::JobEnd& e) {
  return !e.done && !e.cancelled_by_kill && !e.stalled && !e.wall_limit_reached;
}

// How surely a failed rank is the gang's cause: one that died on its own, then one found
// stopped by a signal when the daemon killed it (by the watchdog, or past the cancel grace when
// a peer's collective timed out waiting for it first), then any other.
int CauseWeight(const EngineWorker::JobEnd& e) {
  if (DiedOnItsOwn(e)) return 2;
  return e.stopped ? 1 : 0;
}

// Rank 0's profile.json gains `ranks`: the cross-rank analysis of every rank's trace (the
// per-rank table and the run's figures, what `summary DIR/` shows of the run's folder), made
// once, here, where all the ranks' traces are. Each rank's trace is named by its artifact.
// Returns why it could not be added ("" when it was).
std::string AddRanksToProfile(const v1::Job& job, const std::vector<std::string>& job_dirs) {
  std::vector<std::string> traces;
  for (const std::string& dir : job_dirs)
    traces.push_back((fs::path(dir) / kTraceFileName).string());
  const int threads =
      static_cast<int>(std::min<size_t>(job_dirs.size(), std::thread::hardware_concurrency()));
  absl::StatusOr<RanksView> view =
      BuildRanksViewOfTraces(absl::StrCat("job ", job.id()), traces, threads);
  if (!view.ok()) return std::string(view.status().message());
  view->source = absl::StrCat("job:", job.id());
  for (RankFigures& f : view->result.ranks) f.path = RankArtifactName(f.info.rank, kTraceFileName);
  const std::string profile = (fs::path(job_dirs.front()) / kProfileFileName).string();
  absl::StatusOr<std::string> text = ReadWholeFile(profile);
  if (!text.ok()) return std::string(text.status().message());
  absl::StatusOr<std::string> with =
      AddProfileMember(*std::move(text), "ranks", RenderRanksJson(*view));
  if (!with.ok()) return std::string(with.status().message());
  if (absl::Status s = WriteFileAtomically(profile, *with); !s.ok()) {
    return std::string(s.message());
  }
  return "";
}

// RunRanks' stages: the gang's shape; every rank's worker; the rendezvous; the ranks run on
// their threads, supervised together (RunGang); the cause of a failure (GangCauseRank) made
// the job's error (GangFailure); else the cross-rank analysis, every rank's files published
// and the run's headline numbers (SetRunHeadline).

// This daemon's ranks: all of the run's on one host; across hosts, node_rank's part of it
// (global ranks first .. first + n - 1).
struct GangShape {
  int n = 0;      // this daemon's ranks
  int first = 0;  // the global rank of its rank 0
  int world = 0;  // the run's ranks
};

GangShape GangShapeOf(const v1::Job& job) {
  return GangShape{job.devices_size(), job.world().first_rank(),
                   static_cast<int>(jobspec::JobWorldSize(job))};
}

std::string RankName(const v1::Job& job, const GangShape& g, int r) {
  return absl::StrCat("rank ", g.first + r, " of ", g.world, " (", job.devices(r), ")");
}

// Where the ranks meet.
struct RankRendezvous {
  bool across_hosts = false;
  std::string master_addr;
  int port = 0;
  std::string group;
};

// One host: a rendezvous on the loopback, at a port free now (rank 0 listens on 127.0.0.1
// only). Across hosts: the one the scheduler gave (node 0's rank 0 serves it, on that address
// only: data_parallel.cc, ListenForRendezvous).
absl::StatusOr<RankRendezvous> RendezvousOf(const v1::Job& job) {
  const v1::Rendezvous& rdv = job.request().run().data_parallel().rendezvous();
  RankRendezvous out;
  out.across_hosts = jobspec::AcrossHosts(job.request().run().data_parallel());
  out.master_addr = out.across_hosts ? rdv.master_addr() : "127.0.0.1";
  ASSIGN_OR_RETURN(out.port,
                   out.across_hosts ? absl::StatusOr<int>(rdv.master_port()) : FreeLoopbackPort());
  out.group = out.across_hosts ? jobspec::GroupId(rdv) : job.id();
  return out;
}

// Rank r's run on its worker, placed in the gang.
using RankJob = std::function<EngineWorker::JobEnd(int r, const wv1::RankPlacement& placement)>;

// Every rank on its own thread until all have ended. The job's cancel goes to every rank; so
// does the first failure (the others would wait for it at their next collective until the
// dist timeout).
void RunGang(std::vector<RankRun>& runs, const GangShape& g, const RankRendezvous& rdv,
             const std::string& job_id, const RankJob& run_rank,
             const engine::CancelToken& cancel) {
  std::mutex mu;
  std::condition_variable cv;
  int64_t ended = 0;
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(g.n));
  for (int r = 0; r < g.n; ++r) {
    threads.emplace_back([&, r] {
      wv1::RankPlacement placement;
      placement.set_rank(g.first + r);
      placement.set_world_size(g.world);
      placement.set_master_addr(rdv.master_addr);
      placement.set_master_port(rdv.port);
      placement.set_group_id(rdv.group);
      EngineWorker::JobEnd end =
          RunRankGuarded(g.first + r, job_id, [&] { return run_rank(r, placement); });
      std::lock_guard<std::mutex> lock(mu);
      RankRun& run = runs[static_cast<size_t>(r)];
      run.end = std::move(end);
      run.finished = ended++;
      cv.notify_all();
    });
  }
  {
    std::unique_lock<std::mutex> lock(mu);
    while (ended < g.n) {
      cv.wait_for(lock, std::chrono::milliseconds(100));
      bool stop = cancel.cancelled.load();
      for (const RankRun& run : runs) stop |= run.finished >= 0 && !Succeeded(run.end);
      if (stop) {
        for (RankRun& run : runs) run.cancel.cancelled = true;
      }
    }
  }
  for (std::thread& t : threads) t.join();
}

// The failed job's status from its cause rank's: cancelled when its caller cancelled it, else
// the cause's reason under the rank's name.
absl::Status GangFailure(const v1::Job& job, const GangShape& g, int cause_rank,
                         const absl::Status& cause, std::string cause_note,
                         const engine::CancelToken& cancel, RunOutcome* out) {
  if (cancel.cancelled.load()) {
    out->cancel_note = std::move(cause_note);
    return absl::CancelledError(absl::StrCat("cancelled while running ", g.n, " ranks"));
  }
  // The engine already names the rank in its own errors ("rank 1 of 2: ...").
  const std::string said = absl::StrCat("rank ", g.first + cause_rank, " of ", g.world, ": ");
  std::string message(cause.message());
  if (absl::StartsWith(message, said)) message = message.substr(said.size());
  if (cause.code() == absl::StatusCode::kCancelled) {
    // Not the caller's cancel: the gang's, after a peer failed waiting for this rank, which
    // was stopped and could not stop when asked. It failed the job.
    return absl::InternalError(absl::StrCat(
        RankName(job, g, cause_rank), ": ", message, "; the other ranks' collectives timed out ",
        "waiting for it (--dist-timeout); the daemon starts a fresh worker for the next job"));
  }
  return absl::Status(cause.code(), absl::StrCat(RankName(job, g, cause_rank), ": ", message));
}

// The cross-rank analysis in rank 0's profile.json, or the log line that says why not.
void AddRanksOrLogWhyNot(const v1::Job& job, const std::vector<EngineWorker::JobEnd>& ends) {
  std::vector<std::string> dirs;
  for (const EngineWorker::JobEnd& end : ends) dirs.push_back(end.done->job_dir());
  if (const std::string why = AddRanksToProfile(job, dirs); !why.empty()) {
    std::cerr << "libreyolod: job " << job.id() << ": no cross-rank analysis in its "
              << kProfileFileName << ": " << why << std::endl;
  }
}

// The job's headline numbers are the run's, not rank 0's: every rank trains its own batch, so
// the throughput is their sum (DDP's global img/s), and a synchronous step lasts as long as
// the slowest rank's. Across hosts: this host's ranks'.
void SetRunHeadline(const std::vector<EngineWorker::JobEnd>& ends, RunOutcome* out) {
  out->step_ms = 0;
  out->img_per_s = 0;
  for (const EngineWorker::JobEnd& end : ends) {
    const wv1::Done& d = *end.done;
    out->step_ms = std::max(out->step_ms, d.step_ms());
    out->img_per_s += d.img_per_s();
  }
  out->bound = ends[0].done->bound();
}

}  // namespace

int GangCauseRank(const std::vector<EngineWorker::JobEnd>& ends,
                  const std::vector<int64_t>& finished) {
  int cause = -1;
  for (int r = 0; r < static_cast<int>(ends.size()); ++r) {
    const auto i = static_cast<size_t>(r);
    if (Succeeded(ends[i])) continue;
    if (cause < 0) {
      cause = r;
      continue;
    }
    const auto c = static_cast<size_t>(cause);
    const int weight = CauseWeight(ends[i]);
    const int best = CauseWeight(ends[c]);
    if (weight != best ? weight > best : finished[i] < finished[c]) cause = r;
  }
  return cause;
}

absl::Status EngineRunner::RunRanks(const v1::Job& job, const v1::Job& resolved,
                                    const std::string& scratch, const DaemonConfig& config,
                                    const ProgressFn& progress, const engine::CancelToken& cancel,
                                    RunOutcome* out) {
  const GangShape g = GangShapeOf(job);
  const int n = g.n;
  std::vector<RankRun> runs(static_cast<size_t>(n));
  auto at = [&](int r) -> RankRun& { return runs[static_cast<size_t>(r)]; };
  // Every rank's worker, started from this thread (a device's job thread, which lives as long
  // as the daemon: a worker's parent-death signal follows the thread that started it).
  for (int r = 0; r < n; ++r) {
    absl::StatusOr<EngineWorker*> w = EnsureWorker(job.devices(r));
    if (!w.ok()) {
      return absl::Status(w.status().code(),
                          absl::StrCat(RankName(job, g, r), ": ", w.status().message()));
    }
    at(r).worker = *w;
    at(r).pid = (*w)->pid();
  }
  ASSIGN_OR_RETURN(const RankRendezvous rdv, RendezvousOf(job));
  const EngineWorker::Supervision watch = Watch(job, config);
  // Rank 0's progress is the job's (every rank runs the same steps).
  const ProgressFn none;
  RunGang(runs, g, rdv, resolved.id(), [&](int r, const wv1::RankPlacement& placement) {
    return at(r).worker->RunJob(resolved, scratch, r == 0 ? progress : none, at(r).cancel, watch,
                                placement);
  }, cancel);

  // The job's outcome (GangCauseRank); a job cancelled by its caller is cancelled. The ranks'
  // ends move here (each holds its Done, results included).
  std::vector<EngineWorker::JobEnd> ends;
  std::vector<int64_t> finished;
  for (RankRun& run : runs) {
    ends.push_back(std::move(run.end));
    finished.push_back(run.finished);
  }
  auto end_of = [&](int r) -> const EngineWorker::JobEnd& { return ends[static_cast<size_t>(r)]; };
  const int cause_rank = GangCauseRank(ends, finished);
  // Every rank's end is looked at (each death is counted and logged); the cause's is kept.
  absl::Status cause;
  std::string cause_note;
  for (int r = 0; r < n; ++r) {
    std::string note;
    absl::Status s =
        EndStatus(job, job.devices(r), at(r).pid, *at(r).worker, end_of(r), config, &note);
    if (r != cause_rank) continue;
    cause = std::move(s);
    cause_note = std::move(note);
  }
  if (cause_rank >= 0) {
    return GangFailure(job, g, cause_rank, cause, std::move(cause_note), cancel, out);
  }
  // Across hosts this daemon holds its own ranks only: `summary` of the gathered folder.
  if (!rdv.across_hosts) AddRanksOrLogWhyNot(job, ends);
  for (int r = 0; r < n; ++r) {
    RETURN_IF_ERROR(Publish(job, end_of(r).done->job_dir(), scratch, RankArtifactName(r, ""),
                            config, r == 0 ? progress : none, out));
  }
  SetRunHeadline(ends, out);
  return absl::OkStatus();
}

}  // namespace libreyolo::daemon
