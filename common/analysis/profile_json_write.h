// profile.json: writing (ours). Above analysis: the file carries the trust assessment and the
// metric cells (common/profile/profile_json.h reads it).
#ifndef LIBREYOLO_COMMON_ANALYSIS_PROFILE_JSON_WRITE_H_
#define LIBREYOLO_COMMON_ANALYSIS_PROFILE_JSON_WRITE_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "common/profile/profile.h"

namespace libreyolo {

// Serialises with the Python LibreYOLO's keys plus ours (docs/profile-json.md).
std::string WriteProfileJson(const Profile& p);

// The profile's text with member `key` = `json` added before its closing brace; every other
// byte stays as written (numbers are not re-printed). INVALID_ARGUMENT when the text is not a
// JSON object, already has the key, or `json` is not JSON. Keys are plain names (not escaped).
absl::StatusOr<std::string> AddProfileMember(std::string text, std::string_view key,
                                             std::string_view json);

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_ANALYSIS_PROFILE_JSON_WRITE_H_
