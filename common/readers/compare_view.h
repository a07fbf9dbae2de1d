// Text and JSON renderings of `compare` (the struct is CompareResult, common/analysis).
#ifndef LIBREYOLO_COMMON_READERS_COMPARE_VIEW_H_
#define LIBREYOLO_COMMON_READERS_COMPARE_VIEW_H_

#include <string>

#include "common/analysis/compare.h"

namespace libreyolo {

std::string RenderCompareText(const CompareResult& r);
std::string RenderCompareJson(const CompareResult& r);

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_READERS_COMPARE_VIEW_H_
