// `phases`: GPU and wall time per phase (forward, backward, dataload, ...).
#ifndef LIBREYOLO_COMMON_READERS_PHASES_VIEW_H_
#define LIBREYOLO_COMMON_READERS_PHASES_VIEW_H_

#include <optional>
#include <string>
#include <vector>

#include "common/profile/profile.h"

namespace libreyolo {

struct PhasesView {
  std::string source;
  std::optional<std::string> trace;  // the profile's trace path, as recorded (the Python tool's key)
  OptDouble step_ms;           // the profile's step_ms (unprofiled in a recorded profile)
  bool step_unprofiled = false;  // step_ms was measured without the profiler
  StepTiming step_timing = StepTiming::kUnknown;
  // The window the phases were measured in: window / steps (ProfiledStepMs). The phases' wall
  // times and the rest of the step add up to it.
  OptDouble profiled_step_ms;
  OptDouble rest_of_step_ms;  // profiled step - sum of the phases' wall times, when >= 0
  bool phases_overlap = false;  // the phases' wall times sum to more than the profiled step
  bool cpu_job = false;         // IsCpuJob: CPU time per phase instead of GPU columns
  OptDouble gpu_kernel_ms_per_step;  // all kernels; the rest is unattributed
  std::vector<PhaseRow> phases;
  OptDouble unattributed_gpu_ms_per_step;
};

PhasesView BuildPhases(const Profile& p, const std::string& source);
std::string RenderPhasesText(const PhasesView& v);
std::string RenderPhasesJson(const PhasesView& v);

// The phase names a profile has, for "unknown --phase" messages.
std::string PhaseNamesForMessage(const Profile& p);
// Whether `phase` is one of the profile's phases (its `phases` rows). A listed phase without
// kernel or op rows (a Python LibreYOLO profile made with --no-trace has empty
// `kernels_by_phase`/`ops_by_phase`) is known, with nothing in it.
bool ProfileHasPhase(const Profile& p, const std::string& phase);

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_READERS_PHASES_VIEW_H_
