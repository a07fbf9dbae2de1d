#include "server/engine/runtime/cuda_runtime.h"

#include <ATen/Context.h>
#include <ATen/autocast_mode.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <torch/cuda.h>

#include <exception>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status/status_macros.h"

namespace libreyolo::engine {
namespace {

// The driver, looked up by name: its absence is the usual "no GPU here" and must not be a
// link-time or load-time failure.
bool DriverPresent() {
  static const bool present = [] {
    void* lib = ::dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (lib == nullptr) lib = ::dlopen("libcuda.so.1", RTLD_LAZY);
    return lib != nullptr;
  }();
  return present;
}

constexpr size_t kAggregate = static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE);

absl::Status CudaCallStatus(cudaError_t rc, const char* what) {
  if (rc == cudaSuccess) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(what, ": ", cudaGetErrorString(rc)));
}

}  // namespace

CudaAvailability CheckCuda() {
  CudaAvailability a;
  if (!at::detail::getCUDAHooks().hasCUDART()) {
    a.note = "CUDA: this LibTorch was built without CUDA; GPU jobs cannot run";
    return a;
  }
  if (!DriverPresent()) {
    a.note = "CUDA: no CUDA driver on this host (libcuda.so.1 not found); GPU jobs cannot run";
    return a;
  }
  try {
    a.device_count = static_cast<int>(torch::cuda::device_count());
  } catch (const std::exception& e) {
    a.note = absl::StrCat("CUDA: the driver failed to initialise: ", e.what());
    return a;
  }
  if (a.device_count == 0) {
    a.note =
        "CUDA: the driver sees no device (check CUDA_VISIBLE_DEVICES and the device files' "
        "permissions)";
    return a;
  }
  a.usable = true;
  return a;
}

absl::Status RequireCudaDevice(int index) {
  const CudaAvailability a = CheckCuda();
  if (!a.usable) return absl::FailedPreconditionError(a.note);
  if (index < 0 || index >= a.device_count) {
    return absl::FailedPreconditionError(
        absl::StrFormat("CUDA: no device %d (this host has %d)", index, a.device_count));
  }
  return absl::OkStatus();
}

absl::StatusOr<DeviceInfo> CudaDeviceProperties(int index) {
  RETURN_IF_ERROR(RequireCudaDevice(index));
  try {
    const cudaDeviceProp* prop = at::cuda::getDeviceProperties(static_cast<c10::DeviceIndex>(index));
    DeviceInfo d;
    d.type = "cuda";
    d.name = prop->name;
    d.index = index;
    d.sm_count = prop->multiProcessorCount;
    d.memory_mb = static_cast<double>(prop->totalGlobalMem) / 1e6;
    return d;
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("CUDA: reading device ", index, "'s properties: ",
                                            e.what()));
  }
}

absl::StatusOr<std::string> CudaComputeCapability(int index) {
  RETURN_IF_ERROR(RequireCudaDevice(index));
  const cudaDeviceProp* prop = at::cuda::getDeviceProperties(static_cast<c10::DeviceIndex>(index));
  return absl::StrCat(prop->major, ".", prop->minor);
}

absl::StatusOr<CudaAllocatorStats> ReadCudaAllocator(int index) {
  RETURN_IF_ERROR(RequireCudaDevice(index));
  try {
    const auto s =
        c10::cuda::CUDACachingAllocator::getDeviceStats(static_cast<c10::DeviceIndex>(index));
    CudaAllocatorStats out;
    out.allocated = s.allocated_bytes[kAggregate].current;
    out.peak_allocated = s.allocated_bytes[kAggregate].peak;
    out.reserved = s.reserved_bytes[kAggregate].current;
    out.peak_reserved = s.reserved_bytes[kAggregate].peak;
    const c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(index));
    size_t free_bytes = 0, total_bytes = 0;
    if (cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess) {
      out.device_used = static_cast<int64_t>(total_bytes - free_bytes);
    }
    return out;
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("CUDA: reading the caching allocator: ", e.what()));
  }
}

absl::Status ResetCudaAllocatorPeaks(int index) {
  RETURN_IF_ERROR(RequireCudaDevice(index));
  try {
    c10::cuda::CUDACachingAllocator::resetPeakStats(static_cast<c10::DeviceIndex>(index));
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("CUDA: resetting the allocator's peaks: ", e.what()));
  }
  return absl::OkStatus();
}

absl::Status ReleaseCudaCache(int index) {
  RETURN_IF_ERROR(RequireCudaDevice(index));
  try {
    c10::cuda::CUDACachingAllocator::emptyCache();
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("CUDA: releasing the allocator's cache: ", e.what()));
  }
  return absl::OkStatus();
}

absl::Status CheckCudaContext(int index) {
  RETURN_IF_ERROR(RequireCudaDevice(index));
  try {
    const c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(index));
    // A sticky error surfaces at the next synchronisation; a plain one is cleared by reading it.
    RETURN_IF_ERROR(CudaCallStatus(cudaDeviceSynchronize(), "cudaDeviceSynchronize"));
    (void)cudaGetLastError();
    RETURN_IF_ERROR(CudaCallStatus(cudaDeviceSynchronize(), "cudaDeviceSynchronize"));
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("CUDA: checking the context: ", e.what()));
  }
  return absl::OkStatus();
}

struct CudaEventTimer::Impl {
  c10::DeviceIndex device;
  c10::cuda::CUDAEvent start{cudaEventDefault};  // timing enabled (the default flag disables it)
  c10::cuda::CUDAEvent stop{cudaEventDefault};
};

CudaEventTimer::CudaEventTimer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CudaEventTimer::CudaEventTimer(CudaEventTimer&&) noexcept = default;
CudaEventTimer& CudaEventTimer::operator=(CudaEventTimer&&) noexcept = default;
CudaEventTimer::~CudaEventTimer() = default;

absl::StatusOr<CudaEventTimer> CudaEventTimer::Create(int index) {
  RETURN_IF_ERROR(RequireCudaDevice(index));
  auto impl = std::make_unique<Impl>();
  impl->device = static_cast<c10::DeviceIndex>(index);
  return CudaEventTimer(std::move(impl));
}

void CudaEventTimer::Start() {
  impl_->start.record(c10::cuda::getCurrentCUDAStream(impl_->device));
}

absl::StatusOr<double> CudaEventTimer::StopMs() {
  try {
    impl_->stop.record(c10::cuda::getCurrentCUDAStream(impl_->device));
    impl_->stop.synchronize();
    return static_cast<double>(impl_->start.elapsed_time(impl_->stop));
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("CUDA: timing with events: ", e.what()));
  }
}

CudaAutocast::CudaAutocast(bool on, bool bfloat16) : on_(on) {
  if (!on_) return;
  was_enabled_ = at::autocast::is_autocast_enabled(at::kCUDA);
  at::autocast::set_autocast_enabled(at::kCUDA, true);
  at::autocast::set_autocast_dtype(at::kCUDA, bfloat16 ? at::kBFloat16 : at::kHalf);
  at::autocast::increment_nesting();
}

CudaAutocast::~CudaAutocast() {
  if (!on_) return;
  // As torch.autocast's __exit__: the cast cache lives until the outermost scope ends.
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  at::autocast::set_autocast_enabled(at::kCUDA, was_enabled_);
}

CudnnSettings ReadCudnnSettings() {
  CudnnSettings s;
  s.benchmark = at::globalContext().benchmarkCuDNN();
  s.deterministic = at::globalContext().deterministicCuDNN();
  s.available = DriverPresent() && at::detail::getCUDAHooks().hasCuDNN();
  if (s.available) {
    try {
      s.version = at::detail::getCUDAHooks().versionCuDNN();
    } catch (const std::exception&) {  // NOLINT(bugprone-empty-catch): version stays unknown
    }
  }
  return s;
}

void SetCudnnBenchmark(bool on) { at::globalContext().setBenchmarkCuDNN(on); }

absl::StatusOr<CudaMemInfo> CudaMemoryInfo(int index) {
  RETURN_IF_ERROR(RequireCudaDevice(index));
  const c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(index));
  size_t free_bytes = 0, total_bytes = 0;
  RETURN_IF_ERROR(CudaCallStatus(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo"));
  return CudaMemInfo{static_cast<int64_t>(free_bytes), static_cast<int64_t>(total_bytes)};
}

void WriteCudaFields(JsonWriter& w, int index, const std::optional<CudaAllocatorStats>& at_start) {
  if (auto cc = CudaComputeCapability(index); cc.ok()) {
    w.Field("compute_capability", *cc);
  } else {
    w.Key("compute_capability").Null();
  }
  const CudnnSettings cudnn = ReadCudnnSettings();
  if (cudnn.available && cudnn.version > 0) {
    w.Field("cudnn_version", cudnn.version);
  } else {
    w.Key("cudnn_version").Null();
  }
  w.Field("cudnn_benchmark", cudnn.benchmark).Field("cudnn_deterministic", cudnn.deterministic);
  if (at_start) {
    w.Field("device_reserved_at_start_mb", static_cast<double>(at_start->reserved) / 1e6);
  } else {
    w.Key("device_reserved_at_start_mb").Null();
  }
  if (at_start && at_start->device_used >= 0) {
    w.Field("device_used_at_start_mb", static_cast<double>(at_start->device_used) / 1e6);
  } else {
    w.Key("device_used_at_start_mb").Null();
  }
}

}  // namespace libreyolo::engine
