// Pieces shared by the parts of the daemon's configuration (daemon_config.cc: start-up and
// validation; daemon_config_file.cc: the YAML keys; daemon_config_flags.cc: the flags).
// Not an interface: include it from those three files only.
#ifndef LIBREYOLO_SERVER_DAEMON_CONFIG_DAEMON_CONFIG_INTERNAL_H_
#define LIBREYOLO_SERVER_DAEMON_CONFIG_DAEMON_CONFIG_INTERNAL_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace libreyolo::daemon::config_internal {

// A permission mode, always octal: 0660, "660", 0o660. INVALID_ARGUMENT (no message) otherwise.
absl::StatusOr<int> ParseMode(absl::string_view text);

}  // namespace libreyolo::daemon::config_internal

#endif  // LIBREYOLO_SERVER_DAEMON_CONFIG_DAEMON_CONFIG_INTERNAL_H_
