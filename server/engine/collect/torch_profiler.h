// LibTorch's profiler (the profiler_kineto.h API) as a collector: CPU operators with input
// shapes, FLOPs and memory events, and our RECORD_USER_SCOPE ranges. Works on Debian's CPU
// LibTorch, which has no Kineto and so cannot save a trace itself: we export it ourselves.
#ifndef LIBREYOLO_SERVER_ENGINE_COLLECT_TORCH_PROFILER_H_
#define LIBREYOLO_SERVER_ENGINE_COLLECT_TORCH_PROFILER_H_

#include <memory>

#include "absl/status/statusor.h"
#include "server/engine/collect/collected_trace.h"

namespace libreyolo::engine {

struct TorchProfilerOptions {
  bool record_shapes = true;
  bool profile_memory = true;
  bool with_flops = true;
  bool with_stack = false;
  bool cuda = false;  // also ask LibTorch for CUDA activity (needs a Kineto-enabled LibTorch)
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

 private:
  TorchProfiler() = default;
  bool running_ = false;
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
