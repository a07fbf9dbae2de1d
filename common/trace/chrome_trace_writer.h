// Writes a Chrome trace (the format torch.profiler exports and Perfetto / chrome://tracing open)
// from events the engine collected. Streaming: events go to the file as they are added.
//
// The engine's exporter feeds this writer and a TraceDataBuilder the same events in one pass
// (trace_sink.h): the job analyses in memory exactly what it writes, so a recorded profile and
// its trace analysed later agree.
#ifndef LIBREYOLO_COMMON_TRACE_CHROME_TRACE_WRITER_H_
#define LIBREYOLO_COMMON_TRACE_CHROME_TRACE_WRITER_H_

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/trace/trace_sink.h"

namespace libreyolo {

class ChromeTraceWriter final : public TraceSink {
 public:
  // Opens `path` for writing (truncating). The header carries schemaVersion, the
  // deviceProperties JSON list (may be "[]") and any extra top-level members.
  static absl::StatusOr<std::unique_ptr<ChromeTraceWriter>> Open(
      const std::string& path, const std::string& device_properties_json = "[]",
      const std::string& extra_members_json = "");
  ~ChromeTraceWriter();
  ChromeTraceWriter(const ChromeTraceWriter&) = delete;
  ChromeTraceWriter& operator=(const ChromeTraceWriter&) = delete;

  void AddSpan(const TraceSpan& s) override;
  void AddMemory(const TraceMemoryEvent& m) override;
  void AddFlow(const std::string& cat, int64_t id, int64_t from_pid, int64_t from_tid,
               double from_ts_us, int64_t to_pid, int64_t to_tid, double to_ts_us) override;
  void NameProcess(int64_t pid, const std::string& name) override;
  void NameThread(int64_t pid, int64_t tid, const std::string& name) override;
  void LabelProcess(int64_t pid, const std::string& labels) override;
  void SortProcess(int64_t pid, int64_t index) override;
  void SortThread(int64_t pid, int64_t tid, int64_t index) override;
  void AddProfilerSpan(double ts_us, double dur_us) override;

  // Closes the JSON and the file; reports any write error (disk full, ...).
  absl::Status Finish() override;

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
