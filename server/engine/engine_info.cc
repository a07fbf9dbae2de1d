// The engine facts behind engine.h's daemon section.
#include <torch/cuda.h>
#include <torch/version.h>

#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "server/engine/engine.h"
#include "server/engine/runtime_info.h"

namespace libreyolo::engine {

std::string EngineLibTorchVersion() { return LibTorchVersion(); }

std::string EngineCudaVersion() {
#ifdef TORCH_CUDA_VERSION
  return TORCH_CUDA_VERSION;
#else
  return torch::cuda::is_available() ? "available" : "";
#endif
}

int EngineCudaDeviceCount() {
  try {
    return static_cast<int>(torch::cuda::device_count());
  } catch (...) {  // NOLINT(bugprone-empty-catch): no CUDA runtime means no devices
    return 0;
  }
}

std::string DescribeDevice(const std::string& device) {
  if (device == "cpu") {
    return absl::StrCat("cpu, ", std::thread::hardware_concurrency(), " cores, BLAS ",
                        LoadedBlas());
  }
  const int count = EngineCudaDeviceCount();
  if (count == 0) return "CUDA unavailable in this LibTorch/host (jobs on it fail)";
  return absl::StrFormat("CUDA device (%d visible)", count);
}

}  // namespace libreyolo::engine
