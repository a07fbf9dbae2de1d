// A job's inputs, resolved by the daemon before the engine sees the job: the weights and the
// image source as paths (plain names in the daemon's models/images directories, the default
// weights name to the models directory's copy when there is one), inline images written into
// the job's scratch directory, and the daemon's CPU thread default. What comes out is a job
// the engine runs as it is, wherever it runs (engine_spec.h maps it to the engine's options).
#ifndef LIBREYOLO_SERVER_DAEMON_JOBS_JOB_INPUTS_H_
#define LIBREYOLO_SERVER_DAEMON_JOBS_JOB_INPUTS_H_

#include <string>

#include "absl/status/statusor.h"
#include "libreyolo/profiler/v1/profiler.pb.h"
#include "server/daemon/config/daemon_config.h"

namespace libreyolo::daemon {

namespace v1 = ::libreyolo::profiler::v1;

// UNAVAILABLE when an inline image cannot be written into `scratch`. The returned job's
// request carries no inline image bytes (they are files under <scratch>/input/ now).
absl::StatusOr<v1::Job> ResolveJobInputs(const v1::Job& job, const DaemonConfig& config,
                                         const std::string& scratch);

}  // namespace libreyolo::daemon

#endif  // LIBREYOLO_SERVER_DAEMON_JOBS_JOB_INPUTS_H_
