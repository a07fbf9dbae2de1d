#include "common/status/exit_code.h"

namespace libreyolo {

int ExitCodeForStatus(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kOk:
      return kExitOk;
    case absl::StatusCode::kOutOfRange:
      return kExitNoProfile;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kAlreadyExists:
    case absl::StatusCode::kPermissionDenied:
    case absl::StatusCode::kUnauthenticated:
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kResourceExhausted:
      return kExitUsage;
    default:
      return kExitAnalysisFailed;
  }
}

int DaemonExitCodeForStartStatus(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kAlreadyExists:
      return kDaemonExitInUse;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kPermissionDenied:
    case absl::StatusCode::kOutOfRange:
      return kDaemonExitConfig;
    default:
      return kDaemonExitUnexpected;
  }
}

}  // namespace libreyolo
