// One profiled window's collectors together: the CPU side (our RecordFunction collector,
// op_collector.h, or LibTorch's profiler, torch_profiler.h, as the options' cpu_collector says:
// ops, shapes, memory, FLOPs, our ranges) and, on a CUDA device, the CUPTI collector for GPU
// activity, merged into one CollectedTrace on the CPU clock. A Kineto-enabled LibTorch would
// also use CUPTI, so LibTorch is asked for CPU activity only while our CUPTI collector records;
// where that collector is not built, LibTorch's own CUDA activity is used instead (which needs
// LibTorch's profiler on the CPU side too), and the trace's notes say which.
#ifndef LIBREYOLO_SERVER_ENGINE_COLLECT_PROFILING_SESSION_H_
#define LIBREYOLO_SERVER_ENGINE_COLLECT_PROFILING_SESSION_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/engine/collect/collected_trace.h"
#include "server/engine/collect/torch_profiler.h"
#include "server/engine/job/overhead_budget.h"

namespace libreyolo::engine {

class CuptiCollector;
class OpCollector;

// A job's session options: its resolved switches, its collector ("native" or "libtorch", the
// job spec's `collector`), GPU activity when the job runs on CUDA and asked for it.
TorchProfilerOptions SessionOptions(const ResolvedSwitches& switches, const std::string& collector,
                                    bool cuda);

class ProfilingSession {
 public:
  // `options.cuda` asks for GPU activity (the job runs on CUDA and --activities has cuda).
  // Start, Pause, Resume and Stop on one thread.
  static absl::StatusOr<std::unique_ptr<ProfilingSession>> Start(
      const TorchProfilerOptions& options);
  ~ProfilingSession();
  ProfilingSession(const ProfilingSession&) = delete;
  ProfilingSession& operator=(const ProfilingSession&) = delete;

  // Stops both collectors (the caller synchronises the device first) and merges them.
  absl::StatusOr<CollectedTrace> Stop();

  // The overhead probes' unprofiled windows (TorchProfiler::Pause, OpCollector::Pause): CPU
  // activity only; a session recording GPU activity cannot pause (FAILED_PRECONDITION).
  absl::Status Pause();
  absl::Status Resume();

  // "cupti", "libtorch" (Kineto's CUDA activity) or "none".
  const std::string& gpu_collector() const { return gpu_collector_; }
  // "native" or "libtorch": who recorded the CPU side.
  const char* cpu_collector() const;

 private:
  ProfilingSession() = default;
  std::unique_ptr<TorchProfiler> torch_;
  std::unique_ptr<OpCollector> native_;
  std::unique_ptr<CuptiCollector> cupti_;
  std::string gpu_collector_ = "none";
  std::string note_;
};

}  // namespace libreyolo::engine

#endif  // LIBREYOLO_SERVER_ENGINE_COLLECT_PROFILING_SESSION_H_
