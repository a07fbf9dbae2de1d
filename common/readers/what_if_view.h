// Text and JSON renderings of `what-if` (the struct is WhatIfResult, common/analysis).
#ifndef LIBREYOLO_COMMON_READERS_WHAT_IF_VIEW_H_
#define LIBREYOLO_COMMON_READERS_WHAT_IF_VIEW_H_

#include <string>

#include "common/analysis/what_if.h"

namespace libreyolo {

std::string RenderWhatIfText(const WhatIfResult& r);
std::string RenderWhatIfJson(const WhatIfResult& r);

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_READERS_WHAT_IF_VIEW_H_
