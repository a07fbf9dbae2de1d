// Facts about the process the profile records: CPU threads, which BLAS is loaded, the device.
#ifndef LIBREYOLO_SERVER_ENGINE_RUNTIME_RUNTIME_INFO_H_
#define LIBREYOLO_SERVER_ENGINE_RUNTIME_RUNTIME_INFO_H_

#include <string>

#include "absl/status/statusor.h"
#include "server/engine/runtime/cpu_threads.h"

namespace libreyolo::engine {

struct DeviceChoice {
  bool cuda = false;
  int index = -1;             // CUDA index
  std::string Label() const;  // "cpu" or "cuda:0"
};

// "cpu" or a CUDA index ("0", "1", "cuda:0"). FAILED_PRECONDITION when CUDA is asked for and
// LibTorch sees no CUDA device (the message says to use --device cpu); INVALID_ARGUMENT for junk.
absl::StatusOr<DeviceChoice> ParseDevice(const std::string& device);

// Sets LibTorch's intra-op threads: `threads` > 0, else every core (LibTorch defaults to 1 here),
// and OpenBLAS's pool to the same count when OpenBLAS is loaded (cpu_threads.h: otherwise its
// pool keeps every core whatever --threads says). Returns what is in effect, with the inter-op
// threads, the BLAS and libgomp's wait policy, for the profile's config.
ThreadSettings ConfigureThreads(int threads);

// The BLAS library this process loaded (from /proc/self/maps), e.g. "openblas-pthread" or
// "reference blas (libblas3: slow; install libopenblas0-pthread)"; "mkl (linked into LibTorch)"
// for the PyPI wheel, which links MKL statically; "unknown" elsewhere.
std::string LoadedBlas();

// "2.11.0" etc.
std::string LibTorchVersion();

}  // namespace libreyolo::engine

#endif  // LIBREYOLO_SERVER_ENGINE_RUNTIME_RUNTIME_INFO_H_
