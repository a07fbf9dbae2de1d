// What a recorded trace holds, for the profile's switch record (overhead_budget.h's
// WriteSwitchFields): a switch is recorded on only when its data is there. Torch-free,
// header-only.
#ifndef LIBREYOLO_SERVER_ENGINE_COLLECT_RECORDED_KINDS_H_
#define LIBREYOLO_SERVER_ENGINE_COLLECT_RECORDED_KINDS_H_

#include <vector>

#include "server/engine/collect/collected_trace.h"
#include "server/engine/job/overhead_budget.h"

namespace libreyolo::engine {

inline RecordedKinds RecordedKindsOf(const std::vector<CollectedEvent>& events) {
  RecordedKinds k;
  k.traced = true;
  for (const CollectedEvent& e : events) {
    if (e.kind == CollectedKind::kMemory) k.memory = true;
    if (e.kind != CollectedKind::kCpuOp) continue;
    if (!e.input_dims_json.empty()) k.shapes = true;
    if (e.flops.has_value() && *e.flops > 0) k.flops = true;
  }
  return k;
}

}  // namespace libreyolo::engine

#endif  // LIBREYOLO_SERVER_ENGINE_COLLECT_RECORDED_KINDS_H_
