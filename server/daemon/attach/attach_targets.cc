// The attach job's pure decisions (attach_job.h): whose job it is, which processes it traces,
// and the configuration Kineto is handed. No sockets, no files.
#include <pwd.h>

#include <algorithm>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/render/terminal_text.h"
#include "wire/job_spec/job_defaults.h"
#include "server/daemon/attach/attach_job.h"

namespace libreyolo::daemon::attach {
namespace {

// Processes one job traces at most (AttachSpec.pids' bound, applied to every target).
constexpr size_t kMaxTraced = jobspec::bounds::kMaxAttachPids;
constexpr size_t kCommandLineBytes = 256;

std::optional<std::string> NameOfUid(uid_t uid) {
  std::vector<char> buf(16384);
  struct passwd pw {};
  struct passwd* found = nullptr;
  if (::getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) != 0 || found == nullptr) {
    return std::nullopt;
  }
  return std::string(found->pw_name);
}

bool Visible(const AttachableProcess& p, const AttachOwner& owner) {
  return owner.admin || (owner.uid.has_value() && p.uid == *owner.uid);
}

bool HasAncestor(const AttachableProcess& p, pid_t ancestor) {
  return std::find(p.facts.ancestors.begin(), p.facts.ancestors.end(), ancestor) !=
         p.facts.ancestors.end();
}

v1::AttachTarget TargetOf(const AttachableProcess& p, bool traced, std::string reason) {
  v1::AttachTarget t;
  t.set_pid(static_cast<int32_t>(p.pid));
  t.set_traced(traced);
  t.set_reason(std::move(reason));
  if (p.facts.rank) t.set_rank(*p.facts.rank);
  t.set_command_line(Excerpt(p.facts.command_line, kCommandLineBytes));
  return t;
}

std::string Describe(const AttachableProcess& p) {
  std::string out = absl::StrCat(p.pid);
  if (!p.facts.command_line.empty()) absl::StrAppend(&out, " (", Excerpt(p.facts.command_line), ")");
  return out;
}

std::string TargetText(const v1::AttachSpec& spec) {
  if (spec.all()) return "--all";
  if (!spec.slurm_job_id().empty()) return absl::StrCat("--slurm-job ", spec.slurm_job_id());
  return absl::StrCat("--pid ", absl::StrJoin(spec.pids(), ","));
}

// The registered processes the spec names, before launchers and states are weighed; a pid that
// names nothing the owner may trace is a line in `unmatched`.
std::vector<const AttachableProcess*> Matching(const v1::AttachSpec& spec,
                                               const std::vector<AttachableProcess>& registered,
                                               const AttachOwner& owner,
                                               std::vector<std::string>* unmatched) {
  std::vector<const AttachableProcess*> out;
  std::set<pid_t> seen;
  auto take = [&](const AttachableProcess& p) {
    if (seen.insert(p.pid).second) out.push_back(&p);
  };
  if (spec.all() || !spec.slurm_job_id().empty()) {
    for (const AttachableProcess& p : registered) {
      if (!Visible(p, owner)) continue;
      if (spec.all() || p.facts.slurm_job_id == spec.slurm_job_id() ||
          (p.facts.slurm_job_id.empty() && p.job_id != 0 &&
           absl::StrCat(p.job_id) == spec.slurm_job_id())) {
        take(p);
      }
    }
    return out;
  }
  for (const int32_t pid : spec.pids()) {
    bool any = false;
    for (const AttachableProcess& p : registered) {
      if (p.pid != pid && !HasAncestor(p, pid)) continue;
      if (!Visible(p, owner)) {
        if (p.pid == pid) {
          unmatched->push_back(absl::StrCat("process ", pid, " belongs to another user (uid ", p.uid,
                                            "): only its owner or an admin may attach to it"));
          any = true;
        }
        continue;
      }
      take(p);
      any = true;
    }
    if (!any) {
      unmatched->push_back(absl::StrCat("process ", pid,
                                        " does not poll this daemon and no process under it does"));
    }
  }
  return out;
}

// Why a registered process the owner may see was not taken by `spec`.
std::string WhyNotMatched(const v1::AttachSpec& spec, const AttachableProcess& p) {
  if (!spec.slurm_job_id().empty()) {
    return p.facts.slurm_job_id.empty() && p.job_id == 0
               ? "not in a Slurm job"
               : absl::StrCat("in Slurm job ",
                              p.facts.slurm_job_id.empty() ? absl::StrCat(p.job_id)
                                                           : p.facts.slurm_job_id);
  }
  return absl::StrCat("neither ", absl::StrJoin(spec.pids(), ", "), " nor under it");
}

absl::Status NoMatch(const v1::AttachSpec& spec, const std::vector<AttachableProcess>& registered,
                     const AttachOwner& owner, const std::vector<std::string>& unmatched,
                     const std::vector<v1::AttachTarget>& skipped) {
  std::vector<std::string> lines = unmatched;
  std::set<int32_t> said;
  for (const v1::AttachTarget& t : skipped) {
    lines.push_back(absl::StrCat(t.pid(), ": ", t.reason()));
    said.insert(t.pid());
  }
  size_t others = 0;
  for (const AttachableProcess& p : registered) {
    if (!Visible(p, owner)) {
      ++others;
    } else if (said.count(p.pid) == 0) {
      lines.push_back(absl::StrCat(Describe(p), ": ", WhyNotMatched(spec, p)));
    }
  }
  std::string msg = absl::StrCat("no process to trace for ", TargetText(spec));
  if (registered.empty()) {
    absl::StrAppend(&msg, ": no process polls this daemon; start yours with the environment "
                          "`libreyolo profile attach --env` prints, then `--list` shows it");
  } else {
    if (!lines.empty()) absl::StrAppend(&msg, ": ", absl::StrJoin(lines, "; "));
    if (others > 0 && !owner.admin) {
      absl::StrAppend(&msg, lines.empty() ? ": " : "; ", others,
                      " process(es) of other users poll too (not yours to attach)");
    }
  }
  return absl::NotFoundError(msg);
}

}  // namespace

absl::StatusOr<AttachOwner> ResolveOwner(const v1::Job& job) {
  AttachOwner out;
  out.user = job.owner();
  out.admin = job.owner_admin();
  if (job.has_owner_uid() && job.owner_uid() >= 0) out.uid = static_cast<uid_t>(job.owner_uid());
  if (out.uid && *out.uid == 0) out.admin = true;
  if (!out.uid && !out.admin) {
    return absl::PermissionDeniedError(absl::StrCat(
        "the job's owner ", Excerpt(job.owner()), " has no Unix user: only a process's owner (or "
        "an admin) may attach; attach over the daemon's Unix socket as the process's user, or "
        "ask an admin"));
  }
  return out;
}

bool IsUnixNameOf(const std::string& user, uid_t uid) {
  if (user == absl::StrCat("uid:", uid)) return true;
  const std::optional<std::string> name = NameOfUid(uid);
  return name.has_value() && *name == user;
}

namespace {

// Which matched processes hold a GPU device (only when `holds_gpu` is given): each one's answer,
// and the pids that hold one.
struct GpuView {
  std::map<pid_t, std::optional<bool>> of;
  std::vector<pid_t> holders;
  std::optional<bool> Of(pid_t pid) const {
    const auto it = of.find(pid);
    return it == of.end() ? std::nullopt : it->second;
  }
};

GpuView ViewGpus(const std::vector<const AttachableProcess*>& matching, const GpuHolding& holds_gpu) {
  GpuView view;
  if (!holds_gpu) return view;
  for (const AttachableProcess* p : matching) {
    const std::optional<bool> h = holds_gpu(p->pid);
    view.of[p->pid] = h;
    if (h.value_or(false)) view.holders.push_back(p->pid);
  }
  return view;
}

}  // namespace

absl::StatusOr<TargetSelection> SelectTargets(const v1::AttachSpec& spec,
                                              const std::vector<AttachableProcess>& registered,
                                              const AttachOwner& owner,
                                              const GpuHolding& holds_gpu) {
  std::vector<std::string> unmatched;
  const std::vector<const AttachableProcess*> matching =
      Matching(spec, registered, owner, &unmatched);
  TargetSelection out;
  // A poller whose polling descendants were matched too is a launcher (torchrun, a shell that
  // imported torch): the leaves do the work.
  std::map<pid_t, std::vector<pid_t>> below;
  for (const AttachableProcess* p : matching) {
    for (const AttachableProcess* q : matching) {
      if (q != p && HasAncestor(*q, p->pid)) below[p->pid].push_back(q->pid);
    }
  }
  // On a GPU host, those that hold a device do the work, launcher or not.
  const GpuView gpu = ViewGpus(matching, holds_gpu);
  const bool prefer_gpu = !gpu.holders.empty();
  size_t busy = 0;
  size_t not_workers = 0;  // launchers and, on a GPU host, processes holding no device
  for (const AttachableProcess* p : matching) {
    std::string why;
    const std::optional<bool> on_gpu = gpu.Of(p->pid);
    const auto launched = below.find(p->pid);
    if (launched != below.end() && !(prefer_gpu && on_gpu == true)) {
      why = absl::StrCat("a launcher: its descendants ", absl::StrJoin(launched->second, ", "),
                         " poll (the leaves are traced)");
      ++not_workers;
    } else if (prefer_gpu && on_gpu == false) {
      why = absl::StrCat("holds no GPU device while ", absl::StrJoin(gpu.holders, ", "),
                         " hold(s) one (a data loader worker or a helper, not the work on the GPU)");
      ++not_workers;
    } else if (p->state == AttachState::kBusy) {
      why = "busy: its own torch.profiler runs, and Kineto takes no on-demand request meanwhile";
      ++busy;
    } else if (p->state == AttachState::kPending) {
      why = "another trace request is pending for it (another attach job)";
    } else if (!out.traced.empty() && p->uid != out.traced.front().uid) {
      why = absl::StrCat("another user's (uid ", p->uid, ") than process ", out.traced.front().pid,
                         "'s: attach each user's processes in a job of its own");
    } else if (out.traced.size() >= kMaxTraced) {
      why = absl::StrCat("past the ", kMaxTraced, " processes one job traces");
    }
    if (why.empty()) {
      out.traced.push_back(*p);
    } else {
      out.skipped.push_back(TargetOf(*p, false, std::move(why)));
    }
  }
  if (!out.traced.empty()) return out;
  if (busy > 0 && busy + not_workers == matching.size()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "every process ", TargetText(spec), " selects is busy with its own torch.profiler (",
        absl::StrJoin(out.skipped, ", ",
                      [](std::string* s, const v1::AttachTarget& t) { absl::StrAppend(s, t.pid()); }),
        "): Kineto takes no on-demand request while it runs; attach when it has stopped"));
  }
  return NoMatch(spec, registered, owner, unmatched, out.skipped);
}

v1::AttachTarget TracedTarget(const AttachableProcess& p) { return TargetOf(p, true, ""); }

int64_t AttachDurationMs(const v1::AttachSpec& spec) {
  return spec.has_duration_ms() ? spec.duration_ms() : jobspec::defaults::kAttachDurationMs;
}

std::string KinetoConfigText(const v1::AttachSpec& spec, const TraceRequest& request) {
  std::vector<std::string> lines;
  lines.push_back(absl::StrCat("ACTIVITIES_LOG_FILE=", request.log_file));
  if (spec.has_iterations()) {
    // The window starts at the next step of each process (ranks step together).
    lines.push_back("PROFILE_START_ITERATION=0");
    lines.push_back("PROFILE_START_ITERATION_ROUNDUP=1");
    lines.push_back(absl::StrCat("ACTIVITIES_ITERATIONS=", spec.iterations()));
  } else {
    lines.push_back(absl::StrCat("PROFILE_START_TIME=", request.start_unix_ms));
    lines.push_back(absl::StrCat("ACTIVITIES_DURATION_MSECS=", AttachDurationMs(spec)));
    if (request.warmup_s) {
      lines.push_back(absl::StrCat("ACTIVITIES_WARMUP_PERIOD_SECS=", *request.warmup_s));
    }
  }
  lines.push_back(absl::StrCat("REQUEST_TRACE_ID=", request.trace_id));
  // Kineto's activity types: the CPU side (ops, annotations) and, with "cuda", CUPTI's.
  std::vector<std::string> types;
  const auto& asked = spec.profiler().activities();
  const bool cpu = asked.empty() || std::find(asked.begin(), asked.end(), "cpu") != asked.end();
  const bool cuda = asked.empty() || std::find(asked.begin(), asked.end(), "cuda") != asked.end();
  if (cpu) types.insert(types.end(), {"cpu_op", "user_annotation", "python_function"});
  if (cuda) {
    types.insert(types.end(), {"gpu_user_annotation", "gpu_memcpy", "gpu_memset", "kernel",
                               "cuda_runtime", "cuda_driver"});
  }
  lines.push_back(absl::StrCat("ACTIVITY_TYPES=", absl::StrJoin(types, ",")));
  const v1::ProfilerOptions& o = spec.profiler();
  auto flag = [&](const char* key, bool on) {
    if (on) lines.push_back(absl::StrCat(key, "=true"));
  };
  flag("PROFILE_REPORT_INPUT_SHAPES", o.has_record_shapes() && o.record_shapes());
  flag("PROFILE_PROFILE_MEMORY", o.has_profile_memory() && o.profile_memory());
  flag("PROFILE_WITH_STACK", o.with_stack());
  flag("PROFILE_WITH_FLOPS", o.has_with_flops() && o.with_flops());
  flag("PROFILE_WITH_MODULES", o.has_with_modules() && o.with_modules());
  return absl::StrCat(absl::StrJoin(lines, "\n"), "\n");
}

std::optional<int> KinetoWarmupSecs(const v1::AttachSpec& spec, bool any_gpu) {
  if (spec.has_iterations()) return std::nullopt;
  const auto& asked = spec.profiler().activities();
  const bool cuda = asked.empty() || std::find(asked.begin(), asked.end(), "cuda") != asked.end();
  if (cuda && any_gpu) return std::nullopt;
  return 0;
}

int64_t SharedStartUnixMs(const std::vector<AttachableProcess>& targets, int64_t now_unix_ms,
                          std::chrono::milliseconds warmup) {
  const int64_t poll = std::chrono::milliseconds(kPollInterval).count();
  // Each target's next poll is due one interval after its last (kPollSlack for its jitter);
  // Kineto then needs its warm-up before the start, or it drops the request.
  int64_t last_pickup = now_unix_ms;
  for (const AttachableProcess& p : targets) {
    last_pickup = std::max(last_pickup, std::max(p.last_poll_unix_ms, now_unix_ms - poll) + poll);
  }
  return last_pickup + kPollSlack.count() + warmup.count() + kKinetoTicks.count();
}

std::string TraceFileName(const std::string& job_id, pid_t pid) {
  return absl::StrCat(job_id, "_", pid, ".json");
}

}  // namespace libreyolo::daemon::attach
