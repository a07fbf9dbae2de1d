// LibTorch's profiler (the profiler_kineto.h API) as a collector: CPU operators with input
// shapes, FLOPs, memory events, autograd sequence numbers and the OS thread of each op, and our
// RECORD_USER_SCOPE ranges, timed to the nanosecond. We export the trace ourselves
// (trace_export.h); LibTorch's own Kineto export of the same window can be saved beside it
// (TorchProfilerOptions::kineto_trace_path) to cross-check the two.
#ifndef LIBREYOLO_SERVER_ENGINE_COLLECT_TORCH_PROFILER_H_
#define LIBREYOLO_SERVER_ENGINE_COLLECT_TORCH_PROFILER_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "server/engine/collect/collected_trace.h"

namespace c10 {
class DebugInfoBase;
}  // namespace c10

namespace libreyolo::engine {

// Which collector records the CPU side of a ProfilingSession (the job's `collector` option:
// "native" our RecordFunction collector, op_collector.h; "libtorch" LibTorch's profiler).
// TorchProfiler itself ignores it.
enum class CpuCollector : uint8_t { kNative, kLibTorch };

struct TorchProfilerOptions {
  CpuCollector cpu_collector = CpuCollector::kLibTorch;
  bool record_shapes = true;
  bool profile_memory = true;
  bool with_flops = true;
  bool cuda = false;  // also ask LibTorch for CUDA activity (Kineto's own CUPTI subscriber)
  // Non-empty: Stop() also saves LibTorch's own Chrome trace of the window here (Kineto's
  // export, as torch.profiler's export_chrome_trace writes it).
  std::string kineto_trace_path;
};

// One profiling session; at most one may be active per process (LibTorch's rule).
class TorchProfiler {
 public:
  static absl::StatusOr<std::unique_ptr<TorchProfiler>> Start(const TorchProfilerOptions& o);
  ~TorchProfiler();  // stops a session still running, discarding its events
  TorchProfiler(const TorchProfiler&) = delete;
  TorchProfiler& operator=(const TorchProfiler&) = delete;

  // Stops collection and converts LibTorch's events. Can be called once.
  absl::StatusOr<CollectedTrace> Stop();

  // Pauses collection on the calling thread (the one that started the session, and the
  // intra-op threads it hands work to, which copy its state) and Resume() restarts it: while
  // paused no op reaches LibTorch's callbacks (RecordFunction is off, as with no profiler at
  // all) and no allocation is reported (the session's memory reporter is off the thread), so a
  // paused window costs what an unprofiled one does and records nothing. The overhead probes
  // keep one session a round this way: a session per profiled window stopped (converting every
  // recorded event, hundreds of ms) right before the next unprofiled window, which profiled
  // windows never followed (docs/metrics.md). CPU activity only: a session with
  // CUDA activity keeps recording kernels while paused (FAILED_PRECONDITION).
  absl::Status Pause();
  absl::Status Resume();
  bool paused() const { return paused_; }

 private:
  TorchProfiler() = default;
  bool running_ = false;
  bool cuda_ = false;
  bool with_flops_ = false;  // our FLOP formulas over the recorded shapes (flop_attribution.h)
  bool paused_ = false;
  bool record_function_was_enabled_ = true;
  std::shared_ptr<c10::DebugInfoBase> paused_reporter_;  // the session's memory reporter while paused
  std::string kineto_trace_path_;
};

// Opens and closes a named range (ProfilerStep#N, step/forward ...) that the profiler records
// as a user annotation. RAII; cheap when no profiler is running.
class ScopedRange {
 public:
  explicit ScopedRange(const std::string& name);
  ~ScopedRange();
  ScopedRange(const ScopedRange&) = delete;
  ScopedRange& operator=(const ScopedRange&) = delete;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace libreyolo::engine

#endif  // LIBREYOLO_SERVER_ENGINE_COLLECT_TORCH_PROFILER_H_
