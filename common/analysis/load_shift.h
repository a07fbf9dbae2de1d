// Two measurements of one job that cannot both be true. A job times the same step three ways:
// the measured window without the profiler (the headline step_ms), the unprofiled windows that
// the overhead probes interleave with profiled ones (probe_baseline_ms), and the recorded window
// under the profiler (profiled_step_ms). With the machine's load steady these agree up to the
// profiler's measured overhead; when they disagree by far more, the load changed mid-job and the
// overhead estimate and the headline describe different conditions (issue 22, section 3: a job
// reported 4.8 % overhead with a 36.8 ms latency, a 90.1 ms profiled step and an 81.9 ms probe
// baseline, and no word of it).
#ifndef LIBREYOLO_COMMON_ANALYSIS_LOAD_SHIFT_H_
#define LIBREYOLO_COMMON_ANALYSIS_LOAD_SHIFT_H_

#include <optional>
#include <string>

#include "common/profile/profile.h"

namespace libreyolo {

// How far apart two timings of the same step may be before they cannot both describe one
// machine state: 1.5x, beyond the run-to-run spread of a shared box (a few to ~20 %) and
// beyond any overhead the budget accepts on top of it.
inline constexpr double kLoadShiftFactor = 1.5;

struct LoadShift {
  double step_ms = 0;                        // the headline, without the profiler
  std::optional<double> probe_baseline_ms;   // the accepted probe's unprofiled windows
  std::optional<double> profiled_step_ms;    // the recorded window
  std::optional<double> overhead_ci_high_pct;
  std::string note;  // what disagrees with what, and the way out
};

// The disagreement in `p`'s own numbers, when there is one beyond kLoadShiftFactor; nullopt
// when they agree or cannot be compared (no unprofiled headline: traces, the Python tool's
// profiles; no probe and no window).
std::optional<LoadShift> DetectLoadShift(const Profile& p);

// Adds DetectLoadShift's finding to p->profiler_json as "load_shift" {step_ms,
// probe_baseline_ms, profiled_step_ms, overhead_ci_high_pct, factor, note}; nothing when the
// numbers agree. Call once every number of the profile is final.
void RecordLoadShift(Profile* p);

// The note a profile recorded (profiler.load_shift.note); "" when none.
std::string RecordedLoadShiftNote(const Profile& p);

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_ANALYSIS_LOAD_SHIFT_H_
