#include "common/trace/step_window.h"

#include <algorithm>
#include <map>

namespace libreyolo {

StepWindow FindStepWindow(const TraceData& t) {
  std::map<int64_t, StepMark> kept;
  for (const StepMark& s : t.steps) {
    auto [it, inserted] = kept.try_emplace(s.number, s);
    if (!inserted && s.cpu_copy && !it->second.cpu_copy) it->second = s;
  }
  StepWindow w;
  if (!kept.empty()) {
    w.w0_ns = INT64_MAX;
    w.w1_ns = INT64_MIN;
    for (const auto& [n, s] : kept) {
      w.w0_ns = std::min(w.w0_ns, s.ts_ns);
      w.w1_ns = std::max(w.w1_ns, s.ts_ns + s.dur_ns);
      w.marks.push_back(s);
    }
    std::sort(w.marks.begin(), w.marks.end(),
              [](const StepMark& a, const StepMark& b) { return a.ts_ns < b.ts_ns; });
  } else if (t.min_ts_ns <= t.max_end_ns) {
    w.w0_ns = t.min_ts_ns;
    w.w1_ns = t.max_end_ns;
  }
  return w;
}

}  // namespace libreyolo
