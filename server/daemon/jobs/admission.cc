// Admission (admission.h).
#include "server/daemon/jobs/admission.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/render/terminal_text.h"
#include "server/daemon/jobs/gang_placement.h"
#include "server/daemon/jobs/job_devices.h"
#include "server/daemon/jobs/job_runner.h"

namespace libreyolo::daemon {

absl::Status Admission::CheckAccepting(bool accepting) {
  if (accepting) return absl::OkStatus();
  return absl::UnavailableError("libreyolod is shutting down; submit again after it restarts");
}

absl::Status Admission::CheckInService(const std::string& store_error) {
  if (store_error.empty()) return absl::OkStatus();
  return absl::UnavailableError(absl::StrCat(
      "libreyolod accepts no jobs: it could not record a job's state durably (", store_error,
      "); an admin must free space on the state filesystem (it resumes by itself)"));
}

absl::Status Admission::CheckDevice(const std::string& device,
                                    const std::vector<std::string>& served) {
  for (const std::string& d : served) {
    if (d == device) return absl::OkStatus();
  }
  if (device == kAttachLane) {
    return absl::FailedPreconditionError(
        "this daemon serves no attach endpoint (attach_dir): it traces no running process");
  }
  std::string known;
  bool any_gpu = false;
  for (const std::string& d : served) {
    if (d == kAttachLane) continue;  // a lane, not a device a job may name
    absl::StrAppend(&known, known.empty() ? "" : ", ", d);
    any_gpu |= !absl::StartsWith(d, "cpu");
  }
  // `--device` defaults to 0 (the seed's default): on a host without a GPU the way out is the
  // CPU, said in so many words.
  const std::string way_out = !any_gpu && !served.empty() ? "; it serves no GPU: use --device cpu"
                              : served.empty()            ? ""
                                               : absl::StrCat("; use --device ", served.front());
  return absl::InvalidArgumentError(absl::StrCat("--device (model.device): ", device,
                                                 " is not served by this daemon (it has: ", known,
                                                 ")", way_out));
}

absl::Status Admission::CheckSameRequest(const v1::Job& earlier,
                                         const v1::SubmitJobRequest& request) {
  if (earlier.request().SerializeAsString() == request.SerializeAsString()) {
    return absl::OkStatus();
  }
  return absl::AlreadyExistsError(
      absl::StrCat("request_id '", Excerpt(request.request_id()), "' was used for job ",
                   earlier.id(), " with a different request; use a new request_id"));
}

Admission::Load Admission::Count(const std::vector<const v1::Job*>& jobs, const std::string& user,
                                 const std::string& device) {
  Load load;
  for (const v1::Job* job : jobs) {
    const v1::JobState s = job->state();
    if (s == v1::JOB_STATE_QUEUED && OnDevice(*job, device)) ++load.queued_on_device;
    if (s == v1::JOB_STATE_QUEUED || s == v1::JOB_STATE_RUNNING) {
      load.active_users.insert(job->owner());
      if (job->owner() == user) ++load.user_active;
    }
  }
  return load;
}

absl::Status Admission::CheckQueueLimits(const std::string& user, const std::string& device,
                                         const Load& load, const Limits& limits) {
  if (load.queued_on_device >= limits.max_queue_length) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the queue of ", device, " is full (", load.queued_on_device,
        " jobs, limit max_queue_length ", limits.max_queue_length,
        "); wait for jobs to finish or cancel some"));
  }
  if (load.user_active >= limits.max_jobs_per_user) {
    return absl::ResourceExhaustedError(
        absl::StrCat(user, " already has ", load.user_active, " queued or running jobs (limit ",
                     "max_jobs_per_user ", limits.max_jobs_per_user, "); wait or cancel one"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> Admission::Ranks(const v1::SubmitJobRequest& request,
                                                          const std::string& device,
                                                          const std::vector<std::string>& served) {
  if (!request.has_run()) return std::vector<std::string>{};
  return GangPlacement::Place(request.run(), device, served);
}

absl::Status Admission::RefuseUnrecorded(const absl::Status& write) {
  const bool full = write.code() == absl::StatusCode::kResourceExhausted ||
                    write.code() == absl::StatusCode::kOutOfRange;  // ENOSPC, EDQUOT; EFBIG
  const std::string why = absl::StrCat(
      "the job was not accepted: libreyolod cannot record it durably (", write.message(), ")");
  return full ? absl::ResourceExhaustedError(absl::StrCat(
                    why, "; the state filesystem is full: an admin must free space there"))
              : absl::InternalError(why);
}

}  // namespace libreyolo::daemon
