#include "common/trace/trace_data_builder.h"

#include <charconv>
#include <cmath>
#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/trace/trace_reader.h"

namespace libreyolo {
namespace {

using trace_bounds::kMaxBytes;
using trace_bounds::kMaxDurUs;
using trace_bounds::kMaxTsUs;
using trace_bounds::kMinTsUs;

// Microseconds as the writer prints them (3 decimals) and the reader reads them back, in ns.
int64_t Ns(double us) { return std::llround(us * 1000.0); }

}  // namespace

std::optional<EventClass> ClassifyCompleteEvent(absl::string_view cat, absl::string_view name) {
  if (absl::EqualsIgnoreCase(cat, "kernel")) return EventClass::kKernel;
  if (absl::EqualsIgnoreCase(cat, "gpu_memcpy")) return EventClass::kMemcpy;
  if (absl::EqualsIgnoreCase(cat, "gpu_memset")) return EventClass::kMemset;
  if (absl::EqualsIgnoreCase(cat, "cpu_op")) return EventClass::kCpuOp;
  if (absl::EqualsIgnoreCase(cat, "user_annotation")) {
    // Our --with-modules ranges are user annotations named "nn.Module: <path>".
    return absl::StartsWith(name, "nn.Module: ") ? EventClass::kModule : EventClass::kAnnotation;
  }
  if (absl::EqualsIgnoreCase(cat, "cuda_runtime") || absl::EqualsIgnoreCase(cat, "cuda_driver")) {
    return EventClass::kRuntime;
  }
  if (absl::EqualsIgnoreCase(cat, "python_function") && absl::StartsWith(name, "nn.Module: ")) {
    return EventClass::kModule;
  }
  return std::nullopt;  // other categories only shape the window
}

std::string RenderInputDims(std::string_view json) {
  std::string out;
  out.reserve(json.size());
  std::vector<bool> first;  // per open list: no element yet
  auto separator = [&] {
    if (!first.empty()) {
      if (!first.back()) out += ", ";
      first.back() = false;
    }
  };
  size_t i = 0;
  while (i < json.size()) {
    const char c = json[i];
    if (c == '[') {
      separator();
      out += '[';
      first.push_back(true);
      ++i;
    } else if (c == ']') {
      out += ']';
      if (!first.empty()) first.pop_back();
      ++i;
    } else if (c == ',' || absl::ascii_isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else {
      size_t j = i;
      while (j < json.size() && json[j] != ',' && json[j] != ']' &&
             !absl::ascii_isspace(static_cast<unsigned char>(json[j]))) {
        ++j;
      }
      separator();
      const std::string_view token = json.substr(i, j - i);
      out += token == "null" || token == "true" || token == "false" ? "None" : std::string(token);
      i = j;
    }
  }
  return out;
}

TraceDataBuilder::TraceDataBuilder(const std::string& device_properties_json) {
  // The reader owns what a deviceProperties entry means: read the header alone with it.
  if (device_properties_json != "[]" && !device_properties_json.empty()) {
    auto header = ReadTraceText(
        absl::StrCat("{\"deviceProperties\": ", device_properties_json, ", \"traceEvents\": []}"));
    if (header.ok()) data_.device = header->device;
  }
}

uint32_t TraceDataBuilder::Thread(int64_t pid, int64_t tid) {
  auto [it, inserted] = threads_.try_emplace({pid, tid}, 0);
  if (inserted) it->second = data_.strings.Intern(absl::StrCat(pid, "/", tid));
  return it->second;
}

void TraceDataBuilder::Extent(int64_t ts_ns, int64_t dur_ns) {
  data_.min_ts_ns = std::min(data_.min_ts_ns, ts_ns);
  data_.max_end_ns = std::max(data_.max_end_ns, ts_ns + dur_ns);
}

void TraceDataBuilder::AddSpan(const TraceSpan& s) {
  ++data_.stats.events;
  if (!(s.ts_us >= kMinTsUs && s.ts_us <= kMaxTsUs) || !(s.dur_us >= 0 && s.dur_us <= kMaxDurUs)) {
    ++data_.stats.skipped_events;
    return;
  }
  // As the reader: Input Dims are interned while the event's args are read, before its class.
  const uint32_t shapes =
      s.input_dims_json.empty() ? 0 : data_.strings.Intern(RenderInputDims(s.input_dims_json));
  ++data_.stats.complete_events;
  TraceEvent ev;
  ev.ts_ns = Ns(s.ts_us);
  ev.dur_ns = Ns(s.dur_us);
  Extent(ev.ts_ns, ev.dur_ns);
  const bool cpu_copy = absl::EqualsIgnoreCase(s.cat, "cpu_op") ||
                        absl::EqualsIgnoreCase(s.cat, "user_annotation");
  if (absl::StartsWith(s.name, "ProfilerStep#")) {
    int64_t n = 0;
    const char* b = s.name.data() + 13;
    const char* e = s.name.data() + s.name.size();
    if (std::from_chars(b, e, n).ec == std::errc()) {
      data_.steps.push_back(StepMark{n, ev.ts_ns, ev.dur_ns, cpu_copy});
    }
  }
  const std::optional<EventClass> cls = ClassifyCompleteEvent(s.cat, s.name);
  if (!cls) return;
  ev.cls = *cls;
  if (s.correlation) ev.correlation = *s.correlation;
  if (s.flops && ev.cls == EventClass::kCpuOp) {
    // Written as a whole number ("%.0f"), read back as one.
    double f = std::nearbyint(*s.flops);
    if (f == 0) f = 0;  // "-0" reads as 0
    if (std::isfinite(f) && f >= 0) {
      data_.flops.push_back(f);
      ev.aux = static_cast<uint32_t>(data_.flops.size());
    }
  }
  ev.shapes = shapes;
  if (shapes != 0 && ev.cls == EventClass::kCpuOp) data_.has_input_shapes = true;
  ev.name = data_.strings.Intern(s.name);
  ev.thread = Thread(s.pid, s.tid);
  data_.events.push_back(ev);
}

void TraceDataBuilder::AddMemory(const TraceMemoryEvent& m) {
  ++data_.stats.events;
  if (!(m.ts_us >= kMinTsUs && m.ts_us <= kMaxTsUs)) {
    ++data_.stats.skipped_events;
    return;
  }
  auto bytes = [](int64_t v, int64_t otherwise) {
    return std::fabs(static_cast<double>(v)) > kMaxBytes ? otherwise : v;
  };
  TraceEvent ev;
  ev.ts_ns = Ns(m.ts_us);
  ev.cls = EventClass::kMemoryInstant;
  ev.device_type = static_cast<int8_t>(m.device_type > 0 ? 1 : 0);
  ev.aux = static_cast<uint32_t>(data_.memory.size());
  data_.memory.push_back(MemorySample{bytes(m.bytes, 0), bytes(m.total_allocated, -1),
                                      bytes(m.total_reserved, -1)});
  ev.name = data_.strings.Intern("[memory]");
  ev.thread = Thread(m.pid, m.tid);
  data_.events.push_back(ev);
}

void TraceDataBuilder::AddFlow(const std::string& cat, int64_t id, int64_t from_pid,
                               int64_t from_tid, double from_ts_us, int64_t, int64_t, double) {
  data_.stats.events += 2;  // the start ("s") and the finish ("f")
  // Kept: launch -> kernel starts, and forward -> backward starts (the inferred forward phase).
  const bool ac2g = absl::EqualsIgnoreCase(cat, "ac2g");
  if (!ac2g && !absl::EqualsIgnoreCase(cat, "fwdbwd")) return;
  if (!(from_ts_us >= kMinTsUs && from_ts_us <= kMaxTsUs)) {
    ++data_.stats.skipped_events;
    return;
  }
  TraceEvent ev;
  ev.ts_ns = Ns(from_ts_us);
  ev.cls = ac2g ? EventClass::kFlowStart : EventClass::kFwdBwdStart;
  ev.correlation = id;
  ev.name = data_.strings.Intern(cat);
  ev.thread = Thread(from_pid, from_tid);
  data_.events.push_back(ev);
}

void TraceDataBuilder::AddProfilerSpan(double ts_us, double dur_us) {
  // The "Trace" span shapes the window's extent only; its "Iteration Start" instant is not kept.
  data_.stats.events += 2;
  ++data_.stats.complete_events;
  Extent(Ns(ts_us), Ns(dur_us));
}

TraceData TraceDataBuilder::Take() {
  TraceData out = std::move(data_);
  data_ = TraceData();
  data_.device = out.device;
  threads_.clear();
  return out;
}

}  // namespace libreyolo
