// The report's per-layer table, from the module scopes of a trace recorded with module
// hierarchy (PyTorch's with_modules / with_stack: python_function spans "nn.Module: <Class>_<n>").
#ifndef LIBREYOLO_COMMON_REPORT_LAYER_TABLE_H_
#define LIBREYOLO_COMMON_REPORT_LAYER_TABLE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "common/trace/trace_data.h"

namespace libreyolo {

struct LayerRow {
  std::string path;  // nesting of module scopes on their thread: "Model_0/Conv2d_3"
  std::string name;  // the module's own name: "Conv2d_3"
  int depth = 0;     // number of enclosing module scopes
  double calls_per_step = 0;
  double cpu_ms_per_step = 0;       // the scopes' wall time on their thread
  double self_cpu_ms_per_step = 0;  // minus the enclosed module scopes
  double gpu_ms_per_step = 0;       // kernels launched inside, enclosed modules included
  double self_gpu_ms_per_step = 0;  // kernels whose innermost module is this one
  double kernels_per_step = 0;      // kernels launched inside, enclosed modules included
};

// One row per module path over the step window (FindStepWindow), per step (divided by the
// window's step count, 1 without marks), in the order the paths first run. A kernel belongs to
// the innermost module scope that encloses its launch call (args.correlation) on the launching
// thread. Empty when the trace has no module scopes.
std::vector<LayerRow> BuildLayerTable(const TraceData& trace);

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_REPORT_LAYER_TABLE_H_
