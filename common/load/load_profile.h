// Loads whatever a reader was given: profile.json, profile_repeat.json, or a Chrome trace.
#ifndef LIBREYOLO_COMMON_LOAD_LOAD_PROFILE_H_
#define LIBREYOLO_COMMON_LOAD_LOAD_PROFILE_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "common/profile/profile.h"

namespace libreyolo {

// A file whose top-level "schema" starts with "libreyolo.profile.analysis" is read as a profile;
// anything else is analysed as a Chrome trace on the fly. NOT_FOUND for a missing file (exit 2);
// INVALID_ARGUMENT / DATA_LOSS for content that cannot be analysed (exit 1).
absl::StatusOr<Profile> LoadProfile(const std::string& path);

// The Chrome trace behind `p`, loaded from `input`: the input itself when it is a trace, else
// the profile's "trace" (absolute, relative to the profile's folder, its file name in that
// folder, or relative to the working directory). Empty when there is none at hand, with the
// reason and the way out in `*why_not`.
std::optional<std::string> ProfileTracePath(const std::string& input, const Profile& p,
                                            std::string* why_not);

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_LOAD_LOAD_PROFILE_H_
