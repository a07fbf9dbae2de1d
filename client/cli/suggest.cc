#include "client/cli/suggest.h"

#include <algorithm>


namespace libreyolo::cli {

int EditDistance(std::string_view a, std::string_view b) {
  const size_t n = a.size(), m = b.size();
  // d[i][j]: distance between a[0, i) and b[0, j); three rows are all the swap rule needs.
  std::vector<std::vector<int>> d(n + 1, std::vector<int>(m + 1, 0));
  for (size_t i = 0; i <= n; ++i) d[i][0] = static_cast<int>(i);
  for (size_t j = 0; j <= m; ++j) d[0][j] = static_cast<int>(j);
  for (size_t i = 1; i <= n; ++i) {
    for (size_t j = 1; j <= m; ++j) {
      const int cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[n][m];
}

std::optional<std::string> ClosestName(std::string_view typed,
                                       const std::vector<std::string>& candidates) {
  if (typed.empty()) return std::nullopt;
  const std::string* best = nullptr;
  int best_distance = 0;
  for (const std::string& c : candidates) {
    const int limit = std::min(typed.size(), c.size()) <= 4 ? 1 : 2;
    const int distance = EditDistance(typed, c);
    if (distance > limit || distance >= static_cast<int>(c.size())) continue;
    if (best == nullptr || distance < best_distance) {
      best = &c;
      best_distance = distance;
    }
  }
  if (best != nullptr) return *best;
  // A unique prefix: --dev for --device (not for one letter: -d is a short option's spelling).
  const std::string* prefix_of = nullptr;
  if (typed.size() < 2) return std::nullopt;
  for (const std::string& c : candidates) {
    if (c.compare(0, typed.size(), typed) != 0) continue;
    if (prefix_of != nullptr) return std::nullopt;  // ambiguous: --re for --repeat, --remote
    prefix_of = &c;
  }
  if (prefix_of != nullptr) return *prefix_of;
  return std::nullopt;
}

}  // namespace libreyolo::cli
