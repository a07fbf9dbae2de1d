// SubmitJob's field checks: ranges, enum values, sizes and limits, with INVALID_ARGUMENT (or
// RESOURCE_EXHAUSTED for a configured limit) naming the field. Also decides whether a request
// may name paths on this host (private daemons only, for a caller with the daemon's uid).
#ifndef LIBREYOLO_SERVER_DAEMON_REQUEST_VALIDATION_H_
#define LIBREYOLO_SERVER_DAEMON_REQUEST_VALIDATION_H_

#include <string>

#include "absl/status/status.h"
#include "libreyolo/profiler/v1/profiler.pb.h"
#include "server/daemon/auth.h"
#include "server/daemon/daemon_config.h"

namespace libreyolo::daemon {

namespace v1 = ::libreyolo::profiler::v1;

// A file or directory name in one of the daemon's directories: [A-Za-z0-9._-], not starting
// with '.', at most 255 bytes.
bool IsPlainName(const std::string& name);

// True when `who` may name local paths: the daemon allows it and the caller is on the Unix
// socket with the daemon's own uid.
bool MayNameLocalPaths(const DaemonConfig& config, const Identity& who);

// Validates a SubmitJob request. `device` receives the normalised device ("cpu", "cuda:0").
absl::Status ValidateSubmit(const v1::SubmitJobRequest& r, const DaemonConfig& config,
                            const Identity& who, std::string* device);

// After ValidateSubmit: the named weights (other than the default name, which falls back to a
// seeded random initialisation), dataset and image source exist in the daemon's directories, or
// at the caller's paths on a private daemon. NOT_FOUND naming what was looked for.
absl::Status CheckInputsExist(const v1::SubmitJobRequest& r, const DaemonConfig& config);

}  // namespace libreyolo::daemon

#endif  // LIBREYOLO_SERVER_DAEMON_REQUEST_VALIDATION_H_
