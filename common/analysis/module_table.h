// The per-layer view of a trace: its module scopes (docs/metrics.md, "Module scopes"), one
// computation for `libreyolo profile modules` and the HTML report's layer table.
//
// A module scope is a complete event named "nn.Module: <name>": our engine's --with-modules
// ranges (cat user_annotation, <name> the module's full dotted path, "backbone.conv0") and
// PyTorch's with_modules spans (cat python_function, <name> "<Class>_<n>"). A scope's path is
// its name when that already extends the enclosing scope's path ("backbone" >
// "backbone.conv0"), else the enclosing path, a dot, and its name ("Model_0.Conv2d_3").
//
// Over the step window (FindStepWindow), per step (divided by the window's step count, 1 without
// marks); the profiled step is the window's length over that count, as the trace's `summary`:
//   total CPU  the scopes' wall time on their thread (a scope enclosed by another scope of the
//              same row counts once, through the outer one);
//   self CPU   total CPU minus the module scopes directly enclosed (the module's own ops and
//              glue);
//   GPU        the kernels launched (cuda runtime call -> kernel, by args.correlation) while the
//              scope is the innermost module open on the launching thread, or any scope it
//              encloses; self GPU only the former;
//   FLOPs      args.flops of the CPU ops that start inside (the analyser's FLOPs rule);
//   share      total CPU over the profiled step, in %.
#ifndef LIBREYOLO_COMMON_ANALYSIS_MODULE_TABLE_H_
#define LIBREYOLO_COMMON_ANALYSIS_MODULE_TABLE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/trace/trace_data.h"

namespace libreyolo {

struct ModuleRow {
  std::string path;  // the module path, cut to `depth` components when aggregated
  std::string name;  // its last component
  int depth = 0;     // path components minus one
  double calls_per_step = 0;
  double cpu_ms_per_step = 0;
  double self_cpu_ms_per_step = 0;
  double gpu_ms_per_step = 0;
  double self_gpu_ms_per_step = 0;
  double kernels_per_step = 0;
  std::optional<double> flops_per_step;  // empty when no op in the window has args.flops
  double pct_of_step = 0;
};

struct ModuleTable {
  std::vector<ModuleRow> rows;  // in the order the paths first run
  int64_t steps = 1;            // ProfilerStep marks in the window (1 without)
  double step_ms = 0;           // the profiled step: window length / steps
  int64_t scopes = 0;           // module scope events in the window
  bool has_gpu = false;         // the window holds kernels with a correlation id
  bool has_flops = false;       // some CPU op in the window has args.flops
};

// depth <= 0: every path as recorded; depth N >= 1: rows aggregated by the first N path
// components. Empty rows when the window has no module scopes.
ModuleTable BuildModuleTable(const TraceData& trace, int depth = 0);

// Folded stacks (flamegraph.pl, speedscope, inferno): one line per distinct stack of CPU frames
// over the window, "frame;frame;... <µs>", frames outermost first: the module scopes (their
// paths) then the CPU ops and runtime calls nested in them; the weight is the self time of the
// last frame, in whole microseconds over the whole window (all steps), lines of 0 µs left out.
// Stacks outside any module are included (their first frame is an op). Lines sorted.
std::string FoldedStacks(const TraceData& trace);

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_ANALYSIS_MODULE_TABLE_H_
