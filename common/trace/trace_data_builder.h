// Builds TraceData (the analyser's compact form of a Chrome trace) from the events a producer
// emits, without JSON: what the trace reader would make of the same events once written and read
// back. The engine tees its exporter into a ChromeTraceWriter and one of these (trace_sink.h), so
// a job analyses in memory the very events it writes; `common_trace_data_builder_test` and the
// engine's job tests check the result against ReadTraceFile of the written trace
// (SameTraceData, the same parse stats).
//
// The classification of an event (kernel, CPU op, annotation, module scope, ...) is the
// reader's, shared through ClassifyCompleteEvent. Input Dims are expected as the exporter writes
// them (nested lists of integers) and are rendered like the reader renders them (Python's str()
// of the list).
#ifndef LIBREYOLO_COMMON_TRACE_TRACE_DATA_BUILDER_H_
#define LIBREYOLO_COMMON_TRACE_TRACE_DATA_BUILDER_H_

#include <optional>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "common/trace/trace_data.h"
#include "common/trace/trace_sink.h"

namespace libreyolo {

// What the trace reader accepts, shared with the builder. Ranges in microseconds: epoch
// timestamps are ~1.7e15 us today; with these bounds every end (ts + dur) and every difference of
// two times fits in int64 nanoseconds. Byte counts beyond 2^53 (8 PiB) are not real.
namespace trace_bounds {
inline constexpr double kMinTsUs = -1.0e15;
inline constexpr double kMaxTsUs = 4.0e15;
inline constexpr double kMaxDurUs = 4.0e15;
inline constexpr double kMaxBytes = 9007199254740992.0;  // 2^53
}  // namespace trace_bounds

// The class of a complete ("X") event by its category and name, as the trace reader decides it;
// nullopt for categories that only shape the window (e.g. "Trace").
std::optional<EventClass> ClassifyCompleteEvent(absl::string_view cat, absl::string_view name);

// An "Input Dims" JSON list rendered as the reader keeps it: "[[1, 3, 640, 640], []]".
std::string RenderInputDims(std::string_view json);

class TraceDataBuilder final : public TraceSink {
 public:
  // `device_properties_json`: the trace header's deviceProperties list ("[]" when none); the
  // first entry becomes TraceData::device as the reader reads it.
  explicit TraceDataBuilder(const std::string& device_properties_json = "[]");

  void AddSpan(const TraceSpan& s) override;
  void AddMemory(const TraceMemoryEvent& m) override;
  void AddFlow(const std::string& cat, int64_t id, int64_t from_pid, int64_t from_tid,
               double from_ts_us, int64_t to_pid, int64_t to_tid, double to_ts_us) override;
  void NameProcess(int64_t, const std::string&) override { ++data_.stats.events; }
  void NameThread(int64_t, int64_t, const std::string&) override { ++data_.stats.events; }
  void LabelProcess(int64_t, const std::string&) override { ++data_.stats.events; }
  void SortProcess(int64_t, int64_t) override { ++data_.stats.events; }
  void SortThread(int64_t, int64_t, int64_t) override { ++data_.stats.events; }
  void AddProfilerSpan(double ts_us, double dur_us) override;
  absl::Status Finish() override { return absl::OkStatus(); }

  // The events so far; the builder is empty afterwards.
  TraceData Take();

 private:
  uint32_t Thread(int64_t pid, int64_t tid);
  void Extent(int64_t ts_ns, int64_t dur_ns);

  TraceData data_;
  absl::flat_hash_map<std::pair<int64_t, int64_t>, uint32_t> threads_;
};

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_TRACE_TRACE_DATA_BUILDER_H_
