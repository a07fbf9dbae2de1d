#include "common/trace/event_tree.h"

#include <algorithm>

namespace libreyolo {

EventTree BuildEventTree(const TraceData& trace) {
  const auto& ev = trace.events;
  EventTree tree;
  tree.parent.assign(ev.size(), -1);
  tree.child_dur_ns.assign(ev.size(), 0);
  tree.order.reserve(ev.size());
  for (uint32_t i = 0; i < ev.size(); ++i) {
    const EventClass c = ev[i].cls;
    if (IsCpuSpan(c) || c == EventClass::kMemoryInstant || c == EventClass::kFlowStart ||
        c == EventClass::kFwdBwdStart) {
      tree.order.push_back(i);
    }
  }
  // Traces are mostly sorted per thread already; sort keeps equal keys in file order.
  std::stable_sort(tree.order.begin(), tree.order.end(), [&ev](uint32_t a, uint32_t b) {
    const TraceEvent& x = ev[a];
    const TraceEvent& y = ev[b];
    if (x.thread != y.thread) return x.thread < y.thread;
    if (x.ts_ns != y.ts_ns) return x.ts_ns < y.ts_ns;
    return x.dur_ns > y.dur_ns;
  });

  std::vector<uint32_t> stack;
  uint32_t thread = UINT32_MAX;
  for (const uint32_t i : tree.order) {
    const TraceEvent& e = ev[i];
    if (e.thread != thread) {
      stack.clear();
      thread = e.thread;
    }
    while (!stack.empty()) {
      const TraceEvent& top = ev[stack.back()];
      if (top.ts_ns + top.dur_ns > e.ts_ns) break;
      stack.pop_back();
    }
    if (!stack.empty()) {
      tree.parent[i] = static_cast<int32_t>(stack.back());
      if (IsCpuSpan(e.cls)) SatAdd(tree.child_dur_ns[stack.back()], e.dur_ns);
    }
    if (IsCpuSpan(e.cls) && e.dur_ns > 0) stack.push_back(i);
  }
  return tree;
}

}  // namespace libreyolo
