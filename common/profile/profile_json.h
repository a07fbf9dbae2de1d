// profile.json: reading (ours and the Python LibreYOLO's). Writing (ours) is
// common/analysis/profile_json_write.h: the file carries analysis (trust, metric cells).
#ifndef LIBREYOLO_COMMON_PROFILE_PROFILE_JSON_H_
#define LIBREYOLO_COMMON_PROFILE_PROFILE_JSON_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "common/profile/profile.h"

namespace libreyolo {

// Parses a profile.json / profile_repeat.json. Unknown keys are ignored; missing optional keys
// stay empty (shown as n/a). INVALID_ARGUMENT for bad JSON, a wrong schema, or a key holding a
// value of the wrong type (the message names the key). `what` names the source in messages.
absl::StatusOr<Profile> ReadProfileJson(std::string_view text, const std::string& what);

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_PROFILE_PROFILE_JSON_H_
