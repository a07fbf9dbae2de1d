// `ops`: the framework view, aten/autograd ops ranked by CPU time (torch's key_averages table).
#ifndef LIBREYOLO_COMMON_READERS_OPS_VIEW_H_
#define LIBREYOLO_COMMON_READERS_OPS_VIEW_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/profile/profile.h"
#include "common/readers/top_rows.h"

namespace libreyolo {

struct OpsOptions {
  int top = kDefaultTop;  // <= 0: all
  std::optional<std::string> phase;
  std::string sort = "cpu_time_total";
  bool group_by_input_shape = false;
};

struct OpsView {
  std::string source;
  std::optional<std::string> trace;  // the profile's trace path, as recorded (the Python tool's key)
  OpsOptions options;
  std::vector<OpRow> rows;
  size_t total_rows = 0;
  // Self CPU time of the whole list the rows come from (all ops, or the phase's): the
  // denominator of pct_of_self_cpu. Absent where rows carry no self time (Python profiles).
  OptDouble list_self_cpu_ms_per_step;
  std::string sort_note;  // set when --sort named a column the profile has no values for
  bool device_memory_recorded = false;  // any device [memory] bytes: else device memory is n/a
  bool show_memory = false, show_device = false, show_flops = false;
  OptDouble self_cpu_total_ms_per_step, self_device_total_ms_per_step;
  std::optional<int64_t> real_steps;
  OptDouble peak_vram_mb, peak_reserved_mb, flops_per_step, achieved_tflops;
};

// The accepted --sort keys, in the order `--help` lists them.
const std::vector<std::string>& OpSortKeys();

// NOT_FOUND for an unknown phase; INVALID_ARGUMENT for an unknown sort key; FAILED_PRECONDITION
// for --group-by-input-shape on a profile recorded without shapes. All exit 2.
absl::StatusOr<OpsView> BuildOps(const Profile& p, const OpsOptions& o, const std::string& source);
std::string RenderOpsText(const OpsView& v);
std::string RenderOpsJson(const OpsView& v);

// The self CPU time of a list of op rows; absent if any row lacks it.
OptDouble ListSelfCpuMs(const std::vector<OpRow>& rows);
// pct_of_self_cpu: the row's self CPU time / the list's × 100.
OptDouble PctOfSelfCpu(const OpRow& r, OptDouble list_self_cpu_ms);

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_READERS_OPS_VIEW_H_
