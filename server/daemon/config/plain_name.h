// A name in one of the daemon's directories (models_dir, datasets_dir, images_dir): what a
// request may name there instead of a path. Used by the request checks (rpc/), the job inputs'
// resolution (jobs/) and the Python delegation (workers/), so it sits below all three.
#ifndef LIBREYOLO_SERVER_DAEMON_CONFIG_PLAIN_NAME_H_
#define LIBREYOLO_SERVER_DAEMON_CONFIG_PLAIN_NAME_H_

#include <algorithm>
#include <cstddef>
#include <string>

namespace libreyolo::daemon {

inline constexpr size_t kMaxNameBytes = 255;  // a name in one of the daemon's directories

// [A-Za-z0-9._-], not starting with '.', 1..255 bytes.
inline bool IsPlainName(const std::string& name) {
  if (name.empty() || name.size() > kMaxNameBytes || name[0] == '.') return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
  });
}

}  // namespace libreyolo::daemon

#endif  // LIBREYOLO_SERVER_DAEMON_CONFIG_PLAIN_NAME_H_
