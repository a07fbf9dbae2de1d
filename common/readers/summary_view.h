// `summary`: the headline numbers of one profile, verdict first.
#ifndef LIBREYOLO_COMMON_READERS_SUMMARY_VIEW_H_
#define LIBREYOLO_COMMON_READERS_SUMMARY_VIEW_H_

#include <optional>
#include <string>
#include <vector>

#include "common/profile/profile.h"

namespace libreyolo {

struct SummaryView {
  std::string source;   // the path or job the profile came from
  Profile profile;      // trimmed: top kernels only, no op tables
  bool unreliable = false;  // taken under memory pressure
  size_t top_kernels = 8;
  bool cpu_job = false;     // IsCpuJob: GPU lines are n/a, CPU facts shown instead
  std::string cpu_threads;  // from the config: "2 intra-op, 2 inter-op; BLAS ..."; "" unknown
  std::vector<CategoryRow> cpu_op_categories;  // self CPU time of the ops by category
  std::string batch;  // "16", or "16 (chosen by --batch -1: <rule>)"; "" unknown
  // The profiler's overhead: "4.5 % [1.2, 11.0] (n=24)"; "" where the profile records none.
  std::string profiler_overhead;
  // The collection switches and why (ProfilerSwitchesOf), and one line per switch whose
  // measured cost is over the budget (SwitchesOverBudgetOf).
  std::string profiler_switches;
  std::vector<std::string> switches_over_budget;
  // A job on a seeded random init (config.weights "random-init"): which of its timings hold
  // for trained weights and which do not (RandomInitTimingNote); "" otherwise.
  std::string weights_note;
  // The profile's own timings disagree beyond what one machine state allows
  // (profiler.load_shift.note, common/analysis/load_shift.h); "" when they agree.
  std::string load_shift;
};

// What a random-init model's timings are worth, for `mode` ("inference" or a training mode):
// the network's own work is that of trained weights (the same shapes and kernels); what
// follows the predictions is not. Said by the engine when it falls back to a random init, and
// by the summary of every profile taken on one.
std::string RandomInitTimingNote(const std::string& mode);

// The batch a recorded config holds, with the auto-batch rule when --batch -1 chose it.
std::string BatchOf(const std::string& config_json);

// The rule --batch -1 chose the batch by, where the config records one.
std::optional<std::string> BatchRuleOf(const std::string& config_json);

// The CPU thread settings a recorded config holds, in words; "" where it holds none.
std::string CpuThreadsOf(const std::string& config_json);

// The profiler's overhead a recorded `profiler` object holds, its interval and pairs:
// "4.5 % [1.2, 11.0] (n=24)", "4.5 %" without an interval, with "; switches reused from an
// identical earlier job" when the decision came from the worker's cache; "" where it holds no
// overhead_pct (no trace, or an older profile).
std::string ProfilerOverheadOf(const std::string& profiler_json);

// The collection switches a recorded `profiler` object holds and why (issue 36, section 4):
// "record_shapes on (default), profile_memory on (default), with_flops off (flag)"; "" where
// it records no switch_source (an older profile, a raw trace).
std::string ProfilerSwitchesOf(const std::string& profiler_json);

// One line per switch whose measured cost (`switch_costs`) is over the budget, with the flag
// that turns it off: "record_shapes cost 4.1 % (3.2..5.0) > budget 3 %: --no-record-shapes
// turns it off".
std::vector<std::string> SwitchesOverBudgetOf(const std::string& profiler_json);

SummaryView BuildSummary(const Profile& p, const std::string& source);
std::string RenderSummaryText(const SummaryView& v);
std::string RenderSummaryJson(const SummaryView& v);

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_READERS_SUMMARY_VIEW_H_
