// One rank of a data-parallel training run on LibTorch's own c10d (issue 21, section 1), doing
// what torch.nn.parallel.DistributedDataParallel does around a step, without Python:
//
//   join      a TCPStore rendezvous (rank 0 serves it; every rank checks in under its own key,
//             so a rank that never comes is named), the device's backend (ProcessGroupGloo on
//             the CPU, ProcessGroupNCCL on CUDA) in a c10d::ProcessGroup, the parameters and
//             buffers broadcast from rank 0 (DDP's _sync_module_states), and c10d's Reducer over
//             the parameters, bucketed as DDP buckets them (a first bucket of 1 MiB, then
//             bucket_cap_mb each, in reverse parameter order)
//   forward   buffers broadcast from rank 0 (broadcast_buffers), the Reducer's rebuild of its
//             buckets in the gradients' real order after the first step, prepare_for_forward
//   backward  prepare_for_backward: the autograd hooks the Reducer installed all-reduce each
//             bucket as its last gradient is ready, overlapping the rest of the backward, and
//             the backward returns with the averaged gradients in place
//
// Every collective runs under the spec's timeout, so a peer that died or hangs fails the job on
// the others instead of holding them.
#ifndef LIBREYOLO_SERVER_ENGINE_TRAIN_DATA_PARALLEL_H_
#define LIBREYOLO_SERVER_ENGINE_TRAIN_DATA_PARALLEL_H_

#include <torch/nn/module.h>
#include <torch/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/engine/engine.h"
#include "server/engine/runtime/runtime_info.h"

namespace c10d {
class ProcessGroup;
class Reducer;
class Store;
}  // namespace c10d

namespace libreyolo::engine {

// What the profile says about the run's data parallelism (train_config.h writes it).
struct DataParallelFacts {
  std::string backend;  // "gloo", "nccl"
  int64_t rank = 0, world_size = 1;
  double bucket_cap_mb = 0;
  bool gradient_as_bucket_view = false, broadcast_buffers = true;
  int64_t buckets = 0;           // as built at join (the Reducer may rebuild them once)
  int64_t gradient_bytes = 0;    // what one step all-reduces: every trainable parameter
  int64_t parameters = 0;        // trainable parameter tensors
  // The largest |w - w on rank 0| over every parameter after the run (ReplicaDivergence): 0
  // when the replicas stayed in sync, as DDP keeps them. nullopt until measured.
  std::optional<double> replica_divergence;
};

class DataParallel {
 public:
  // Joins the run: the rendezvous, the process group, rank 0's weights and the Reducer. The
  // errors name the other ranks, not this one (the job's failures carry "rank R of N: ").
  // `model` must already be on `device`. DEADLINE_EXCEEDED when the rendezvous does not complete
  // within the timeout (the message names the ranks that never joined), INVALID_ARGUMENT for a
  // backend the device cannot use.
  static absl::StatusOr<std::unique_ptr<DataParallel>> Join(const DataParallelSpec& spec,
                                                            const DeviceChoice& device,
                                                            torch::nn::Module& model);
  ~DataParallel();
  DataParallel(const DataParallel&) = delete;
  DataParallel& operator=(const DataParallel&) = delete;

  void BeforeForward();
  void BeforeBackward();

  // Measures replica_divergence (one collective every rank must call at the same point).
  void MeasureReplicaDivergence();

  const DataParallelFacts& facts() const { return facts_; }

 private:
  DataParallel();

  DataParallelSpec spec_;
  DataParallelFacts facts_;
  c10::intrusive_ptr<c10d::Store> store_;
  c10::intrusive_ptr<c10d::ProcessGroup> group_;
  std::unique_ptr<c10d::Reducer> reducer_;
  std::vector<torch::Tensor> params_, buffers_;
};

}  // namespace libreyolo::engine

#endif  // LIBREYOLO_SERVER_ENGINE_TRAIN_DATA_PARALLEL_H_
