// Where a Chrome trace's events go as they are produced: a file (ChromeTraceWriter), the
// analyser's in-memory form (TraceDataBuilder), or both at once (TeeTraceSink). One producer
// (the engine's exporter) feeds them all, so a job's written trace and the events it analysed in
// memory are the same events by construction.
#ifndef LIBREYOLO_COMMON_TRACE_TRACE_SINK_H_
#define LIBREYOLO_COMMON_TRACE_TRACE_SINK_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"

namespace libreyolo {

// One complete event ("ph": "X"). Category strings follow Kineto: cpu_op, user_annotation,
// kernel, gpu_memcpy, gpu_memset, cuda_runtime, cuda_driver.
struct TraceSpan {
  std::string cat;
  std::string name;
  int64_t pid = 0;
  int64_t tid = 0;
  double ts_us = 0;
  double dur_us = 0;
  std::optional<int64_t> correlation;  // args.correlation (kernels and their launch calls)
  std::optional<int64_t> external_id;  // args["External id"]
  std::string input_dims_json;         // args["Input Dims"], a JSON list; empty when none
  std::optional<double> flops;         // args.flops
  // Extra args as already-rendered JSON members, e.g. "\"stream\": 7, \"grid\": [1, 2, 1]".
  std::string extra_args_json;
};

// A [memory] instant ("ph": "i") as the PyTorch profiler records allocations.
struct TraceMemoryEvent {
  int64_t pid = 0;
  int64_t tid = 0;
  double ts_us = 0;
  int device_type = 0;  // 0 CPU, 1 CUDA
  int device_index = -1;
  int64_t bytes = 0;
  int64_t total_allocated = 0;
  int64_t total_reserved = 0;
};

class TraceSink {
 public:
  virtual ~TraceSink() = default;

  virtual void AddSpan(const TraceSpan& s) = 0;
  virtual void AddMemory(const TraceMemoryEvent& m) = 0;
  // A flow arrow as Kineto draws it, `cat` "ac2g" (launch call -> kernel) or "fwdbwd" (forward
  // op -> its backward): start on the source's thread at its start, finish bound to the
  // enclosing slice of the destination.
  virtual void AddFlow(const std::string& cat, int64_t id, int64_t from_pid, int64_t from_tid,
                       double from_ts_us, int64_t to_pid, int64_t to_tid, double to_ts_us) = 0;
  // Track metadata (metadata events "M"): process and thread names, Kineto's process_labels and
  // the sort indices that order tracks in Perfetto and chrome://tracing.
  virtual void NameProcess(int64_t pid, const std::string& name) = 0;
  virtual void NameThread(int64_t pid, int64_t tid, const std::string& name) = 0;
  virtual void LabelProcess(int64_t pid, const std::string& labels) = 0;
  virtual void SortProcess(int64_t pid, int64_t index) = 0;
  virtual void SortThread(int64_t pid, int64_t tid, int64_t index) = 0;
  // Kineto's record of the profiling session itself: the "PyTorch Profiler (0)" span on the
  // "Spans" track and its "Iteration Start" instant (HTA and TensorBoard look for them).
  virtual void AddProfilerSpan(double ts_us, double dur_us) = 0;
  // After the last event: any error of the sink (a write that failed).
  virtual absl::Status Finish() = 0;
};

// Every call goes to both sinks, `a` first; Finish reports the first error.
class TeeTraceSink final : public TraceSink {
 public:
  TeeTraceSink(TraceSink& a, TraceSink& b) : a_(a), b_(b) {}
  void AddSpan(const TraceSpan& s) override { a_.AddSpan(s), b_.AddSpan(s); }
  void AddMemory(const TraceMemoryEvent& m) override { a_.AddMemory(m), b_.AddMemory(m); }
  void AddFlow(const std::string& cat, int64_t id, int64_t from_pid, int64_t from_tid,
               double from_ts_us, int64_t to_pid, int64_t to_tid, double to_ts_us) override {
    a_.AddFlow(cat, id, from_pid, from_tid, from_ts_us, to_pid, to_tid, to_ts_us);
    b_.AddFlow(cat, id, from_pid, from_tid, from_ts_us, to_pid, to_tid, to_ts_us);
  }
  void NameProcess(int64_t pid, const std::string& name) override {
    a_.NameProcess(pid, name), b_.NameProcess(pid, name);
  }
  void NameThread(int64_t pid, int64_t tid, const std::string& name) override {
    a_.NameThread(pid, tid, name), b_.NameThread(pid, tid, name);
  }
  void LabelProcess(int64_t pid, const std::string& labels) override {
    a_.LabelProcess(pid, labels), b_.LabelProcess(pid, labels);
  }
  void SortProcess(int64_t pid, int64_t index) override {
    a_.SortProcess(pid, index), b_.SortProcess(pid, index);
  }
  void SortThread(int64_t pid, int64_t tid, int64_t index) override {
    a_.SortThread(pid, tid, index), b_.SortThread(pid, tid, index);
  }
  void AddProfilerSpan(double ts_us, double dur_us) override {
    a_.AddProfilerSpan(ts_us, dur_us), b_.AddProfilerSpan(ts_us, dur_us);
  }
  absl::Status Finish() override {
    absl::Status first = a_.Finish();
    absl::Status second = b_.Finish();
    return first.ok() ? second : first;
  }

 private:
  TraceSink& a_;
  TraceSink& b_;
};

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_TRACE_TRACE_SINK_H_
