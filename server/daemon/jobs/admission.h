// Admission (issue 39 §2: one of JobManager's seams): whether a submitted job is accepted, and
// each refusal's status and message. Plain functions over explicit inputs (no gRPC, no lock, no
// clock): JobManager::Submit reads its state under its lock and calls them in this order:
//   1. CheckAccepting: not draining (UNAVAILABLE: submit again after the restart);
//   2. CheckInService: every state change so far is durable (UNAVAILABLE naming the failed
//      write and the way out);
//   3. CheckDevice: the device is one this daemon serves (INVALID_ARGUMENT naming what it has;
//      FAILED_PRECONDITION for the attach lane on a daemon with no attach endpoint);
//   4. CheckSameRequest: a reused request_id came with the same request, whose job is then the
//      answer (ALREADY_EXISTS otherwise). Before the limits, so that a retried submission
//      finds its job while the queue is full;
//   5. CheckQueueLimits over Count's load: max_queue_length of the device, then
//      max_jobs_per_user (RESOURCE_EXHAUSTED);
//   6. Ranks: a data-parallel job's slots (GangPlacement::Place's refusals);
//   7. RefuseUnrecorded: the new job's record could not be written (RESOURCE_EXHAUSTED for a
//      full state filesystem, else INTERNAL).
// The request itself was validated by the service before (rpc/request_validation.h).
#ifndef LIBREYOLO_SERVER_DAEMON_JOBS_ADMISSION_H_
#define LIBREYOLO_SERVER_DAEMON_JOBS_ADMISSION_H_

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "libreyolo/profiler/v1/profiler.pb.h"
#include "server/daemon/config/daemon_config.h"

namespace libreyolo::daemon {

namespace v1 = ::libreyolo::profiler::v1;

class Admission {
 public:
  // What the job table holds at a submission, for its user and device.
  struct Load {
    int32_t queued_on_device = 0;  // queued jobs with a slot on the device (a gang on each)
    int32_t user_active = 0;       // the user's queued or running jobs
    // The users with a queued or running job: fair share's busy period (FairShare::Join).
    std::set<std::string> active_users;
  };

  // 1. `accepting` false once the drain began.
  static absl::Status CheckAccepting(bool accepting);
  // 2. `store_error`: "" while in service, else why the manager left it (the first failed write).
  static absl::Status CheckInService(const std::string& store_error);
  // 3. `device` (normalised) against `served`, this daemon's slots in its order (the attach
  //    lane among them when it serves one).
  static absl::Status CheckDevice(const std::string& device, const std::vector<std::string>& served);
  // 4. `earlier`: the job an earlier request with the same owner and request_id made.
  static absl::Status CheckSameRequest(const v1::Job& earlier, const v1::SubmitJobRequest& request);
  // 5. The load that `jobs` make for `user` submitting to `device`.
  static Load Count(const std::vector<const v1::Job*>& jobs, const std::string& user,
                    const std::string& device);
  static absl::Status CheckQueueLimits(const std::string& user, const std::string& device,
                                       const Load& load, const Limits& limits);
  // 6. The slots a data-parallel `request` runs on (rank order); empty for any other job.
  static absl::StatusOr<std::vector<std::string>> Ranks(const v1::SubmitJobRequest& request,
                                                        const std::string& device,
                                                        const std::vector<std::string>& served);
  // 7. The refusal for a new job whose record the store could not write (`write`, not OK).
  static absl::Status RefuseUnrecorded(const absl::Status& write);
};

}  // namespace libreyolo::daemon

#endif  // LIBREYOLO_SERVER_DAEMON_JOBS_ADMISSION_H_
