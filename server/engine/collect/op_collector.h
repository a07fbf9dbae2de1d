// Our own CPU-side op collector on LibTorch's RecordFunction callbacks (issue 13, section 1,
// first bullet): the start of the lighter collector that is to replace LibTorch's profiler on
// the CPU side. Off by default: nothing in a job uses it yet; bench/profiler_switch_cost
// measures it beside LibTorch's profiler (`--collector ours`), and LibTorch's profiler stays the
// collector of record and the cross-check.
//
// How it keeps its cost down: one global RecordFunction callback pair (ops, autograd nodes and
// our named ranges), no heap allocation per op (the start callback returns no ObserverContext;
// each thread keeps a stack of its open records), per-thread preallocated buffers registered
// once per thread, names interned per thread, one clock (steady_clock) for every timestamp,
// autograd's sequence number kept for forward/backward correlation, and input shapes (optional)
// stored as raw sizes and formatted only at Stop.
#ifndef LIBREYOLO_SERVER_ENGINE_COLLECT_OP_COLLECTOR_H_
#define LIBREYOLO_SERVER_ENGINE_COLLECT_OP_COLLECTOR_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "server/engine/collect/collected_trace.h"

namespace libreyolo::engine {

struct OpCollectorOptions {
  bool record_shapes = false;  // each op's input sizes (the "Input Dims" of the trace)
  int64_t reserve_per_thread = 1 << 15;  // records preallocated per thread
};

// One collection; at most one at a time per process.
class OpCollector {
 public:
  static absl::StatusOr<std::unique_ptr<OpCollector>> Start(const OpCollectorOptions& o);
  ~OpCollector();  // stops a collection still running, discarding its records
  OpCollector(const OpCollector&) = delete;
  OpCollector& operator=(const OpCollector&) = delete;

  // Stops and returns the records as CPU ops (kCpuOp) and named ranges (kUserAnnotation), in
  // start order per thread. Records still open at Stop are dropped and counted in a note.
  absl::StatusOr<CollectedTrace> Stop();

 private:
  OpCollector() = default;
  uint64_t handle_ = 0;
  bool running_ = false;
};

}  // namespace libreyolo::engine

#endif  // LIBREYOLO_SERVER_ENGINE_COLLECT_OP_COLLECTOR_H_
