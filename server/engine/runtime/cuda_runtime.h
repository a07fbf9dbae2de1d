// What a job asks of CUDA through LibTorch: is it usable, what is the device, what does the
// caching allocator hold, how long did the GPU take (CUDA events), autocast, cuDNN's settings.
// Compiled against a CUDA LibTorch on every machine (no #if): on a host without a driver or
// device each query answers FAILED_PRECONDITION whose message is the note a profile carries
// ("n/a" in the readers), never a crash. The driver is looked up with dlopen, never linked.
#ifndef LIBREYOLO_SERVER_ENGINE_RUNTIME_CUDA_RUNTIME_H_
#define LIBREYOLO_SERVER_ENGINE_RUNTIME_CUDA_RUNTIME_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/json/json_writer.h"
#include "common/profile/profile.h"

namespace libreyolo::engine {

// Whether CUDA work can run here. `note` says why not, naming the missing piece:
// "CUDA: no CUDA driver on this host (libcuda.so.1 not found)", "CUDA: this LibTorch was built
// without CUDA", "CUDA: the driver sees no device" (CUDA_VISIBLE_DEVICES, permissions).
struct CudaAvailability {
  bool usable = false;
  int device_count = 0;
  std::string note;  // empty when usable
};
CudaAvailability CheckCuda();

// FAILED_PRECONDITION carrying CheckCuda()'s note unless device `index` exists.
absl::Status RequireCudaDevice(int index);

// The device as the profile records it (type "cuda", name, index, SM count, memory in MB).
absl::StatusOr<DeviceInfo> CudaDeviceProperties(int index);

// "9.0": the compute capability, for the profile's config.
absl::StatusOr<std::string> CudaComputeCapability(int index);

// The caching allocator's counters for one device, in bytes: what tensors hold (allocated),
// what the allocator holds from the driver (reserved), and their peaks since the last
// ResetCudaAllocatorPeaks.
struct CudaAllocatorStats {
  int64_t allocated = 0;
  int64_t reserved = 0;
  int64_t peak_allocated = 0;
  int64_t peak_reserved = 0;
  // The whole device's memory in use (total minus free, cudaMemGetInfo): every process on a
  // shared GPU, this one's context included. -1 when the driver did not say.
  int64_t device_used = -1;
};
absl::StatusOr<CudaAllocatorStats> ReadCudaAllocator(int index);
absl::Status ResetCudaAllocatorPeaks(int index);
// Gives the allocator's cached, unused blocks back to the driver (between jobs on a shared box).
absl::Status ReleaseCudaCache(int index);
// Whether the device's CUDA context can still run work after a job: a sticky error (an illegal
// address, a device-side assert) fails every later call in this process. INTERNAL with CUDA's
// message when it cannot; the engine worker then exits so the daemon starts a fresh process.
absl::Status CheckCudaContext(int index);

// GPU time between Start() and Stop() on the device's current stream, from two CUDA events
// (what torch.cuda.Event(enable_timing=True) measures): the span the GPU spent on the work
// queued in between, with no host clock in it.
class CudaEventTimer {
 public:
  static absl::StatusOr<CudaEventTimer> Create(int index);
  CudaEventTimer(CudaEventTimer&&) noexcept;
  CudaEventTimer& operator=(CudaEventTimer&&) noexcept;
  ~CudaEventTimer();

  void Start();
  // Records the end event and waits for it. INTERNAL when CUDA reports an error.
  absl::StatusOr<double> StopMs();

 private:
  struct Impl;
  explicit CudaEventTimer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// float16 or bfloat16 autocast on CUDA for the scope's lifetime, switched off again (and its
// cast cache cleared) even when the work inside throws. `on` false: does nothing.
class CudaAutocast {
 public:
  CudaAutocast(bool on, bool bfloat16);
  ~CudaAutocast();
  CudaAutocast(const CudaAutocast&) = delete;
  CudaAutocast& operator=(const CudaAutocast&) = delete;

 private:
  bool on_;
  bool was_enabled_ = false;
};

// cuDNN as this process uses it, for the profile's config.
struct CudnnSettings {
  bool available = false;  // LibTorch has cuDNN and a driver to run it
  bool benchmark = false;  // torch.backends.cudnn.benchmark
  bool deterministic = false;
  int64_t version = 0;     // e.g. 91900; 0 when unknown
};
CudnnSettings ReadCudnnSettings();

// Sets torch.backends.cudnn.benchmark (autotuned convolution algorithms) for this process.
void SetCudnnBenchmark(bool on);

// Free and total device memory as the driver sees it (every process, LibTorch's cache included).
struct CudaMemInfo {
  int64_t free = 0;
  int64_t total = 0;
};
absl::StatusOr<CudaMemInfo> CudaMemoryInfo(int index);

// The profile config's CUDA facts for a job on device `index`: compute_capability,
// cudnn_version, cudnn_benchmark, cudnn_deterministic and device_reserved_at_start_mb (what the
// caching allocator held when the job began; null when unknown).
void WriteCudaFields(JsonWriter& w, int index, const std::optional<CudaAllocatorStats>& at_start);

}  // namespace libreyolo::engine

#endif  // LIBREYOLO_SERVER_ENGINE_RUNTIME_CUDA_RUNTIME_H_
