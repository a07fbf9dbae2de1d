// Device slots: their names as the daemon writes them, and the slots a job holds (issue 39 §2:
// the one copy that the job table, admission, gang placement, request validation and the
// daemon's start-up read; NormaliseDevice lived in job_manager.h, which made gang_placement.cc
// and job_manager.h include each other).
#ifndef LIBREYOLO_SERVER_DAEMON_JOBS_JOB_DEVICES_H_
#define LIBREYOLO_SERVER_DAEMON_JOBS_JOB_DEVICES_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "libreyolo/profiler/v1/profiler.pb.h"

namespace libreyolo::daemon {

namespace v1 = ::libreyolo::profiler::v1;

// "cpu" / "cpu:0" -> "cpu"; "cpu:N" (0 < N < 64) -> "cpu:N", a further CPU slot; "0" /
// "cuda:0" -> "cuda:0" (case-insensitive); anything else INVALID_ARGUMENT naming the forms.
absl::StatusOr<std::string> NormaliseDevice(const std::string& device);

// The device slots a job runs on: a data-parallel job's devices (rank order), else its device.
std::vector<std::string> JobDevices(const v1::Job& job);
// Whether `device` is one of JobDevices(job).
bool OnDevice(const v1::Job& job, const std::string& device);

}  // namespace libreyolo::daemon

#endif  // LIBREYOLO_SERVER_DAEMON_JOBS_JOB_DEVICES_H_
