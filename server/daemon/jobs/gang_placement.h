// Gang placement (issue 39 §2: one of JobManager's seams). A data-parallel job (a gang) runs on
// several device slots at once, all or nothing. Place puts its ranks on this daemon's slots at
// submission. It waits in the queue of each of its devices; when it comes first in one of them
// and no other gang is forming, it becomes the forming gang: each of its devices, once idle, is
// held for it (jumping that device's queue, so later jobs cannot starve it), and the job thread
// of the device held last starts it. One forming gang at a time means that two gangs never each
// hold a part of what the other needs (no deadlock). Not thread-safe: JobManager owns one and
// calls it under its lock; which job runs where stays JobManager's (`running` below).
#ifndef LIBREYOLO_SERVER_DAEMON_JOBS_GANG_PLACEMENT_H_
#define LIBREYOLO_SERVER_DAEMON_JOBS_GANG_PLACEMENT_H_

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "libreyolo/profiler/v1/profiler.pb.h"

namespace libreyolo::daemon {

namespace v1 = ::libreyolo::profiler::v1;

class GangPlacement {
 public:
  // Where a data-parallel `run` submitted for `device` runs: none (empty) for a single-rank
  // job, the first nproc slots of `device`'s kind among `served` (this daemon's devices, in
  // its order), or the slots it names. INVALID_ARGUMENT / FAILED_PRECONDITION naming what this
  // daemon has.
  static absl::StatusOr<std::vector<std::string>> Place(const v1::RunSpec& run,
                                                        const std::string& device,
                                                        const std::vector<std::string>& served);

  // The forming gang's id ("" when none).
  const std::string& forming() const { return forming_; }
  // Gang `id` came first in one of its devices' order: it becomes the forming gang when none
  // is. True when it is the forming gang now.
  bool Form(const std::string& id);
  // Holds `device` for gang `id`; true when each of its `devices` is now held for it and not
  // `running` a job (the caller then starts it), false when the caller must wait.
  bool Reserve(const std::string& id, const std::string& device,
               const std::vector<std::string>& devices,
               const std::function<bool(const std::string& device)>& running);
  // Whether `device` is held for gang `id`.
  bool HeldFor(const std::string& device, const std::string& id) const;
  // Gang `id` started: no gang is forming; its devices stay held until Release.
  void Started(const std::string& id);
  // Lets go of every device held for gang `id` and of its forming (it ran, or went while
  // forming). True when anything was let go (the device threads must look again).
  bool Release(const std::string& id);

 private:
  std::string forming_;
  std::map<std::string, std::string> held_;  // device -> the gang it is held for
};

}  // namespace libreyolo::daemon

#endif  // LIBREYOLO_SERVER_DAEMON_JOBS_GANG_PLACEMENT_H_
