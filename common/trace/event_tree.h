// Per-thread nesting of CPU-side events: which span encloses which.
#ifndef LIBREYOLO_COMMON_TRACE_EVENT_TREE_H_
#define LIBREYOLO_COMMON_TRACE_EVENT_TREE_H_

#include <cstdint>
#include <vector>

#include "common/trace/trace_data.h"

namespace libreyolo {

// Nodes are the CPU spans (cpu_op, annotation, runtime) and the instants that need a parent
// (memory instants, flow starts). Sorted by (thread, ts, longer first), a node's parent is the
// innermost span on the same thread whose [ts, ts + dur) contains the node's ts.
struct EventTree {
  std::vector<uint32_t> order;        // event indices, parents before children
  std::vector<int32_t> parent;        // by event index; -1 = top level or not a node
  std::vector<int64_t> child_dur_ns;  // by event index: sum of direct child spans' dur
};

EventTree BuildEventTree(const TraceData& trace);

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_TRACE_EVENT_TREE_H_
