// profile.json: reading (ours and the Python LibreYOLO's) and writing (ours).
#ifndef LIBREYOLO_COMMON_PROFILE_PROFILE_JSON_H_
#define LIBREYOLO_COMMON_PROFILE_PROFILE_JSON_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "common/profile/profile.h"

namespace libreyolo {

// Serialises with the Python LibreYOLO's keys plus ours (docs/profile-json.md).
std::string WriteProfileJson(const Profile& p);

// Parses a profile.json / profile_repeat.json. Unknown keys are ignored; missing optional keys
// stay empty (shown as n/a). INVALID_ARGUMENT for bad JSON, a wrong schema, or a key holding a
// value of the wrong type (the message names the key). `what` names the source in messages.
absl::StatusOr<Profile> ReadProfileJson(std::string_view text, const std::string& what);

// The profile's text with member `key` = `json` added before its closing brace; every other
// byte stays as written (numbers are not re-printed). INVALID_ARGUMENT when the text is not a
// JSON object, already has the key, or `json` is not JSON. Keys are plain names (not escaped).
absl::StatusOr<std::string> AddProfileMember(std::string text, std::string_view key,
                                             std::string_view json);

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_PROFILE_PROFILE_JSON_H_
