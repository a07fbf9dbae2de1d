// The module scopes' ranges as the collectors see them (model/module_scope.h opens them): user
// annotations named "nn.Module: <path>". Torch-free, header-only.
#ifndef LIBREYOLO_SERVER_ENGINE_COLLECT_MODULE_SCOPE_EVENTS_H_
#define LIBREYOLO_SERVER_ENGINE_COLLECT_MODULE_SCOPE_EVENTS_H_

#include <algorithm>
#include <string_view>
#include <vector>

#include "server/engine/collect/collected_trace.h"

namespace libreyolo::engine {

// The range name's prefix; the readers (common/analysis/module_table.h) key on it.
inline constexpr std::string_view kModuleScopePrefix = "nn.Module: ";

// Whether `events` hold at least one module scope: the profile's with_modules says true only
// then ("a switch the profile says was on must have produced its data").
inline bool HoldsModuleScopes(const std::vector<CollectedEvent>& events) {
  return std::any_of(events.begin(), events.end(), [](const CollectedEvent& e) {
    return e.kind == CollectedKind::kUserAnnotation && e.name.starts_with(kModuleScopePrefix);
  });
}

}  // namespace libreyolo::engine

#endif  // LIBREYOLO_SERVER_ENGINE_COLLECT_MODULE_SCOPE_EVENTS_H_
