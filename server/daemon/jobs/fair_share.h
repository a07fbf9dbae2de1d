// Fair share of device time across users (issue 39 §2: one of JobManager's seams). It keeps the
// device time (ms) each user's finished jobs used within the current busy period and the order
// in which users last started a job, and from those picks the order of a device's queue: the
// user who has used the least goes next (ties: the one who started least recently, then the
// earliest job); within a user, priority first, then submission order. Not thread-safe:
// JobManager owns one and calls it under its lock. It knows no job records, devices or clocks:
// the running jobs' time so far comes in through `usage`, a restart's past runs as PastRun rows.
#ifndef LIBREYOLO_SERVER_DAEMON_JOBS_FAIR_SHARE_H_
#define LIBREYOLO_SERVER_DAEMON_JOBS_FAIR_SHARE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace libreyolo::daemon {

class FairShare {
 public:
  // What a queued job is expected to cost before any job has finished, for projected turns.
  static constexpr int64_t kDefaultRunMs = 1000;

  // A user's device time so far: Used(user) plus what its running jobs have used.
  using UsageFn = std::function<int64_t(const std::string& user)>;

  // A queued job, for Order.
  struct Queued {
    std::string user;
    int32_t priority = 0;
    int64_t submit_order = 0;
  };
  // A job that ran, for Rebuild: its wall-clock start and finish (which jobs fall in the busy
  // period), the time it ran on the monotonic clock, and how many device slots it held.
  struct PastRun {
    std::string user;
    int64_t start_unix_ms = 0;
    int64_t finish_unix_ms = 0;
    int64_t ran_ms = 0;
    int64_t slots = 1;
  };

  // Device time `user`'s finished jobs used in this busy period (0 for one not seen).
  int64_t Used(const std::string& user) const;

  // A job of `user` is submitted while `active` (the users with a queued or running job) are
  // in the busy period. None: the busy period is over and the slate is wiped. A user who joins
  // one starts level with the least served of the others (time spent away is not banked).
  void Join(const std::string& user, const std::set<std::string>& active, const UsageFn& usage);
  // A job of `user` started (the next tie-breaking tick).
  void Started(const std::string& user);
  // A job of `user` ran `ran_ms` on `slots` device slots (0 slots: the attach lane, which holds
  // no device and is billed nothing); its run counts for the mean run either way.
  void Finished(const std::string& user, int64_t ran_ms, int64_t slots);
  // After a restart: the busy period that is still going on began no later than
  // `busy_since_unix_ms` (the oldest queued job's submission; INT64_MAX when nothing is queued,
  // which leaves every user level). Each run in it counts for its user, ran_ms x slots; a run
  // that started before it counts the part after, at most ran_ms.
  void Rebuild(int64_t busy_since_unix_ms, const std::vector<PastRun>& runs);

  // The order in which `queued` (one device's queued jobs) will run, as indices into it. Turns
  // after the first are projected with the mean finished run (kDefaultRunMs before any).
  std::vector<size_t> Order(const std::vector<Queued>& queued, const UsageFn& usage) const;

  int64_t MeanRunMs() const;

 private:
  std::map<std::string, int64_t> used_ms_;
  std::map<std::string, int64_t> last_start_;  // user -> tick of its latest start
  int64_t starts_ = 0;
  int64_t finished_runs_ = 0;
  int64_t finished_run_ms_ = 0;
};

}  // namespace libreyolo::daemon

#endif  // LIBREYOLO_SERVER_DAEMON_JOBS_FAIR_SHARE_H_
