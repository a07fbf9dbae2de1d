// Writes a Chrome trace (the format torch.profiler exports and Perfetto / chrome://tracing open)
// from events the engine collected. Streaming: events go to the file as they are added.
//
// The engine writes profile_trace.json with this writer and then analyses that very file with
// the common analyser, so a recorded profile and its trace analysed later always agree.
#ifndef LIBREYOLO_COMMON_TRACE_CHROME_TRACE_WRITER_H_
#define LIBREYOLO_COMMON_TRACE_CHROME_TRACE_WRITER_H_

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

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

class ChromeTraceWriter {
 public:
  // Opens `path` for writing (truncating). The header carries schemaVersion, the
  // deviceProperties JSON list (may be "[]") and any extra top-level members.
  static absl::StatusOr<std::unique_ptr<ChromeTraceWriter>> Open(
      const std::string& path, const std::string& device_properties_json = "[]",
      const std::string& extra_members_json = "");
  ~ChromeTraceWriter();
  ChromeTraceWriter(const ChromeTraceWriter&) = delete;
  ChromeTraceWriter& operator=(const ChromeTraceWriter&) = delete;

  void AddSpan(const TraceSpan& s);
  void AddMemory(const TraceMemoryEvent& m);
  // A flow arrow as Kineto draws it, `cat` "ac2g" (launch call -> kernel) or "fwdbwd" (forward
  // op -> its backward): start on the source's thread at its start, finish bound to the
  // enclosing slice of the destination.
  void AddFlow(const std::string& cat, int64_t id, int64_t from_pid, int64_t from_tid,
               double from_ts_us, int64_t to_pid, int64_t to_tid, double to_ts_us);
  // Names a process or thread track (metadata events), e.g. "python3" / "stream 7".
  void NameProcess(int64_t pid, const std::string& name);
  void NameThread(int64_t pid, int64_t tid, const std::string& name);
  // Kineto's other track metadata: process_labels ("CPU", "GPU 0") and the sort indices that
  // order tracks in Perfetto and chrome://tracing.
  void LabelProcess(int64_t pid, const std::string& labels);
  void SortProcess(int64_t pid, int64_t index);
  void SortThread(int64_t pid, int64_t tid, int64_t index);
  // Kineto's record of the profiling session itself: the "PyTorch Profiler (0)" span on the
  // "Spans" track and its "Iteration Start" instant (HTA and TensorBoard look for them).
  void AddProfilerSpan(double ts_us, double dur_us);

  // Closes the JSON and the file; reports any write error (disk full, ...).
  absl::Status Finish();

 private:
  ChromeTraceWriter() = default;
  void BeginEvent();
  std::FILE* file_ = nullptr;
  std::string path_;
  bool first_ = true;
  bool finished_ = false;
  std::string buf_;
};

// JSON string literal with escapes (quotes included).
std::string JsonQuote(const std::string& s);

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_TRACE_CHROME_TRACE_WRITER_H_
