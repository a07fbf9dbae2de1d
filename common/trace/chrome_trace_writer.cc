#include "common/trace/chrome_trace_writer.h"

#include <cerrno>
#include <cstring>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace libreyolo {
namespace {

constexpr size_t kFlushBytes = 1 << 20;

// Microseconds with nanosecond resolution, as Kineto writes them.
std::string Us(double v) { return absl::StrFormat("%.3f", v); }

}  // namespace

std::string JsonQuote(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += absl::StrFormat("\\u%04x", static_cast<unsigned char>(c));
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

absl::StatusOr<std::unique_ptr<ChromeTraceWriter>> ChromeTraceWriter::Open(
    const std::string& path, const std::string& device_properties_json,
    const std::string& extra_members_json) {
  std::unique_ptr<ChromeTraceWriter> w(new ChromeTraceWriter());
  w->path_ = path;
  w->file_ = std::fopen(path.c_str(), "wb");
  if (w->file_ == nullptr) {
    return absl::UnavailableError(
        absl::StrCat("cannot write ", path, ": ", std::strerror(errno)));
  }
  absl::StrAppend(&w->buf_, "{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": ",
                  device_properties_json.empty() ? "[]" : device_properties_json, ",\n");
  if (!extra_members_json.empty()) absl::StrAppend(&w->buf_, "  ", extra_members_json, ",\n");
  absl::StrAppend(&w->buf_, "  \"traceEvents\": [");
  return w;
}

ChromeTraceWriter::~ChromeTraceWriter() {
  if (file_ != nullptr) std::fclose(file_);
}

void ChromeTraceWriter::BeginEvent() {
  buf_ += first_ ? "\n    " : ",\n    ";
  first_ = false;
  if (buf_.size() >= kFlushBytes && file_ != nullptr) {
    // A short write sets the stream's error flag, which Finish() reports.
    (void)std::fwrite(buf_.data(), 1, buf_.size(), file_);
    buf_.clear();
  }
}

void ChromeTraceWriter::AddSpan(const TraceSpan& s) {
  BeginEvent();
  absl::StrAppend(&buf_, "{\"ph\": \"X\", \"cat\": ", JsonQuote(s.cat), ", \"name\": ",
                  JsonQuote(s.name), ", \"pid\": ", s.pid, ", \"tid\": ", s.tid, ", \"ts\": ",
                  Us(s.ts_us), ", \"dur\": ", Us(s.dur_us));
  std::string args;
  auto sep = [&args] { return args.empty() ? "" : ", "; };
  if (s.external_id) absl::StrAppend(&args, sep(), "\"External id\": ", *s.external_id);
  if (s.correlation) absl::StrAppend(&args, sep(), "\"correlation\": ", *s.correlation);
  if (!s.input_dims_json.empty()) {
    absl::StrAppend(&args, sep(), "\"Input Dims\": ", s.input_dims_json);
  }
  if (s.flops) absl::StrAppend(&args, sep(), "\"flops\": ", absl::StrFormat("%.0f", *s.flops));
  if (!s.extra_args_json.empty()) absl::StrAppend(&args, sep(), s.extra_args_json);
  if (!args.empty()) absl::StrAppend(&buf_, ", \"args\": {", args, "}");
  buf_ += "}";
}

void ChromeTraceWriter::AddMemory(const TraceMemoryEvent& m) {
  BeginEvent();
  absl::StrAppend(&buf_, "{\"ph\": \"i\", \"cat\": \"cpu_instant_event\", \"s\": \"t\", ",
                  "\"name\": \"[memory]\", \"pid\": ", m.pid, ", \"tid\": ", m.tid,
                  ", \"ts\": ", Us(m.ts_us), ", \"args\": {\"Device Type\": ", m.device_type,
                  ", \"Device Id\": ", m.device_index, ", \"Bytes\": ", m.bytes,
                  ", \"Total Allocated\": ", m.total_allocated,
                  ", \"Total Reserved\": ", m.total_reserved, "}}");
}

void ChromeTraceWriter::AddFlow(const std::string& cat, int64_t id, int64_t from_pid,
                                int64_t from_tid, double from_ts_us, int64_t to_pid,
                                int64_t to_tid, double to_ts_us) {
  const std::string c = JsonQuote(cat);
  BeginEvent();
  absl::StrAppend(&buf_, "{\"ph\": \"s\", \"id\": ", id, ", \"pid\": ", from_pid,
                  ", \"tid\": ", from_tid, ", \"ts\": ", Us(from_ts_us), ", \"cat\": ", c,
                  ", \"name\": ", c, "}");
  BeginEvent();
  absl::StrAppend(&buf_, "{\"ph\": \"f\", \"id\": ", id, ", \"pid\": ", to_pid, ", \"tid\": ",
                  to_tid, ", \"ts\": ", Us(to_ts_us), ", \"cat\": ", c, ", \"name\": ", c,
                  ", \"bp\": \"e\"}");
}

void ChromeTraceWriter::NameProcess(int64_t pid, const std::string& name) {
  BeginEvent();
  absl::StrAppend(&buf_, "{\"name\": \"process_name\", \"ph\": \"M\", \"ts\": 0, \"pid\": ", pid,
                  ", \"tid\": 0, \"args\": {\"name\": ", JsonQuote(name), "}}");
}

void ChromeTraceWriter::NameThread(int64_t pid, int64_t tid, const std::string& name) {
  BeginEvent();
  absl::StrAppend(&buf_, "{\"name\": \"thread_name\", \"ph\": \"M\", \"ts\": 0, \"pid\": ", pid,
                  ", \"tid\": ", tid, ", \"args\": {\"name\": ", JsonQuote(name), "}}");
}

void ChromeTraceWriter::LabelProcess(int64_t pid, const std::string& labels) {
  BeginEvent();
  absl::StrAppend(&buf_, "{\"name\": \"process_labels\", \"ph\": \"M\", \"ts\": 0, \"pid\": ",
                  pid, ", \"tid\": 0, \"args\": {\"labels\": ", JsonQuote(labels), "}}");
}

void ChromeTraceWriter::SortProcess(int64_t pid, int64_t index) {
  BeginEvent();
  absl::StrAppend(&buf_,
                  "{\"name\": \"process_sort_index\", \"ph\": \"M\", \"ts\": 0, \"pid\": ", pid,
                  ", \"tid\": 0, \"args\": {\"sort_index\": ", index, "}}");
}

void ChromeTraceWriter::SortThread(int64_t pid, int64_t tid, int64_t index) {
  BeginEvent();
  absl::StrAppend(&buf_,
                  "{\"name\": \"thread_sort_index\", \"ph\": \"M\", \"ts\": 0, \"pid\": ", pid,
                  ", \"tid\": ", tid, ", \"args\": {\"sort_index\": ", index, "}}");
}

void ChromeTraceWriter::AddProfilerSpan(double ts_us, double dur_us) {
  BeginEvent();
  absl::StrAppend(&buf_, "{\"ph\": \"X\", \"cat\": \"Trace\", \"ts\": ", Us(ts_us),
                  ", \"dur\": ", Us(dur_us),
                  ", \"pid\": \"Spans\", \"tid\": \"PyTorch Profiler\", "
                  "\"name\": \"PyTorch Profiler (0)\", \"args\": {\"Op count\": 0}}");
  BeginEvent();
  absl::StrAppend(&buf_,
                  "{\"name\": \"Iteration Start: PyTorch Profiler\", \"ph\": \"i\", \"s\": \"g\", "
                  "\"pid\": \"Traces\", \"tid\": \"Trace PyTorch Profiler\", \"ts\": ",
                  Us(ts_us), "}");
}

absl::Status ChromeTraceWriter::Finish() {
  if (finished_) return absl::OkStatus();
  finished_ = true;
  buf_ += "\n  ],\n  \"displayTimeUnit\": \"ms\"\n}\n";
  const bool short_write = std::fwrite(buf_.data(), 1, buf_.size(), file_) != buf_.size();
  buf_.clear();
  const int flush_err = std::fflush(file_);
  const int err = std::ferror(file_);
  const int close_err = std::fclose(file_);
  file_ = nullptr;
  if (short_write || flush_err != 0 || err != 0 || close_err != 0) {
    return absl::UnavailableError(absl::StrCat("writing ", path_, " failed: ",
                                               std::strerror(errno),
                                               " (disk full or store unwritable?)"));
  }
  return absl::OkStatus();
}

}  // namespace libreyolo
