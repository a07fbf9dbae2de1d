// The profiler's collection switches and what they cost (issue 36, section 4). Torch-free: the
// jobs measure (their probe rounds), this unit plans the probes and reads them.
//
// Fixed defaults. record_shapes, profile_memory and with_flops are tri-state in a job spec: a
// flag (--x / --no-x) is obeyed; left out, a switch takes its fixed default (kDefault* below),
// whatever the machine's load and whatever earlier jobs measured. No switch changes by itself.
// (Until issue 36 an unset switch was "auto": on unless a probe found the profiler over the
// budget, the decision kept per identical job; on a busy box 4 of 9 identical default `infer`
// runs lost record_shapes, with it their FLOPs and `ops --group-by-input-shape`, for good.)
//
// The probe measures and reports; it decides nothing. Before the profiled window a traced job
// probes in interleaved A/B rounds (unprofiled, profiled, unprofiled, ...: EstimateOverhead):
// for each costly switch that is on, the switches in force without it, then the switches in
// force themselves (the profile's overhead_pct; last, so that its windows sit next to the
// recorded window). A switch's cost is the shift between the paired differences of the probe
// with it and the probe without it (EstimateShift), in percentage points of the unprofiled
// step: what --no-<switch> saves. A cost whose interval lies above the budget (its lower bound
// over overhead_budget_pct) is marked over budget: the summary says so and names the flag that
// turns it off. Everything lands in the profile's `profiler` object.
#ifndef LIBREYOLO_SERVER_ENGINE_JOB_OVERHEAD_BUDGET_H_
#define LIBREYOLO_SERVER_ENGINE_JOB_OVERHEAD_BUDGET_H_

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/json/json_writer.h"
#include "server/engine/engine.h"

namespace libreyolo::engine {

enum class CostlySwitch { kRecordShapes, kProfileMemory, kWithFlops };

// The switches in the profile's order.
inline constexpr std::array<CostlySwitch, 3> kCostlySwitches = {
    CostlySwitch::kRecordShapes, CostlySwitch::kProfileMemory, CostlySwitch::kWithFlops};

// "record_shapes", "profile_memory", "with_flops" (the profile's keys).
const char* SwitchName(CostlySwitch s);
// The flag that turns it off: "--no-record-shapes", "--no-profile-memory", "--no-with-flops".
const char* SwitchOffFlag(CostlySwitch s);

// The fixed defaults of the switches a job leaves unset (wire/job_spec/job_defaults.h, which the
// client's --help shows too). The Python tool records none of the three; ours records what
// costs less than the default 3 % budget on the benchmark and what the README's commands need.
// Measured with bench/profiler_switch_cost on our collector (the default), 640 px (the default
// imgsz), 1 thread, the calling thread's CPU time, each switch within all three (all three minus
// all but it: what --no-<switch> saves), medians of 5 runs (bench/README.md, "Fixed switch
// defaults", has the runs and the command), % of a 127-141 ms unprofiled forward:
//   record_shapes   0.8 % on its own (over the bare collector), 4.4 % with the FLOPs it feeds
//   profile_memory  0.8 %
//   with_flops      3.2 %, over the budget: off (--with-flops turns it on)
// record_shapes stays on (`ops --group-by-input-shape`, the README's, needs it; FLOPs off, it
// costs its own 0.8 %), profile_memory too (the report's memory chart and its peak).
inline constexpr bool kDefaultRecordShapes = job_defaults::kRecordShapes;
inline constexpr bool kDefaultProfileMemory = job_defaults::kProfileMemory;
inline constexpr bool kDefaultWithFlops = job_defaults::kWithFlops;
bool DefaultSwitch(CostlySwitch s);

// A probe runs kProbePairs profiled windows, each between two unprofiled ones, a round
// (kProbeRoundWindows windows of one iteration or training step); a probe runs one round or,
// when the job affords it, up to kMaxProbeRounds rounds whose paired differences are pooled.
inline constexpr int64_t kProbePairs = 8;
inline constexpr int64_t kMaxProbeRounds = 3;
inline constexpr double kProbeConfidence = 0.95;
inline constexpr int64_t kProbeRoundWindows = 2 * kProbePairs + 1;

// The probes' share of a job (issue 22, section 3): all probes together run about as many
// windows as the job's own steps or iterations (its measured and recorded ones, `job_windows`),
// in whole rounds shared alike among its `probes`, at least one round and at most
// kMaxProbeRounds each: clamp(ceil(job_windows / kProbeRoundWindows) / probes, 1,
// kMaxProbeRounds). The same job always gets the same rounds.
int64_t RoundsPerProbe(int64_t job_windows, int64_t probes);

// The switches in force for a probe or for the profiled window.
struct ResolvedSwitches {
  bool record_shapes = kDefaultRecordShapes;
  bool profile_memory = kDefaultProfileMemory;
  bool with_flops = kDefaultWithFlops;
  bool Get(CostlySwitch s) const;
  void Set(CostlySwitch s, bool on);
};

// Each switch as the job gave it, else its fixed default.
ResolvedSwitches ResolveSwitches(const ProfilerSwitches& requested);
// Why a switch has its value: "flag" (the job gave it) or "default" (DefaultSwitch).
const char* SwitchSource(const ProfilerSwitches& requested, CostlySwitch s);

// 100 * (probe - baseline) / baseline; 0 when the baseline is not positive.
double OverheadPct(double probe_median_ms, double baseline_median_ms);

// One probe round's windows, in milliseconds per iteration, in the order they ran: unprofiled[0],
// profiled[0], unprofiled[1], ..., profiled[n-1], unprofiled[n].
struct ProbeTimings {
  std::vector<double> unprofiled_ms;  // n + 1
  std::vector<double> profiled_ms;    // n
};

// The interleaved A/B estimate of the profiler's overhead.
struct OverheadEstimate {
  int64_t pairs = 0;           // n
  double median_pct = 0;       // median of the paired differences
  double ci_low_pct = 0;       // the sign test's interval for that median
  double ci_high_pct = 0;
  double ci_level = 0;         // its exact coverage (0.992 for 8 pairs, 0.979 for 16, ...)
  double unprofiled_median_ms = 0;  // medians of the windows, for the record
  double profiled_median_ms = 0;
  std::vector<double> diffs_pct;  // the paired differences d_i, as they ran (EstimateShift's)
};

// d_i = 100 * (profiled[i] - b_i) / b_i with b_i = (unprofiled[i] + unprofiled[i+1]) / 2, over
// every round; the median of the d_i and the interval [d_(k), d_(n+1-k)] of the n sorted d_i, k
// the largest rank with P(Binomial(n, 1/2) < k) <= (1 - confidence) / 2 (at least 1).
// INVALID_ARGUMENT unless every round has n_r >= 1 profiled windows between n_r + 1 unprofiled
// ones, each positive and finite.
absl::StatusOr<OverheadEstimate> EstimateOverhead(const std::vector<ProbeTimings>& rounds,
                                                  double confidence = kProbeConfidence);

// The sign test's rank k for n pairs (see EstimateOverhead) and the interval's exact coverage,
// 1 - 2 * P(Binomial(n, 1/2) < k).
int64_t SignTestRank(int64_t n, double confidence, double* coverage);

// The shift between two probes' paired differences: what one switch adds.
struct ShiftEstimate {
  int64_t n = 0, m = 0;   // differences with the switch and without it
  double shift_pct = 0;   // Hodges-Lehmann: the median of the n * m differences x_i - y_j
  double ci_low_pct = 0;  // the Mann-Whitney interval for the shift
  double ci_high_pct = 0;
  double ci_level = 0;    // its exact coverage
};
// Hodges-Lehmann estimate of the shift between `with` (x) and `without` (y), and the
// distribution-free interval [D_(k), D_(nm+1-k)] of the sorted n * m differences, k the largest
// rank with P(U < k) <= (1 - confidence) / 2 under the Mann-Whitney null (at least 1). Each
// d_i is already paired with the unprofiled windows around it, so a load that drifts between
// the two probes cancels; what remains assumes the two probes' differences differ by a shift.
// INVALID_ARGUMENT when either is empty or holds a non-finite value.
absl::StatusOr<ShiftEstimate> EstimateShift(const std::vector<double>& with,
                                            const std::vector<double>& without,
                                            double confidence = kProbeConfidence);
// The Mann-Whitney rank k for n and m (exact counts) and the interval's exact coverage.
int64_t MannWhitneyRank(int64_t n, int64_t m, double confidence, double* coverage);

// One switch's measured cost.
struct SwitchCost {
  CostlySwitch which = CostlySwitch::kRecordShapes;
  OverheadEstimate without;  // the probe of the switches in force without it
  ShiftEstimate cost;        // in force minus without: what --no-<switch> saves, in % points
  bool over_budget = false;  // cost.ci_low_pct > the budget
};

// What the probes measured, and what the switches are and why.
struct BudgetOutcome {
  ResolvedSwitches switches;                  // the profiled window's: flags, else defaults
  std::array<bool, 3> from_flag = {};         // per kCostlySwitches: given by a flag
  // The overhead of `switches` (the profile's overhead_pct). Unset when nothing was probed.
  std::optional<OverheadEstimate> overhead;
  std::vector<SwitchCost> costs;  // each switch that is on, in kCostlySwitches order
  std::string probe_note;  // why nothing was probed (--no-trace, --no-probe-overhead, a rank)
  int64_t rounds_per_probe = 0;
  int64_t probe_rounds = 0;  // rounds run in all, kProbeRoundWindows windows each
};

// Runs one probe round: kProbePairs interleaved pairs with these switches on under the profiler.
using ProbeFn = std::function<absl::StatusOr<ProbeTimings>(const ResolvedSwitches&)>;

// The probes of a job: for each switch on (kCostlySwitches order), `rounds_per_probe` rounds of
// the switches in force without it, then as many of the switches in force; the costs from
// them. The switches are ResolveSwitches(requested), whatever the probes measure. A probe's
// error (cancellation, a failed step) or a malformed probe (EstimateOverhead) is returned as is.
absl::StatusOr<BudgetOutcome> ProbeProfilerCost(const ProfilerSwitches& requested,
                                                double budget_pct, const ProbeFn& probe,
                                                int64_t rounds_per_probe = 1);

// How many probes ProbeProfilerCost runs for these switches: one per switch on, plus one.
int64_t ProbeCount(const ProfilerSwitches& requested);

// No probe (nothing profiled, probing off, a data-parallel rank): the switches all the same,
// `why` recorded.
BudgetOutcome SkipProbe(const ProfilerSwitches& requested, std::string why);

// INVALID_ARGUMENT unless 0 <= budget <= 1000 (finite).
absl::Status ValidateOverheadBudget(double budget_pct);

// The median of `ms` (the mean of the middle two for an even count); 0 when empty.
double MedianMs(std::vector<double> ms);

// What the recorded trace holds, for the switch record (RecordedData in collect/).
struct RecordedKinds {
  bool traced = false;  // a trace was recorded at all (false with --no-trace)
  bool shapes = false;  // some op has input shapes
  bool flops = false;   // some op has FLOPs
  bool memory = false;  // some memory event
};

// Writes the switches and the probes into an open JSON object: record_shapes, profile_memory,
// with_flops (each true only when it was on and the trace holds its data; a note in
// switch_notes says why one that was on holds none), with_stack (always false: C++ records no
// Python stacks), with_modules (true only when the trace holds module scopes), switch_source
// {switch: "flag" | "default"}, overhead_budget_pct, switch_costs {switch: {cost_pct, ci_pct,
// ci_level, pairs, over_budget, off_flag}} for each switch on that was probed,
// probe_iterations (windows per round), probe_rounds, probe_windows, probe_rounds_each, and one
// entry per probe in probe_configs ("without record_shapes", ..., "in force"), probe_pairs,
// probe_overhead_pct, probe_ci_low_pct, probe_ci_high_pct, probe_ci_level, probe_median_ms,
// probe_baseline_ms; and probe_note (when set).
void WriteSwitchFields(JsonWriter& w, const BudgetOutcome& o, const RecordedKinds& recorded,
                       bool with_modules, double budget_pct);

// overhead_pct (the median paired difference), overhead_ci_pct [low, high], overhead_ci_level,
// overhead_pairs, overhead_source ("probe"); overhead_pct null and the others absent when
// nothing was measured.
void WriteOverheadFields(JsonWriter& w, const BudgetOutcome& o);

}  // namespace libreyolo::engine

#endif  // LIBREYOLO_SERVER_ENGINE_JOB_OVERHEAD_BUDGET_H_
