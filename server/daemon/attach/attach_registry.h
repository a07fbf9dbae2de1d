// Who is attachable now (issue 37 §2): every process that polls this daemon over Kineto's IPC
// fabric, keyed by its pid as the kernel told us (SO_PASSCRED, the daemon's pid namespace), with
// its owner, ancestor chain, Slurm job, command line and ranks, its last poll and its state:
// idle (its activity profiler can take a configuration), busy (its own torch.profiler runs), or
// a configuration pending. A process that stopped polling for kStalePolls intervals, or died,
// leaves the list. The attach job puts a configuration for a pid (SetPendingConfig), the
// process's next idle poll takes it (Poll), and the job learns when (Delivery, WaitForDelivery).
//
// Plain C++, no sockets: the endpoint (attach_endpoint.h) reads /proc and feeds it; time comes
// from an injected Clock (tests drive a ManualClock).
#ifndef LIBREYOLO_SERVER_DAEMON_ATTACH_ATTACH_REGISTRY_H_
#define LIBREYOLO_SERVER_DAEMON_ATTACH_ATTACH_REGISTRY_H_

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "common/time/clock.h"

namespace libreyolo::daemon::attach {

// Kineto's poll interval (ON_DEMAND_CONFIG_UPDATE_INTERVAL_SECS, default 5 s; only a base config
// file changes it).
inline constexpr std::chrono::seconds kPollInterval{5};
// A process silent for this many intervals has left.
inline constexpr int kStalePolls = 2;
// Processes registered per Unix user; a poll past it is answered empty and counted.
inline constexpr size_t kMaxProcessesPerUid = 128;

// What /proc says of a process, read once when it registers (process_facts.h).
struct ProcessFacts {
  std::vector<pid_t> ancestors;  // parent first, in the daemon's pid namespace, up to pid 1
  std::string command_line;      // arguments joined by spaces; "" when unreadable
  std::string slurm_job_id;      // SLURM_JOB_ID of its environment, "" when unset or unreadable
  std::optional<int64_t> rank, local_rank;  // RANK, LOCAL_RANK
  std::optional<int64_t> world_size;        // WORLD_SIZE (torchrun's, or a launcher's own)
  // KINETO_ONDEMAND_TRACE_DIR: the folder besides /tmp where its Kineto accepts an on-demand
  // trace path (issue 37 §4); "" when unset.
  std::string ondemand_trace_dir;
  bool environ_readable = false;
};

enum class AttachState { kIdle, kBusy, kPending };
const char* AttachStateName(AttachState state);

struct AttachableProcess {
  pid_t pid = 0;  // the kernel's (SO_PASSCRED), in the daemon's namespace
  uid_t uid = 0;
  std::vector<int32_t> reported_pids;  // the process's own chain, in its namespace
  int64_t job_id = 0;                  // the chain's Slurm job id as the process sent it
  ProcessFacts facts;
  std::string endpoint;  // the socket it polls: its user's socket dir, or "@dynolog"
  int32_t activity_bits = 0;
  int64_t first_poll_unix_ms = 0;
  int64_t last_poll_unix_ms = 0;
  int64_t polls = 0;
  AttachState state = AttachState::kIdle;
};

// One poll of a process, as the endpoint saw it.
struct PollInput {
  pid_t pid = 0;
  uid_t uid = 0;
  int32_t activity_bits = 0;
  int64_t job_id = 0;
  std::vector<int32_t> reported_pids;
  std::string endpoint;
};

struct PollOutcome {
  enum class Kind { kRegistered, kRefreshed, kCapped };
  Kind kind = Kind::kRefreshed;
  std::string config;  // what to answer: the pending configuration when delivered now, else ""
};

struct Delivery {
  pid_t pid = 0;
  int64_t delivered_unix_ms = 0;
};

class AttachRegistry {
 public:
  // `alive`: whether a pid still runs (default: kill(pid, 0)); tests give their own.
  explicit AttachRegistry(const Clock& clock, size_t max_per_uid = kMaxProcessesPerUid,
                          std::function<bool(pid_t)> alive = {});

  // A `req`. `read_facts` is called only for a process not registered yet (a pid reused by
  // another user's process counts as new). A pending configuration is handed out only when the
  // ACTIVITIES bit is set (Kineto takes none while its profiler runs).
  PollOutcome Poll(const PollInput& in, const std::function<ProcessFacts()>& read_facts);

  // Whether `pid` is registered for `uid`.
  bool IsRegistered(pid_t pid, uid_t uid) const;
  // The processes registered now (stale and dead ones removed first), by pid; all of them, or
  // those of `uid`.
  std::vector<AttachableProcess> List(std::optional<uid_t> uid = std::nullopt);
  // Processes registered with the job id `job_id` for `uid` (Kineto's `ctxt` answer).
  int32_t CountForJob(uid_t uid, int64_t job_id) const;
  size_t size() const;

  // Drops processes silent for kStalePolls intervals and those no longer alive. Returns how
  // many left.
  size_t Sweep();

  // Hands `config` to `pid` at its next idle poll. NOT_FOUND when it is not registered,
  // FAILED_PRECONDITION when a configuration is already pending for it. Returns a ticket.
  absl::StatusOr<uint64_t> SetPendingConfig(pid_t pid, std::string config);
  // Withdraws a configuration not delivered yet (false when it was, or is unknown).
  bool CancelPending(uint64_t ticket);
  // When the configuration of `ticket` was handed out; nullopt while pending (or unknown).
  std::optional<Delivery> DeliveryOf(uint64_t ticket) const;
  // Waits until `ticket` is delivered, withdrawn or `deadline` passes; the delivery or nullopt.
  std::optional<Delivery> WaitForDelivery(uint64_t ticket, Clock::SteadyTime deadline);
  // Forgets a ticket's delivery record (the job is done with it).
  void Forget(uint64_t ticket);

 private:
  struct Entry {
    AttachableProcess process;
    Clock::SteadyTime last_poll;
    std::optional<uint64_t> pending_ticket;
    std::string pending_config;
  };
  struct Ticket {
    pid_t pid = 0;
    std::optional<Delivery> delivery;
  };
  size_t CountForUid(uid_t uid) const;  // mu_ held
  size_t SweepLocked();                 // mu_ held

  const Clock& clock_;
  const size_t max_per_uid_;
  std::function<bool(pid_t)> alive_;
  mutable std::mutex mu_;
  std::condition_variable delivered_cv_;
  std::map<pid_t, Entry> processes_ ABSL_GUARDED_BY(mu_);
  std::map<uint64_t, Ticket> tickets_ ABSL_GUARDED_BY(mu_);
  uint64_t next_ticket_ ABSL_GUARDED_BY(mu_) = 1;
};

}  // namespace libreyolo::daemon::attach

#endif  // LIBREYOLO_SERVER_DAEMON_ATTACH_ATTACH_REGISTRY_H_
