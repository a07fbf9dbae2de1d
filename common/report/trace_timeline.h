// What the HTML report draws over time, from the trace's events: the per-step split of the
// step, the GPU busy/idle strip per stream with the kernel launches, and memory over the window.
// The scalar metrics stay the analyser's (common/analysis/trace_analyser.h); this only lays out
// the same events along the time axis.
#ifndef LIBREYOLO_COMMON_REPORT_TRACE_TIMELINE_H_
#define LIBREYOLO_COMMON_REPORT_TRACE_TIMELINE_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/trace/step_window.h"
#include "common/trace/trace_data.h"

namespace libreyolo {

struct StepSplit {
  int64_t number = 0;   // N of ProfilerStep#N
  double start_ms = 0;  // from the window start
  double wall_ms = 0;
  std::vector<double> phase_ms;  // exclusive wall ms, by TraceTimeline::phases; sums to wall_ms
  double gpu_busy_ms = 0;        // union of kernel intervals inside the step
};

struct StreamLane {
  std::string name;  // "GPU 0, stream 7"
  // Busy intervals in ms from the window start, merged where closer than the strip's resolution
  // (window_ms / kTimelineBuckets), so a lane holds at most that many.
  std::vector<std::pair<double, double>> busy;
  int64_t activities = 0;  // kernels + memcpy + memset
  double busy_ms = 0;      // exact union length, before merging
};

struct MemoryPoint {
  double t_ms = 0;
  double allocated_mb = 0;
  double reserved_mb = -1;  // -1: not recorded
};

struct TraceTimeline {
  double window_ms = 0;
  int64_t steps_seen = 0;  // distinct ProfilerStep#N marks
  // Columns of StepSplit::phase_ms: at most 12 named phases (the known ones in step order, then
  // others by name; any further names count as "other"), and "other" last.
  std::vector<std::string> phases;
  std::vector<StepSplit> steps;            // in time order; empty when the trace has no step marks
  std::vector<StreamLane> streams;         // GPU streams with activity: the 32 busiest, in order
  int64_t streams_not_drawn = 0;           // further (less busy) streams
  std::vector<int64_t> launches;           // kernel launch calls per time bucket (kTimelineBuckets)
  int64_t launch_calls = 0;                // launch calls of window kernels found in the trace
  std::vector<MemoryPoint> device_memory;  // downsampled, keeping each bucket's peak
  std::vector<MemoryPoint> host_memory;
  MemoryPoint device_peak, host_peak;  // the exact peaks (allocated); -1 MB when none
};

inline constexpr int kTimelineBuckets = 800;

// Lays out the events of the trace's step window (FindStepWindow) along the time axis.
TraceTimeline BuildTimeline(const TraceData& trace);

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_REPORT_TRACE_TIMELINE_H_
