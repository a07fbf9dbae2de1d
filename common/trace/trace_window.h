// The analysis window: which steps are analysed, and which GPU work belongs to them.
//
// GPU work belongs to the step that launched it (docs/metrics.md "Steps and the window"): a
// kernel, memcpy or memset is in the window when the CPU call that launched it starts in the
// window, wherever the activity itself runs. Only a trace without any launch link falls back to
// the activities' own start times.
#ifndef LIBREYOLO_COMMON_TRACE_TRACE_WINDOW_H_
#define LIBREYOLO_COMMON_TRACE_TRACE_WINDOW_H_

#include <cstdint>
#include <vector>

#include "common/profile/profile.h"
#include "common/trace/trace_data.h"

namespace libreyolo {

struct TraceWindow {
  int64_t w0 = 0, w1 = 0;  // [w0, w1): earliest step start to latest step end (CPU side)
  int64_t real_steps = 1;
  // True when GPU activities were attributed through their launch calls; false for the
  // start-time fallback (the trace links no activity to a launch call).
  bool by_launch = false;
  // By index into the filtered trace's events: the launch call of each GPU activity, else -1.
  std::vector<int32_t> launch_of;

  bool Contains(int64_t ts) const { return ts >= w0 && ts < w1; }
};

// Finds the window, links every GPU activity of the whole trace to its launch call (same
// correlation id, or the ac2g flow), and removes from `trace.events` every event that is not in
// the window. Counts duplicate steps and activities without a launch call in `stats`.
TraceWindow SelectWindow(TraceData& trace, ParseStats* stats);

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_TRACE_TRACE_WINDOW_H_
