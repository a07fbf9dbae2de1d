// "Did you mean ...?" for a mistyped flag or subcommand: the closest known name by edit
// distance (insertions, deletions, substitutions and swaps of two neighbours each cost one).
#ifndef LIBREYOLO_CLIENT_CLI_SUGGEST_H_
#define LIBREYOLO_CLIENT_CLI_SUGGEST_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace libreyolo::cli {

// The optimal-string-alignment distance between a and b (case-sensitive).
int EditDistance(std::string_view a, std::string_view b);

// The candidate closest to `typed`, when it is close enough to be what was meant: at most one
// edit for names of up to four characters, two for longer ones, or `typed` is a prefix of
// exactly one candidate (--dev for --device). Ties go to the earlier candidate; nullopt when
// nothing is close (a suggestion that is not what was meant is worse than none).
std::optional<std::string> ClosestName(std::string_view typed,
                                       const std::vector<std::string>& candidates);

}  // namespace libreyolo::cli

#endif  // LIBREYOLO_CLIENT_CLI_SUGGEST_H_
