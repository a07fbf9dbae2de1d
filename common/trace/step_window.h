// The step window of a trace (docs/metrics.md, "Steps and the window"): the ProfilerStep#N
// marks, one per step number (the CPU copy preferred, else the first in file order), and the
// span from the first step's start to the last step's end; without marks, the extent of every
// complete event. The analyser's window (trace_window.cc) and the report's charts both use it.
#ifndef LIBREYOLO_COMMON_TRACE_STEP_WINDOW_H_
#define LIBREYOLO_COMMON_TRACE_STEP_WINDOW_H_

#include <cstdint>
#include <vector>

#include "common/trace/trace_data.h"

namespace libreyolo {

struct StepWindow {
  int64_t w0_ns = 0, w1_ns = 0;
  std::vector<StepMark> marks;  // one per step number, in time order; empty without marks
  bool Contains(int64_t ts) const { return ts >= w0_ns && ts < w1_ns; }
};

StepWindow FindStepWindow(const TraceData& trace);

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_TRACE_STEP_WINDOW_H_
