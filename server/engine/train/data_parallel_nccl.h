// ProcessGroupNCCL, built in its own translation unit: its header wants USE_C10D_NCCL and the
// CUDA toolkit's nccl.h, which nothing else in the engine needs.
#ifndef LIBREYOLO_SERVER_ENGINE_TRAIN_DATA_PARALLEL_NCCL_H_
#define LIBREYOLO_SERVER_ENGINE_TRAIN_DATA_PARALLEL_NCCL_H_

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>

namespace libreyolo::engine {

// A NCCL backend for `rank` of `size` over `store`, every collective bounded by `timeout`.
c10::intrusive_ptr<c10d::Backend> MakeNcclBackend(const c10::intrusive_ptr<c10d::Store>& store,
                                                  int rank, int size,
                                                  std::chrono::milliseconds timeout);

}  // namespace libreyolo::engine

#endif  // LIBREYOLO_SERVER_ENGINE_TRAIN_DATA_PARALLEL_NCCL_H_
