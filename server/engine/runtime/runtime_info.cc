#include "server/engine/runtime/runtime_info.h"

#include <ATen/Context.h>
#include <torch/cuda.h>
#include <torch/utils.h>
#include <torch/version.h>

#include <fstream>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "server/engine/runtime/cuda_runtime.h"

namespace libreyolo::engine {

std::string DeviceChoice::Label() const { return cuda ? absl::StrCat("cuda:", index) : "cpu"; }

absl::StatusOr<DeviceChoice> ParseDevice(const std::string& device) {
  DeviceChoice d;
  if (device == "cpu" || device == "CPU") return d;
  absl::string_view rest = device;
  absl::ConsumePrefix(&rest, "cuda:");
  int index = -1;
  if (!absl::SimpleAtoi(rest, &index) || index < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--device '", device, "' is not 'cpu' or a CUDA index such as 0"));
  }
  const CudaAvailability cuda = CheckCuda();
  if (!cuda.usable) {
    return absl::FailedPreconditionError(
        absl::StrCat("--device ", device, ": ", cuda.note, "; use --device cpu"));
  }
  if (index >= cuda.device_count) {
    return absl::FailedPreconditionError(absl::StrCat(
        "--device ", device, ": this host has ", cuda.device_count, " CUDA device(s) (0..",
        cuda.device_count - 1, ")"));
  }
  d.cuda = true;
  d.index = index;
  return d;
}

ThreadSettings ConfigureThreads(int threads) {
  const int n = threads > 0 ? threads : static_cast<int>(std::thread::hardware_concurrency());
  torch::set_num_threads(std::max(n, 1));
  ThreadSettings t;
  t.threads = torch::get_num_threads();
  t.interop_threads = static_cast<int>(torch::get_num_interop_threads());
  t.blas = LoadedBlas();
  t.blas_threads = SetOpenBlasThreads(t.threads);
  t.omp_wait_policy = OmpWaitPolicy();
  return t;
}

std::string LoadedBlas() {
  // The PyPI wheel links MKL into libtorch_cpu statically: LibTorch's GEMMs go there whatever
  // other BLAS a library (OpenCV's LAPACK) maps into the process.
  if (at::hasMKL()) return "mkl (linked into LibTorch)";
  std::ifstream maps("/proc/self/maps");
  std::string line;
  std::string found;
  while (std::getline(maps, line)) {
    if (absl::StrContains(line, "openblas")) {
      return absl::StrContains(line, "pthread")  ? "openblas-pthread"
             : absl::StrContains(line, "openmp") ? "openblas-openmp"
                                                 : "openblas";
    }
    if (absl::StrContains(line, "libmkl")) return "mkl";
    if (absl::StrContains(line, "libblis")) return "blis";
    if (absl::StrContains(line, "libblas.so")) found = "reference blas";
  }
  if (found == "reference blas") {
    return "reference blas (libblas3: slow; install libopenblas0-pthread)";
  }
  return found.empty() ? "unknown" : found;
}

std::string LibTorchVersion() { return TORCH_VERSION; }

}  // namespace libreyolo::engine
