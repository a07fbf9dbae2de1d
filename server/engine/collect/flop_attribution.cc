#include "server/engine/collect/flop_attribution.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <vector>

#include "common/trace/flop_formulas.h"

namespace libreyolo::engine {
namespace {

// One thread's CPU ops, outermost first (start ascending, the longer first on a tie).
void AttributeThread(std::vector<CollectedEvent>& events, std::vector<size_t>& ops) {
  std::stable_sort(ops.begin(), ops.end(), [&](size_t a, size_t b) {
    const CollectedEvent& x = events[a];
    const CollectedEvent& y = events[b];
    if (x.start_ns != y.start_ns) return x.start_ns < y.start_ns;
    return x.dur_ns > y.dur_ns;
  });
  struct Open {
    int64_t start_ns, end_ns;
    bool covered;  // it, or an op around it, carries the count of its chain
  };
  std::vector<Open> stack;
  for (const size_t i : ops) {
    CollectedEvent& e = events[i];
    const int64_t end_ns = e.start_ns + std::max<int64_t>(e.dur_ns, 0);
    while (!stack.empty() && stack.back().end_ns <= e.start_ns &&
           stack.back().start_ns != e.start_ns) {
      stack.pop_back();
    }
    bool covered = !stack.empty() && stack.back().covered;
    if (covered) {
      e.flops.reset();
    } else if (ClassifyFlopOp(e.name) != FlopOpClass::kNone) {
      if (const auto f = FlopsOf(e.name, e.flop_args); f.has_value()) e.flops = *f;
      covered = e.flops.has_value();
    }
    e.flop_args.clear();
    e.flop_args.shrink_to_fit();
    stack.push_back({e.start_ns, end_ns, covered});
  }
}

}  // namespace

void AttributeFlops(CollectedTrace& trace) {
  std::map<uint64_t, std::vector<size_t>> by_thread;
  for (size_t i = 0; i < trace.events.size(); ++i) {
    if (trace.events[i].kind == CollectedKind::kCpuOp)
      by_thread[trace.events[i].thread].push_back(i);
  }
  for (auto& [thread, ops] : by_thread) AttributeThread(trace.events, ops);
}

}  // namespace libreyolo::engine
