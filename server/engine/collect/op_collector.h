// Our own CPU-side collector on LibTorch's RecordFunction callbacks (issue 13, section 1): the
// `native` collector of a job's profiler options (`--collector native`), recording what
// LibTorch's profiler records on the CPU side (ops with their input shapes, FLOPs and autograd
// links, our named ranges, allocations and frees) at a fraction of its cost per op. LibTorch's
// profiler (torch_profiler.h) stays as the `libtorch` collector: the fallback and the
// cross-check (tests/engine/collect/op_collector_test.cc compares the two on one window).
//
// How it keeps its cost down (bench/profiler_switch_cost prints it beside LibTorch's profiler):
// - one thread-local RecordFunction callback pair, registered on the thread that starts the
//   collection and inherited, as LibTorch's is, by the threads that copy its state (autograd's
//   device threads, at::launch); the start callback returns no ObserverContext: no heap
//   allocation per op, each thread keeps a stack of its open records;
// - per-thread buffers preallocated and registered once per thread and collection, taken by an
//   uncontended lock;
// - names interned per thread through a pointer-keyed cache (a string compare on a hit, no
//   allocation, no hash of the name);
// - one clock (CLOCK_MONOTONIC) for every timestamp, moved to the CPU clock of the trace
//   (CLOCK_REALTIME, what LibTorch and the CUPTI collector report) once, at Stop;
// - input shapes stored as raw sizes and formatted at Stop; FLOPs: the convolutions and matrix
//   products of our formula table (common/trace/flop_formulas.h, any aten entry point) keep
//   their inputs' sizes and scalar arguments and are counted at Stop, once per chain
//   (flop_attribution.h); the other ops LibTorch counts (add, mul) keep the arguments it needs
//   (torch::profiler::impl::saveExtraArgs) and are counted at Stop (computeFlops); every other
//   op name is tried once and skipped after;
// - allocations reported through c10's memory reporting hook, the slot LibTorch's profiler
//   uses (so the two are never both recording memory on one thread).
#ifndef LIBREYOLO_SERVER_ENGINE_COLLECT_OP_COLLECTOR_H_
#define LIBREYOLO_SERVER_ENGINE_COLLECT_OP_COLLECTOR_H_

#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/engine/collect/collected_trace.h"

namespace libreyolo::engine {

struct OpCollectorOptions {
  bool record_shapes = false;   // each op's input sizes (the trace's "Input Dims")
  bool profile_memory = false;  // [memory] events: every allocation and free, CPU and CUDA
  bool with_flops = false;      // FLOPs: convolutions and matrix products (ours), add, mul ...
  int64_t reserve_per_thread = 1 << 15;  // records preallocated per thread
};

// One collection; at most one at a time per process. Start, Pause, Resume and Stop on one
// thread (the callback is that thread's; FAILED_PRECONDITION from another).
class OpCollector {
 public:
  static absl::StatusOr<std::unique_ptr<OpCollector>> Start(const OpCollectorOptions& o);
  ~OpCollector();  // stops a collection still running, discarding its records unconverted
  OpCollector(const OpCollector&) = delete;
  OpCollector& operator=(const OpCollector&) = delete;

  // Stops and returns the records as CPU ops (kCpuOp), named ranges (kUserAnnotation) and
  // memory events (kMemory), timestamps in CLOCK_REALTIME nanoseconds, in start order per
  // thread. Records still open at Stop are dropped and counted in a note.
  absl::StatusOr<CollectedTrace> Stop();

  // While paused no op reaches the callbacks (RecordFunction skips a disabled callback) and no
  // allocation is reported: a paused window costs what an unprofiled one does and records
  // nothing (the overhead probes, overhead_budget.h).
  absl::Status Pause();
  absl::Status Resume();
  bool paused() const { return paused_; }

  // Whether a collection is running in this process.
  static bool Active();

 private:
  OpCollector() = default;
  absl::Status OnOwnerThread(const char* what) const;
  // Removes the callback and the memory hook and hands over the threads' buffers (type-erased:
  // the record types live in the .cc).
  std::vector<std::shared_ptr<void>> Detach();
  uint64_t handle_ = 0;
  bool running_ = false;
  bool paused_ = false;
  bool memory_ = false;
  std::thread::id owner_;
  int64_t realtime_minus_monotonic_ns_ = 0;
};

}  // namespace libreyolo::engine

#endif  // LIBREYOLO_SERVER_ENGINE_COLLECT_OP_COLLECTOR_H_
