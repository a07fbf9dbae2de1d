// `libreyolo profile attach` as a job (issue 37 §3-5): the runner of JOB_KIND_ATTACH jobs, on
// the daemon's "attach" lane. It traces processes that already run and poll the attach
// endpoint (attach_endpoint.h) with their own Kineto, and takes the traces into the job.
//
// The job as named stages, in this order (the house style of server/engine/job/pipeline.h):
//
//   select    the targets from the registry (SelectTargets): a polling pid is taken, a pid that
//             does not poll selects its polling descendants (the leaves; a poller whose
//             descendants poll too is a launcher, skipped), a Slurm job's, or all of the owner's;
//             on a GPU host those holding a device (a rank, not its data loader workers);
//             only the owner's processes (an admin's: anyone's); each skipped one says why
//   prepare   one drop folder for the job (external::MakeDropFolder) under the daemon's
//             /tmp/libreyolod-<uid>/, or under the traced processes' KINETO_ONDEMAND_TRACE_DIR
//             when their environment sets it and it is a directory of their user's (opened
//             without following a symlink, used through /proc/self/fd: Kineto accepts no
//             other on-demand path); the event says which
//   request   the Kineto configuration (KinetoConfigText: one PROFILE_START_TIME for every
//             target, far enough ahead that each will have polled; REQUEST_TRACE_ID = the job
//             id) set pending for each target (AttachRegistry::SetPendingConfig)
//   deliver   waits for each process's next poll ("waiting for the next poll", "delivered")
//   collect   the window (warmup, collecting), then the traces arriving in the drop folder
//             under their final names (TraceArrivals: inotify, never a poll of the directory),
//             until start + duration + margin; a process that exits meanwhile is said
//   analyse   external::AnalyseIntoJob: the traces into the job's artifacts and profile
//
// Failures are the job's, each with its exit code (common/status/exit_code.h): no process
// matches (NOT_FOUND, listing what is registered and why each was not taken: 2), every target
// busy with its own profiler (FAILED_PRECONDITION: 2), no process took the request or no trace
// arrived by the deadline (DEADLINE_EXCEEDED: 2), Kineto ignored our path (the file at its
// default /tmp/libkineto_activities_<pid>.json instead: FAILED_PRECONDITION: 2), every
// target exited mid-trace (ABORTED: 1), a trace that is not this job's (DATA_LOSS: 1).
// Nothing half-written stays in the store (TakeProducedFiles publishes all or nothing).
// Cancel withdraws configurations not delivered yet; a trace Kineto already started cannot be
// stopped (said in the cancel note).
#ifndef LIBREYOLO_SERVER_DAEMON_ATTACH_ATTACH_JOB_H_
#define LIBREYOLO_SERVER_DAEMON_ATTACH_ATTACH_JOB_H_

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/time/clock.h"
#include "libreyolo/profiler/v1/profiler.pb.h"
#include "server/daemon/attach/attach_endpoint.h"
#include "server/daemon/attach/attach_registry.h"
#include "server/daemon/config/daemon_config.h"
#include "server/daemon/jobs/job_runner.h"
#include "server/daemon/store/job_store.h"

namespace libreyolo::daemon::attach {

// Kineto's warm-up (ACTIVITIES_WARMUP_PERIOD_SECS' default, spec §1.5): a request picked up
// less than this before its PROFILE_START_TIME is dropped. Its controller acts on one-second
// ticks: kKinetoTicks more. A window with nothing on a GPU to trace asks for none
// (KinetoWarmupSecs): the warm-up is CUPTI's, and Kineto honours 0 (measured with torch 2.11).
inline constexpr std::chrono::milliseconds kKinetoWarmup{5000};
inline constexpr std::chrono::milliseconds kKinetoTicks{2000};
// A poll may come this late after its interval (the config thread's own work).
inline constexpr std::chrono::milliseconds kPollSlack{1000};
// After the window: Kineto's flush and JSON write, the rename, our inotify wake-up.
inline constexpr std::chrono::milliseconds kTraceMargin{30000};

// Who the job's owner is, as far as attaching goes: what the daemon recorded at SubmitJob
// (Job.owner_uid, Job.owner_admin: the caller's Identity, never taken from a request), not
// re-derived from the owner's name afterwards.
struct AttachOwner {
  std::string user;
  std::optional<uid_t> uid;  // nullopt: an admin who is no Unix user
  bool admin = false;
};
// The owner of `job` from its record: owner_uid (uid 0 is an admin) and owner_admin.
// PERMISSION_DENIED naming the owner when it has neither (a token user with no Unix user).
absl::StatusOr<AttachOwner> ResolveOwner(const v1::Job& job);
// Whether `user` is the name the daemon gives a Unix-socket caller of `uid` ("uid:N", or the
// uid's name in the password database): SubmitJob's check that a caller who is no admin
// attaches under its own name (a token naming another user, sent over the socket, is not).
bool IsUnixNameOf(const std::string& user, uid_t uid);

// Which processes a spec traces, from the registry's list at the job's start.
struct TargetSelection {
  std::vector<AttachableProcess> traced;    // by pid
  std::vector<v1::AttachTarget> skipped;    // each with why
};
// NOT_FOUND when nothing is traced: the message names the target asked and lists every
// registered process the owner may see with why it was not taken (or says none polls).
// FAILED_PRECONDITION when every matching process is busy with its own profiler.
// On a GPU host the processes holding a device do the work (`holds_gpu`: HoldsGpuDevice, nullopt
// unknown; null: not asked): when a matched process holds one, a matched one that holds none is
// skipped (a data loader worker, a helper, a launcher) and a holder is traced even where its
// descendants poll (a rank whose spawned data loader workers imported torch).
using GpuHolding = std::function<std::optional<bool>(pid_t)>;
absl::StatusOr<TargetSelection> SelectTargets(const v1::AttachSpec& spec,
                                              const std::vector<AttachableProcess>& registered,
                                              const AttachOwner& owner,
                                              const GpuHolding& holds_gpu = nullptr);

// The configuration handed to every target: ACTIVITIES_LOG_FILE, PROFILE_START_TIME,
// ACTIVITIES_DURATION_MSECS or ACTIVITIES_ITERATIONS (+ PROFILE_START_ITERATION=0),
// REQUEST_TRACE_ID, ACTIVITY_TYPES and the PROFILE_* switches. Lines "KEY=value\n".
struct TraceRequest {
  std::string log_file;          // <drop folder>/<job id>.json
  int64_t start_unix_ms = 0;     // PROFILE_START_TIME; 0 = Kineto's own (pickup + warm-up)
  std::string trace_id;          // REQUEST_TRACE_ID: the job id
  // ACTIVITIES_WARMUP_PERIOD_SECS; nullopt: not sent (Kineto's default, kKinetoWarmup).
  std::optional<int> warmup_s = std::nullopt;
};
std::string KinetoConfigText(const v1::AttachSpec& spec, const TraceRequest& request);
// The window asked (duration_ms, else the default); iteration mode has none.
int64_t AttachDurationMs(const v1::AttachSpec& spec);
// A traced process as the job records it (Job.attach_targets).
v1::AttachTarget TracedTarget(const AttachableProcess& p);

// The warm-up a duration window asks of Kineto: 0 when it has nothing on a GPU to trace (no
// "cuda" among the activities asked, or `any_gpu` false: no target holds a GPU device now);
// nullopt (Kineto's 5 s) otherwise, and in iteration mode (warm-up counted in iterations).
std::optional<int> KinetoWarmupSecs(const v1::AttachSpec& spec, bool any_gpu);

// The shared start: late enough that every target has polled (its last poll + the poll
// interval + kPollSlack) and warmed up (`warmup` + kKinetoTicks).
int64_t SharedStartUnixMs(const std::vector<AttachableProcess>& targets, int64_t now_unix_ms,
                          std::chrono::milliseconds warmup = kKinetoWarmup);

// `<job id>_<pid>.json`: the name Kineto gives the trace of `pid` for ACTIVITIES_LOG_FILE
// <drop>/<job id>.json.
std::string TraceFileName(const std::string& job_id, pid_t pid);

// The traces arriving in a drop folder: inotify on the folder (IN_MOVED_TO, IN_CLOSE_WRITE),
// started before any configuration is handed out so no arrival is missed.
class TraceArrivals {
 public:
  static absl::StatusOr<std::unique_ptr<TraceArrivals>> Watch(const std::string& dir);
  ~TraceArrivals();
  TraceArrivals(const TraceArrivals&) = delete;
  TraceArrivals& operator=(const TraceArrivals&) = delete;

  // Waits until every name of `expected` has arrived under that final name (a `.tmp` being
  // written does not count), `stop()` turns true, or `deadline` (steady) passes, checking
  // `stop` every `tick`. Returns the names arrived so far (of all ever seen, those expected).
  std::vector<std::string> WaitFor(const std::vector<std::string>& expected,
                                   std::chrono::steady_clock::time_point deadline,
                                   const std::function<bool()>& stop,
                                   std::chrono::milliseconds tick = std::chrono::milliseconds(200));

 private:
  explicit TraceArrivals(int fd, int wd) : fd_(fd), wd_(wd) {}
  void Drain(int timeout_ms);
  int fd_ = -1;
  int wd_ = -1;
  std::vector<std::string> arrived_;
};

struct AttachRun;  // one job's state across its stages (attach_job.cc)

class AttachJobRunner : public JobRunner {
 public:
  AttachJobRunner(AttachEndpoint* endpoint, JobStore* store, const LiveConfig& config,
                  const Clock& clock = Clock::Real());

  RunOutcome Run(const v1::Job& job, const ProgressFn& progress,
                 const engine::CancelToken& cancel) override;
  std::string ToolFor(const v1::Job& job) const override;  // kToolKineto
  std::string DescribeDevice(const std::string& device) const override;

  // Where the drop folders go when the process names no KINETO_ONDEMAND_TRACE_DIR:
  // /tmp/libreyolod-<daemon uid> (tests: their own temp dir; it must be under /tmp/ for Kineto).
  void set_drop_root(std::string root) { drop_root_ = std::move(root); }
  // The margin after the window (tests shorten it).
  void set_trace_margin(std::chrono::milliseconds margin) { margin_ = margin; }

 private:
  // The stages, in order (the header's comment); each a status the job fails with.
  absl::Status Select(AttachRun& run) const;
  absl::Status Prepare(AttachRun& run) const;
  absl::Status Request(AttachRun& run) const;
  absl::Status Deliver(AttachRun& run) const;
  absl::Status Collect(AttachRun& run) const;
  absl::Status Analyse(AttachRun& run, RunOutcome* out) const;
  absl::Status NothingWritten(const AttachRun& run, int64_t end_ms) const;
  void RecordTargets(const AttachRun& run, RunOutcome* out) const;

  AttachEndpoint* endpoint_;
  JobStore* store_;
  const LiveConfig& config_;
  const Clock& clock_;
  std::string drop_root_;
  std::chrono::milliseconds margin_ = kTraceMargin;
};

}  // namespace libreyolo::daemon::attach

#endif  // LIBREYOLO_SERVER_DAEMON_ATTACH_ATTACH_JOB_H_
