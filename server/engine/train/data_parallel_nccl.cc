#include "server/engine/train/data_parallel_nccl.h"

#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>

namespace libreyolo::engine {

c10::intrusive_ptr<c10d::Backend> MakeNcclBackend(const c10::intrusive_ptr<c10d::Store>& store,
                                                  int rank, int size,
                                                  std::chrono::milliseconds timeout) {
  auto options = c10d::ProcessGroupNCCL::Options::create();
  options->timeout = timeout;
  return c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, size, options);
}

}  // namespace libreyolo::engine
