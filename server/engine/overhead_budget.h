// The profiler's overhead budget (cli.md "Profiler options"): --record-shapes, --profile-memory
// and --with-flops default on "when their measured overhead stays within budget". Torch-free:
// the jobs measure (probe), this unit decides.
//
// The rule. A switch the user left unset is "auto". Before a job's profiled window, when any
// switch is auto, the job probes: a few iterations without the profiler, then as many under it
// with every auto switch on, and compares the two medians:
//   overhead_pct = 100 * (profiled median - unprofiled median) / unprofiled median.
// The unprofiled iterations run right before the profiled ones, not minutes earlier in the
// measured window: on a shared machine the load drifts between the two by more than the budget
// (bench/README.md), and adjacent blocks see the same load.
// Within budget (overhead_pct <= overhead_budget_pct): keep what is on. Over budget: turn the
// costliest auto switch still on off (kDisableOrder) and probe again. When the last auto switch
// goes off there is nothing left to decide, so that configuration is not probed (the profiled
// window's own overhead_pct measures it). Explicit true/false is never changed; with_modules is
// not a budget switch (its ranges cost little: engine.h). Everything lands in the profile's
// `profiler` object.
#ifndef LIBREYOLO_SERVER_ENGINE_OVERHEAD_BUDGET_H_
#define LIBREYOLO_SERVER_ENGINE_OVERHEAD_BUDGET_H_

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/json/json_writer.h"
#include "server/engine/engine.h"

namespace libreyolo::engine {

enum class CostlySwitch { kRecordShapes, kProfileMemory, kWithFlops };

// "record_shapes", "profile_memory", "with_flops" (the profile's keys).
const char* SwitchName(CostlySwitch s);

// Auto switches go off costliest first: record_shapes, with_flops, profile_memory. Measured with
// bench/profiler_switch_cost (one process, configurations interleaved, the calling thread's CPU
// time so that a loaded machine does not blur it): LibreYOLO9t forward at 160 px, 1 thread,
// 100 rounds x 3 forwards, on the 2-core dev box; ms added per forward (19.3 ms unprofiled; the
// bare profiler, all three off, adds 2.2 ms whatever the switches):
//   switch          alone (over bare)   within all three (all three minus all but it)
//   record_shapes   1.9                 4.9   every op's input sizes, strides and scalars
//   with_flops      0.0                 3.1   FLOP formulas over the recorded shapes
//   profile_memory  -0.2 (noise)        1.5   one event per allocation and free
// (all three: +5.0 over bare; at 320 px, 40 rounds: shapes 1.4 / 4.4, FLOPs 0.0 / 1.7, memory
// 0.1 / -2.5, noisier.) record_shapes costs most on its own and within all three; with_flops
// costs next, once shapes are on; profile_memory least. Once record_shapes is off the other two
// together add 0.2 ms, so the order after it matters little.
inline constexpr std::array<CostlySwitch, 3> kDisableOrder = {
    CostlySwitch::kRecordShapes, CostlySwitch::kWithFlops, CostlySwitch::kProfileMemory};

// Iterations (infer) or training steps (run) per half probe (unprofiled, then profiled): the
// median of 5 ignores the first iteration's profiler start-up and one or two stragglers. A run
// probes with fewer when one epoch holds fewer batches (a half probe never straddles an epoch),
// and not at all below 3.
inline constexpr int64_t kProbeIterations = 5;
inline constexpr int64_t kMinProbeIterations = 3;

// The switches in force for one probe or for the profiled window.
struct ResolvedSwitches {
  bool record_shapes = true;
  bool profile_memory = true;
  bool with_flops = true;
  bool Get(CostlySwitch s) const;
  void Set(CostlySwitch s, bool on);
};

// Auto switches start on; explicit ones keep their value.
ResolvedSwitches InitialSwitches(const ProfilerSwitches& requested);
// The auto switches of `requested`, in kDisableOrder.
std::vector<CostlySwitch> AutoSwitches(const ProfilerSwitches& requested);

// 100 * (probe - baseline) / baseline; 0 when the baseline is not positive.
double OverheadPct(double probe_median_ms, double baseline_median_ms);

// The decision after one probe, given the auto switches still on (in kDisableOrder).
struct BudgetAction {
  enum class Kind {
    kAccept,     // within budget: profile with what is on
    kDisable,    // over budget: turn `which` off, then probe again unless it was the last
    kExhausted,  // over budget with no auto switch left on: profile as is
  };
  Kind kind = Kind::kAccept;
  CostlySwitch which = CostlySwitch::kRecordShapes;
};
BudgetAction NextBudgetAction(double overhead_pct, double budget_pct,
                              const std::vector<CostlySwitch>& auto_still_on);

// What was decided, and why; the `profiler` object records all of it.
struct BudgetOutcome {
  ResolvedSwitches switches;               // the profiled window's
  std::vector<std::string> auto_switches;  // the switches the user left unset
  std::vector<std::string> auto_disabled;  // turned off, in order
  std::vector<double> probe_overhead_pct;  // one per probe, in order
  std::vector<double> probe_median_ms;     // the profiled half's median iteration
  std::vector<double> probe_baseline_ms;   // the unprofiled half's
  int64_t probe_iterations = 0;            // per half probe
  std::string probe_note;  // why no probe ran although some switch was auto; empty otherwise
};

// One probe's medians, in milliseconds per iteration.
struct ProbeResult {
  double baseline_ms = 0;  // unprofiled
  double profiled_ms = 0;  // under the profiler with the switches asked for
};
using ProbeFn = std::function<absl::StatusOr<ProbeResult>(const ResolvedSwitches&)>;

// The whole loop: at most one probe per auto switch (three), none when no switch is auto. A
// probe's error (cancellation, a failed step) is returned as is.
absl::StatusOr<BudgetOutcome> ApplyOverheadBudget(const ProfilerSwitches& requested,
                                                  double budget_pct, int64_t probe_iterations,
                                                  const ProbeFn& probe);

// No probe (nothing profiled, or the data cannot afford one): auto switches stay on, `why` says
// so. With no auto switch `why` is dropped.
BudgetOutcome SkipOverheadBudget(const ProfilerSwitches& requested, std::string why);

// INVALID_ARGUMENT unless 0 <= budget <= 1000 (finite).
absl::Status ValidateOverheadBudget(double budget_pct);

// The median of `ms` (the mean of the middle two for an even count); 0 when empty.
double MedianMs(std::vector<double> ms);

// Writes the switch values and the budget's fields into an open JSON object: record_shapes,
// profile_memory, with_flops, with_stack (always false: C++ records no Python stacks),
// with_modules (true only when the trace holds module scopes), auto_switches, auto_disabled,
// overhead_budget_pct, probe_iterations, probe_overhead_pct, probe_median_ms,
// probe_baseline_ms and probe_note (when set).
void WriteSwitchFields(JsonWriter& w, const BudgetOutcome& o, bool with_modules,
                       double budget_pct);

}  // namespace libreyolo::engine

#endif  // LIBREYOLO_SERVER_ENGINE_OVERHEAD_BUDGET_H_
