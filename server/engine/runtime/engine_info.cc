// The engine facts behind engine.h's daemon section.
#include <ATen/detail/CUDAHooksInterface.h>
#include <torch/version.h>

#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "server/engine/engine.h"
#include "server/engine/runtime/cuda_runtime.h"
#include "server/engine/runtime/runtime_info.h"

namespace libreyolo::engine {

std::string EngineLibTorchVersion() { return LibTorchVersion(); }

std::string EngineCudaVersion() {
  // The CUDA runtime this LibTorch was built with (13000 -> "13.0"); empty for a CPU build.
  if (!at::detail::getCUDAHooks().hasCUDART()) return "";
  const long v = at::detail::getCUDAHooks().versionCUDART();
  return absl::StrFormat("%d.%d", v / 1000, (v % 1000) / 10);
}

int EngineCudaDeviceCount() { return CheckCuda().device_count; }

std::string DescribeDevice(const std::string& device) {
  if (device == "cpu") {
    return absl::StrCat("cpu, ", std::thread::hardware_concurrency(), " cores, BLAS ",
                        LoadedBlas());
  }
  const CudaAvailability cuda = CheckCuda();
  if (!cuda.usable) return cuda.note;
  auto index = ParseDevice(device);
  if (!index.ok()) return std::string(index.status().message());
  auto props = CudaDeviceProperties(index->index);
  if (!props.ok()) return std::string(props.status().message());
  return absl::StrFormat("%s, %d SMs, %.0f MB (%d CUDA device(s) visible)", props->name,
                         props->sm_count.value_or(0), props->memory_mb.value_or(0),
                         cuda.device_count);
}

}  // namespace libreyolo::engine
