// `modules`: the per-layer table of a trace's module scopes (--with-modules), aggregated by
// common/analysis/module_table.h, or its folded stacks for flame-graph tools.
#ifndef LIBREYOLO_COMMON_READERS_MODULES_VIEW_H_
#define LIBREYOLO_COMMON_READERS_MODULES_VIEW_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/analysis/module_table.h"
#include "common/trace/trace_data.h"

namespace libreyolo {

// `--depth N` of `modules` and the Modules RPC's `depth`: path components, the one bound for
// the command line and the daemon alike. INVALID_ARGUMENT "depth: 0 is outside 1..1024".
inline constexpr int32_t kMaxModuleDepth = 1024;
absl::Status CheckModuleDepth(int64_t depth);

struct ModulesOptions {
  int depth = 0;                 // <= 0: every module path; N: aggregated to N path components
  std::string sort = "order";    // ModuleSortKeys()
  std::string format = "table";  // table | folded
};

// order (the model's order, nested), cpu_total, self_cpu, gpu_total, self_gpu, calls, flops,
// name.
const std::vector<std::string>& ModuleSortKeys();

struct ModulesView {
  std::string source;  // what the user named
  std::string trace;   // the trace read
  ModulesOptions options;
  ModuleTable table;   // rows sorted
  std::string folded;  // --format folded
};

// INVALID_ARGUMENT for a bad --sort, --format or --depth, or a sort by a column the trace lacks
// (gpu_* without kernels, flops without FLOPs); FAILED_PRECONDITION when the trace holds no
// module scopes ("run with --with-modules"). All exit 2.
absl::StatusOr<ModulesView> BuildModules(const TraceData& trace, const ModulesOptions& o,
                                         const std::string& source, const std::string& trace_path);
// The table, or the folded stacks as they are.
std::string RenderModulesText(const ModulesView& v);
std::string RenderModulesJson(const ModulesView& v);

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_READERS_MODULES_VIEW_H_
