// `summary`: the headline numbers of one profile, verdict first.
#ifndef LIBREYOLO_COMMON_READERS_SUMMARY_VIEW_H_
#define LIBREYOLO_COMMON_READERS_SUMMARY_VIEW_H_

#include <string>

#include "common/profile/profile.h"

namespace libreyolo {

struct SummaryView {
  std::string source;   // the path or job the profile came from
  Profile profile;      // trimmed: top kernels only, no op tables
  bool unreliable = false;  // taken under memory pressure
  size_t top_kernels = 8;
};

SummaryView BuildSummary(const Profile& p, const std::string& source);
std::string RenderSummaryText(const SummaryView& v);
std::string RenderSummaryJson(const SummaryView& v);

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_READERS_SUMMARY_VIEW_H_
