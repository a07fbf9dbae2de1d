// The compact in-memory form of a Chrome trace: only what the metrics need.
//
// A 1 GB trace holds millions of events; each is kept as a fixed-size record with interned
// strings, so peak memory stays a fraction of the file (docs/metrics.md lists what is used).
#ifndef LIBREYOLO_COMMON_TRACE_TRACE_DATA_H_
#define LIBREYOLO_COMMON_TRACE_TRACE_DATA_H_

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "common/profile/profile.h"

namespace libreyolo {

enum class EventClass : uint8_t {
  kKernel,
  kMemcpy,
  kMemset,
  kCpuOp,
  kAnnotation,
  kRuntime,
  kMemoryInstant,  // ph "i", name "[memory]"
  kFlowStart,      // ph "s", cat "ac2g"
  kFwdBwdStart,    // ph "s", cat "fwdbwd": Kineto's forward -> backward arrow, at a forward op
                   // whose autograd node ran in the same trace (the inferred forward phase)
  kModule,  // ph "X", name "nn.Module: ...", cat python_function (PyTorch's with_modules) or
            // user_annotation (our --with-modules): a module scope; only the per-layer view
            // (analysis/module_table.h) reads these
};

inline bool IsCpuSpan(EventClass c) {
  return c == EventClass::kCpuOp || c == EventClass::kAnnotation || c == EventClass::kRuntime;
}
inline bool IsGpuActivity(EventClass c) {
  return c == EventClass::kKernel || c == EventClass::kMemcpy || c == EventClass::kMemset;
}

inline constexpr int64_t kNoId = INT64_MIN;

// Sums of durations and byte counts saturate instead of overflowing: a hostile trace may hold
// many events with enormous values, and signed overflow is undefined behaviour.
inline void SatAdd(int64_t& acc, int64_t v) {
  if (__builtin_add_overflow(acc, v, &acc)) acc = v > 0 ? INT64_MAX : INT64_MIN;
}

// Interns strings: id 0 is always the empty string.
class StringTable {
 public:
  StringTable() { Intern(""); }
  uint32_t Intern(std::string_view s);
  const std::string& Get(uint32_t id) const { return strings_[id]; }
  size_t size() const { return strings_.size(); }

 private:
  std::deque<std::string> strings_;  // stable addresses for the string_view keys
  absl::flat_hash_map<std::string_view, uint32_t> ids_;
};

// 48 bytes: the fields that only some classes carry live in side tables, indexed by `aux`.
struct TraceEvent {
  int64_t ts_ns = 0;
  int64_t dur_ns = 0;
  int64_t correlation = kNoId;  // args.correlation, or the flow id for kFlowStart/kFwdBwdStart
  uint32_t name = 0;    // StringTable id
  uint32_t thread = 0;  // StringTable id of "pid/tid"
  uint32_t shapes = 0;  // StringTable id of args["Input Dims"] as compact JSON; 0 when absent
  // kCpuOp: 1 + index into TraceData::flops, 0 when the op has no args.flops.
  // kMemoryInstant: index into TraceData::memory.
  uint32_t aux = 0;
  EventClass cls = EventClass::kCpuOp;
  int8_t device_type = -1;  // memory instants: 0 CPU, 1 device
};

struct MemorySample {
  int64_t bytes = 0;             // Bytes: positive for allocations, negative for frees
  int64_t total_allocated = -1;  // Total Allocated after the event; -1 when absent
  int64_t total_reserved = -1;
};

struct StepMark {
  int64_t number = 0;
  int64_t ts_ns = 0;
  int64_t dur_ns = 0;
  bool cpu_copy = false;  // cat cpu_op or user_annotation
};

// Kineto's own notes on what it lost, from the log lines it writes into the trace's top level
// ("WARNING": [...], "ERROR": [...], its LoggerCollector's metadata). Only messages Kineto really
// writes are counted (libkineto/src/CuptiActivityApi.cpp, CuptiActivityProfiler.cpp):
//   "Exceeded max GPU buffer count (N >= M) - terminating tracing": the activity buffers
//     overflowed and collection stopped early;
//   "Dropped N activity records": CUPTI dropped records (Kineto asks only in verbose mode);
//   "GPU op timestamp (A) < runtime timestamp (B) by Nus": its own kernel-before-launch check.
struct KinetoMarkers {
  bool log_present = false;        // the trace has a top-level INFO, WARNING or ERROR key
  int64_t buffer_overflows = 0;    // "Exceeded max GPU buffer count" lines
  int64_t dropped_records = 0;     // sum of N over "Dropped N activity records" lines
  int64_t dropped_lines = 0;       // how many such lines
  int64_t timestamp_warnings = 0;  // "GPU op timestamp ... < runtime timestamp" lines
  std::vector<std::string> lines;  // the first few of them, as written (for the evidence)
};

struct TraceData {
  StringTable strings;
  std::vector<TraceEvent> events;  // file order
  std::vector<double> flops;         // args.flops of the CPU ops that carry it
  std::vector<MemorySample> memory;  // the [memory] instants' payloads
  std::vector<StepMark> steps;     // every ProfilerStep#N copy, file order
  // Extent of every complete event with a numeric ts (the window when there are no steps).
  int64_t min_ts_ns = INT64_MAX;
  int64_t max_end_ns = INT64_MIN;
  bool has_input_shapes = false;
  std::optional<DeviceInfo> device;
  ParseStats stats;
  KinetoMarkers kineto;

  // args.flops of a CPU op, or a negative value when it has none.
  double FlopsOf(const TraceEvent& e) const { return e.aux == 0 ? -1.0 : flops[e.aux - 1]; }
};

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_TRACE_TRACE_DATA_H_
