// The CUPTI collector: GPU kernels, memcpys, memsets, CUDA runtime and driver API calls, device
// properties and device-memory cudaMalloc/cudaFree, through CUPTI's activity API. Torch-free.
//
// A Kineto-enabled LibTorch also drives CUPTI (CUPTI has one activity client per process), so a
// job must not ask LibTorch's profiler for CUDA activity (TorchProfilerOptions::cuda) while this
// collector runs: LibTorch records the CPU side, this collector the GPU side, and
// MergeGpuActivity (cupti_convert.h) joins them.
//
// Where it cannot record (a build without CUPTI, a host without the CUDA driver or a device, or
// CUPTI refusing to start), Start still succeeds, in an inactive state, and Stop returns an empty
// trace whose notes hold one line saying why, e.g.
//   "CUPTI: no CUDA driver on this host (libcuda.so.1 not found); GPU activity not recorded".
// A profile made there is still complete on the CPU side; the note says what is missing.
#ifndef LIBREYOLO_SERVER_ENGINE_COLLECT_CUPTI_COLLECTOR_H_
#define LIBREYOLO_SERVER_ENGINE_COLLECT_CUPTI_COLLECTOR_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "server/engine/collect/collected_trace.h"

namespace libreyolo::engine {

struct CuptiOptions {
  size_t buffer_bytes = size_t{8} << 20;  // one activity buffer handed to CUPTI
  bool api_calls = true;                  // CUDA runtime and driver API calls
  bool memory = true;                     // cudaMalloc/cudaFree of device memory (MEMORY2)
  // The CPU clock the CPU-side events use (LibTorch reports CLOCK_REALTIME); sampled against
  // CUPTI's clock at Start and Stop so MergeGpuActivity can align them. Unset: CLOCK_REALTIME.
  std::function<int64_t()> cpu_clock_ns;
};

// One collection; at most one per process (CUPTI's activity API is process-wide).
class CuptiCollector {
 public:
  // FAILED_PRECONDITION when another collection is running in this process. Otherwise OK,
  // recording or inactive (see above).
  static absl::StatusOr<std::unique_ptr<CuptiCollector>> Start(const CuptiOptions& options);
  ~CuptiCollector();  // stops a collection still running, discarding its records
  CuptiCollector(const CuptiCollector&) = delete;
  CuptiCollector& operator=(const CuptiCollector&) = delete;

  // True when GPU activity is being recorded; false in the inactive state.
  bool active() const { return active_; }

  // Stops and returns the GPU activity in CUPTI's clock with the clock samples to align it
  // (MergeGpuActivity does). Can be called once.
  absl::StatusOr<CollectedTrace> Stop();

 private:
  CuptiCollector() = default;
  bool active_ = false;
  bool stopped_ = false;
  std::string inactive_note_;
  CuptiOptions options_;
  void* libcuda_ = nullptr;  // dlopen handle of the driver, for device attributes
  // The activity kinds Start enabled (CUpti_ActivityKind, its name): the ones Stop disables.
  std::vector<std::pair<int, const char*>> enabled_kinds_;
};

// Whether this build has the real collector (LIBREYOLO_CUPTI found CUPTI).
bool CuptiBuilt();

}  // namespace libreyolo::engine

#endif  // LIBREYOLO_SERVER_ENGINE_COLLECT_CUPTI_COLLECTOR_H_
