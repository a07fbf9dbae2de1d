// What the collectors hand to the trace exporter: plain events, no LibTorch or CUPTI types.
#ifndef LIBREYOLO_SERVER_ENGINE_COLLECT_COLLECTED_TRACE_H_
#define LIBREYOLO_SERVER_ENGINE_COLLECT_COLLECTED_TRACE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/trace/flop_formulas.h"

namespace libreyolo::engine {

enum class CollectedKind : uint8_t {
  kCpuOp,           // an aten / autograd operator (RecordFunction scope FUNCTION/BACKWARD)
  kUserAnnotation,  // a RECORD_USER_SCOPE range: ProfilerStep#N, step/<phase>
  kMemory,          // an allocation (+bytes) or free (-bytes)
  kKernel,          // GPU activity from CUPTI
  kMemcpy,
  kMemset,
  kRuntime,         // CUDA runtime / driver API call
};

struct CollectedEvent {
  CollectedKind kind = CollectedKind::kCpuOp;
  std::string name;
  int64_t start_ns = 0;  // absolute, in the CPU clock the profiler reports
  int64_t dur_ns = 0;
  uint64_t thread = 0;   // CPU thread id, or the stream id for GPU activity
  int device_index = -1;
  std::string input_dims_json;         // "[[1, 3, 640, 640], [16, 3, 3, 3], ...]"
  std::optional<double> flops;
  // kCpuOp of the FLOP formula table (common/trace/flop_formulas.h): its inputs as the formulas
  // read them, turned into `flops` by AttributeFlops (flop_attribution.h) and dropped there.
  std::vector<FlopArg> flop_args;
  int64_t bytes = 0;                   // kMemory
  int device_type = 0;                 // kMemory: 0 CPU, 1 CUDA
  std::optional<int64_t> correlation;  // links a kernel to its launch call
  std::string extra_args_json;         // kernel grid/block/registers/shared memory, ...
  // kMemory: the device's running totals after this event, when the collector knows them.
  // Unset: the exporter keeps a running sum per device from `bytes`.
  std::optional<int64_t> total_allocated;
  std::optional<int64_t> total_reserved;
  // kMemory: a cudaMalloc/cudaFree of device memory (CUPTI), i.e. the caching allocator growing
  // or shrinking its pool: `bytes` changes Total Reserved, not Total Allocated.
  bool reservation = false;
  // kCpuOp: autograd's sequence number (links a forward op to its backward) and, on backward
  // ops, the thread the forward ran on (0 on forward ops), as Kineto writes them.
  std::optional<int64_t> sequence_nr;
  std::optional<uint64_t> fwd_thread;
};

// Two clocks read back to back: the CPU clock before and after reading the other one.
struct ClockSample {
  int64_t cpu_before_ns = 0;
  int64_t other_ns = 0;
  int64_t cpu_after_ns = 0;
};

struct CollectedTrace {
  std::vector<CollectedEvent> events;
  std::string device_properties_json = "[]";
  std::vector<std::string> notes;  // e.g. "CUPTI: no CUDA driver; GPU activity not recorded"
  // Collectors whose timestamps are in another clock (CUPTI) leave them unconverted and hand
  // these samples along (see MergeGpuActivity); empty when the events are in the CPU clock.
  std::vector<ClockSample> clock_samples;
};

}  // namespace libreyolo::engine

#endif  // LIBREYOLO_SERVER_ENGINE_COLLECT_COLLECTED_TRACE_H_
