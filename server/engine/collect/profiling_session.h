// One profiled window's collectors together: LibTorch's profiler for the CPU side (ops, shapes,
// memory, FLOPs, our ranges) and, on a CUDA device, the CUPTI collector for GPU activity, merged
// into one CollectedTrace on the CPU clock. A Kineto-enabled LibTorch would also use CUPTI, so
// LibTorch is asked for CPU activity only while our collector records; where our collector is
// not built, LibTorch's own CUDA activity is used instead (and the trace's notes say which).
#ifndef LIBREYOLO_SERVER_ENGINE_COLLECT_PROFILING_SESSION_H_
#define LIBREYOLO_SERVER_ENGINE_COLLECT_PROFILING_SESSION_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "server/engine/collect/collected_trace.h"
#include "server/engine/collect/torch_profiler.h"

namespace libreyolo::engine {

class CuptiCollector;

class ProfilingSession {
 public:
  // `options.cuda` asks for GPU activity (the job runs on CUDA and --activities has cuda).
  static absl::StatusOr<std::unique_ptr<ProfilingSession>> Start(
      const TorchProfilerOptions& options);
  ~ProfilingSession();
  ProfilingSession(const ProfilingSession&) = delete;
  ProfilingSession& operator=(const ProfilingSession&) = delete;

  // Stops both collectors (the caller synchronises the device first) and merges them.
  absl::StatusOr<CollectedTrace> Stop();

  // "cupti", "libtorch" (Kineto's CUDA activity) or "none".
  const std::string& gpu_collector() const { return gpu_collector_; }

 private:
  ProfilingSession() = default;
  std::unique_ptr<TorchProfiler> torch_;
  std::unique_ptr<CuptiCollector> cupti_;
  std::string gpu_collector_ = "none";
  std::string note_;
};

}  // namespace libreyolo::engine

#endif  // LIBREYOLO_SERVER_ENGINE_COLLECT_PROFILING_SESSION_H_
