#include "common/trace/trace_reader.h"

#include <rapidjson/memorystream.h>
#include <rapidjson/reader.h>
#include <simdjson.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <algorithm>
#include <atomic>
#include <bit>
#include <charconv>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/io/block_reader.h"
#include "common/io/file_reader.h"
#include "common/json/json_read.h"
#include "common/status/status_macros.h"
#include "common/status/thread_guard.h"
#include "common/trace/trace_data_builder.h"
#include "common/trace/trace_reader_internal.h"

namespace libreyolo {

uint32_t StringTable::Intern(std::string_view s) {
  auto it = ids_.find(s);
  if (it != ids_.end()) return it->second;
  strings_.emplace_back(s);
  const auto id = static_cast<uint32_t>(strings_.size() - 1);
  ids_.emplace(std::string_view(strings_.back()), id);
  return id;
}

namespace {

// The recursive parser is ~20% faster than kParseIterativeFlag; the handler bounds nesting
// (kMaxDepth) so hostile input cannot exhaust the stack. Numbers reach the handler as their text
// (kParseNumbersAsStringsFlag) and are converted by ConvertNumber (common/json/json_read.h, which
// says why), as the profile readers' are.
constexpr int kParseFlags = rapidjson::kParseNanAndInfFlag | rapidjson::kParseNumbersAsStringsFlag;
constexpr int kMaxDepth = 256;
using trace_bounds::kMaxBytes;
using trace_bounds::kMaxDurUs;
using trace_bounds::kMaxTsUs;
using trace_bounds::kMinTsUs;

// A RapidJSON input stream over ChunkedFileReader: the file is never held whole.
class ChunkStream {
 public:
  using Ch = char;
  explicit ChunkStream(ChunkedFileReader* reader) : reader_(reader), buf_(1 << 18) { Fill(); }
  Ch Peek() const { return pos_ < len_ ? buf_[pos_] : '\0'; }
  Ch Take() {
    if (pos_ >= len_) return '\0';
    const Ch c = buf_[pos_++];
    if (pos_ == len_) Fill();
    return c;
  }
  size_t Tell() const { return consumed_ + pos_; }
  Ch* PutBegin() { return nullptr; }
  void Put(Ch) {}
  void Flush() {}
  size_t PutEnd(Ch*) { return 0; }
  const absl::Status& status() const { return status_; }

 private:
  void Fill() {
    consumed_ += len_;
    pos_ = len_ = 0;
    if (!status_.ok()) return;
    auto n = reader_->Read(buf_.data(), buf_.size());
    if (!n.ok()) {
      status_ = n.status();
      return;
    }
    len_ = *n;
  }
  ChunkedFileReader* reader_;
  std::vector<char> buf_;
  size_t pos_ = 0, len_ = 0, consumed_ = 0;
  absl::Status status_;
};

enum class Field {
  kNone,
  kPh, kCat, kName, kTs, kDur, kPid, kTid, kId, kArgs,
  kCorrelation, kFlops, kInputDims, kDeviceType, kBytes, kTotalAllocated, kTotalReserved,
  kDevName, kDevMem, kDevSms, kDevId,
};

Field EventField(std::string_view k) {
  if (k == "ph") return Field::kPh;
  if (k == "cat") return Field::kCat;
  if (k == "name") return Field::kName;
  if (k == "ts") return Field::kTs;
  if (k == "dur") return Field::kDur;
  if (k == "pid") return Field::kPid;
  if (k == "tid") return Field::kTid;
  if (k == "id") return Field::kId;
  if (k == "args") return Field::kArgs;
  return Field::kNone;
}

Field ArgsField(std::string_view k) {
  if (k == "correlation") return Field::kCorrelation;
  if (k == "flops") return Field::kFlops;
  if (k == "Input Dims") return Field::kInputDims;
  if (k == "Device Type") return Field::kDeviceType;
  if (k == "Bytes") return Field::kBytes;
  if (k == "Total Allocated") return Field::kTotalAllocated;
  if (k == "Total Reserved") return Field::kTotalReserved;
  return Field::kNone;
}

Field DeviceField(std::string_view k) {
  if (k == "name") return Field::kDevName;
  if (k == "totalGlobalMem") return Field::kDevMem;
  if (k == "numSms" || k == "multiProcessorCount") return Field::kDevSms;
  if (k == "id") return Field::kDevId;
  return Field::kNone;
}

// A JSON number as the reader saw it.
struct Num {
  double d = 0;
  int64_t i = 0;
  bool is_int = false;
  bool fits_int64 = false;
};

// Byte counts beyond 2^53 (8 PiB) are not real; rejecting them keeps every sum exact in a double
// and far from int64 overflow.
std::optional<int64_t> ByteCount(const Num& n) {
  if (!std::isfinite(n.d) || std::fabs(n.d) > kMaxBytes) return std::nullopt;
  return n.fits_int64 ? n.i : static_cast<int64_t>(n.d);
}

// Device ids and SM counts: small non-negative integers, else absent.
std::optional<int64_t> SmallCount(const Num& n) {
  if (!std::isfinite(n.d) || n.d < 0 || n.d > 1e9) return std::nullopt;
  return static_cast<int64_t>(n.d);
}

int64_t IdFromNum(const Num& n) {
  if (n.is_int) return n.i;  // uint64 beyond int64 keeps its bits: equality is all we need
  if (std::isfinite(n.d) && std::fabs(n.d) < 9.0e18 && n.d == std::floor(n.d)) {
    return static_cast<int64_t>(n.d);
  }
  return std::bit_cast<int64_t>(n.d);
}

// One line of Kineto's log in the trace's top level ("WARNING"/"ERROR"): counted when it is one
// of the messages by which Kineto says it lost records (trace_data.h KinetoMarkers).
void NoteKinetoLine(std::string_view line, KinetoMarkers* k) {
  constexpr size_t kKeptLines = 8;
  bool marker = false;
  if (line.find("Exceeded max GPU buffer count") != std::string_view::npos) {
    ++k->buffer_overflows;
    marker = true;
  } else if (const size_t at = line.find("Dropped "); at != std::string_view::npos &&
             line.find(" activity records", at) != std::string_view::npos) {
    int64_t n = 0;
    const std::string_view digits = line.substr(at + 8);
    std::from_chars(digits.data(), digits.data() + digits.size(), n);
    ++k->dropped_lines;
    if (n > 0) SatAdd(k->dropped_records, n);
    marker = true;
  } else if (line.find("GPU op timestamp") != std::string_view::npos &&
             line.find("< runtime timestamp") != std::string_view::npos) {
    ++k->timestamp_warnings;
    marker = true;
  }
  if (marker && k->lines.size() < kKeptLines) k->lines.emplace_back(line.substr(0, 300));
}

class TraceHandler : public rapidjson::BaseReaderHandler<rapidjson::UTF8<>, TraceHandler> {
 public:
  explicit TraceHandler(TraceData* out) : out_(out) {}

  // --- containers -------------------------------------------------------------------------
  bool StartObject() {
    if (shapes_depth_ >= 0) return ShapesOpen('[');  // objects inside dims: treat as a list
    MarkIfCoreField();
    if (depth_ >= kMaxDepth) return TooDeep();
    ++depth_;
    if (depth_ == 1) {
      root_is_object_ = true;
    } else if (depth_ == event_depth_ && events_array_open_) {
      BeginEvent();
    } else if (depth_ == event_depth_ + 1 && in_event_ && pending_ == Field::kArgs) {
      in_args_ = true;
      pending_ = Field::kNone;
    } else if (depth_ == 3 && in_device_props_ && !device_done_) {
      in_device_ = true;
    }
    pending_ = Field::kNone;
    return true;
  }
  bool EndObject(rapidjson::SizeType) {
    if (shapes_depth_ >= 0) return ShapesClose(']');
    if (in_event_ && depth_ == event_depth_) {
      FinishEvent();
    } else if (in_args_ && depth_ == event_depth_ + 1) {
      in_args_ = false;
    } else if (in_device_ && depth_ == 3) {
      in_device_ = false;
      device_done_ = true;
    }
    --depth_;
    pending_ = Field::kNone;
    return true;
  }
  bool StartArray() {
    if (shapes_depth_ >= 0) return ShapesOpen('[');
    if (pending_ == Field::kInputDims && in_args_ && depth_ == event_depth_ + 1) {
      shapes_.clear();
      shapes_depth_ = 0;
      first_.clear();
      pending_ = Field::kNone;
      return ShapesOpen('[');
    }
    MarkIfCoreField();
    CountStrayElement();
    if (depth_ >= kMaxDepth) return TooDeep();
    ++depth_;
    if (depth_ == 1) {
      events_array_open_ = true;  // bare-list form
      saw_events_ = true;
      event_depth_ = 2;
    } else if (depth_ == 2 && root_is_object_ && root_key_ == "traceEvents") {
      events_array_open_ = true;
      saw_events_ = true;
      event_depth_ = 3;
    } else if (depth_ == 2 && root_is_object_ && root_key_ == "deviceProperties") {
      in_device_props_ = true;
    }
    pending_ = Field::kNone;
    return true;
  }
  bool EndArray(rapidjson::SizeType) {
    if (shapes_depth_ >= 0) return ShapesClose(']');
    if (depth_ == event_depth_ - 1 && events_array_open_) events_array_open_ = false;
    if (depth_ == 2 && in_device_props_) in_device_props_ = false;
    --depth_;
    pending_ = Field::kNone;
    return true;
  }
  bool Key(const char* s, rapidjson::SizeType len, bool) {
    const std::string_view k(s, len);
    if (shapes_depth_ >= 0) return true;
    if (depth_ == 1 && root_is_object_) {
      root_key_.assign(k);
      if (k == "INFO" || k == "WARNING" || k == "ERROR") out_->kineto.log_present = true;
    } else if (in_event_ && depth_ == event_depth_) {
      pending_ = EventField(k);
    } else if (in_args_ && depth_ == event_depth_ + 1) {
      pending_ = ArgsField(k);
    } else if (in_device_ && depth_ == 3) {
      pending_ = DeviceField(k);
    } else {
      pending_ = Field::kNone;
    }
    return true;
  }

  // --- scalars ----------------------------------------------------------------------------
  // A non-object element directly in the events list: counted as an event and skipped.
  // Whether a scalar here would change anything: false for the values of keys the handler does
  // not keep (most of args), whose numbers the walker then only checks, without converting.
  bool WantsScalar() const {
    return pending_ != Field::kNone || shapes_depth_ >= 0 ||
           (events_array_open_ && !in_event_ && depth_ == event_depth_ - 1);
  }
  // Back between two elements of the events list, as before an element a walker started and
  // declined (its event is dropped unfinished; FinishEvent, the only writer of the output
  // besides the Input Dims' intern, had not run).
  void AbandonElement() {
    depth_ = event_depth_ - 1;
    in_event_ = in_args_ = false;
    pending_ = Field::kNone;
    shapes_depth_ = -1;
    first_.clear();
  }
  void CountStrayElement() {
    if (events_array_open_ && !in_event_ && depth_ == event_depth_ - 1) {
      ++out_->stats.events;
      ++out_->stats.skipped_events;
    }
  }

  bool Null() { return Scalar(); }
  bool Bool(bool) { return Scalar(); }
  bool String(const char* s, rapidjson::SizeType len, bool) {
    if (shapes_depth_ >= 0) {
      ShapesSeparator();
      absl::StrAppend(&shapes_, "'", absl::string_view(s, len), "'");
      return true;
    }
    CountStrayElement();
    const std::string_view v(s, len);
    if (root_is_object_ && (depth_ == 1 || depth_ == 2) && !events_array_open_ &&
        (root_key_ == "WARNING" || root_key_ == "ERROR")) {
      NoteKinetoLine(v, &out_->kineto);
    }
    switch (pending_) {
      case Field::kPh: ph_.assign(v); break;
      case Field::kCat: cat_.assign(v); break;
      case Field::kName: name_.assign(v); break;
      case Field::kPid: pid_.SetString(v); break;
      case Field::kTid: tid_.SetString(v); break;
      case Field::kTs: case Field::kDur: unusable_ = true; break;
      case Field::kId: case Field::kCorrelation: ++out_->stats.non_numeric_ids; break;
      case Field::kDevName: out_->device->name.assign(v); break;
      default: break;
    }
    pending_ = Field::kNone;
    return true;
  }
  bool Int(int v) { return Number(Num{double(v), v, true, true}); }
  bool Uint(unsigned v) { return Number(Num{double(v), int64_t{v}, true, true}); }
  bool Int64(int64_t v) { return Number(Num{double(v), v, true, true}); }
  bool Uint64(uint64_t v) {
    const bool fits = v <= static_cast<uint64_t>(INT64_MAX);
    return Number(Num{double(v), std::bit_cast<int64_t>(v), true, fits});
  }
  bool Double(double v) { return Number(Num{v, 0, false, false}); }
  // RapidJSON's numbers, as text (kParseNumbersAsStringsFlag).
  bool RawNumber(const char* s, rapidjson::SizeType len, bool) {
    return HandNumber(std::string_view(s, len), *this);
  }

  bool saw_events() const { return saw_events_; }
  bool too_deep() const { return too_deep_; }
  bool root_is_object() const { return root_is_object_; }

 private:
  bool TooDeep() {
    too_deep_ = true;
    return false;  // stops the parser
  }

  bool Scalar() {
    if (shapes_depth_ >= 0) {
      ShapesSeparator();
      shapes_ += "None";
      return true;
    }
    CountStrayElement();
    MarkIfCoreField();
    pending_ = Field::kNone;
    return true;
  }

  // ts, dur, name and cat of the wrong JSON type make the event unusable (counted, skipped).
  void MarkIfCoreField() {
    if (pending_ == Field::kTs || pending_ == Field::kDur || pending_ == Field::kName ||
        pending_ == Field::kCat) {
      unusable_ = true;
    }
  }

  bool Number(const Num& n) {
    if (shapes_depth_ >= 0) {
      ShapesSeparator();  // appended in place: no string per value
      if (n.is_int) {
        absl::StrAppend(&shapes_, n.i);
      } else {
        absl::StrAppend(&shapes_, n.d);
      }
      return true;
    }
    CountStrayElement();
    switch (pending_) {
      case Field::kTs:
        if (std::isfinite(n.d) && n.d >= kMinTsUs && n.d <= kMaxTsUs) {
          ts_ns_ = n.fits_int64 ? n.i * 1000 : std::llround(n.d * 1000.0);
          has_ts_ = true;
        } else {
          unusable_ = true;
        }
        break;
      case Field::kDur:
        if (std::isfinite(n.d) && n.d >= 0 && n.d <= kMaxDurUs) {
          dur_ns_ = n.fits_int64 ? n.i * 1000 : std::llround(n.d * 1000.0);
        } else {
          unusable_ = true;
        }
        break;
      case Field::kName: case Field::kCat: unusable_ = true; break;
      case Field::kPid: pid_.SetNumber(n); break;
      case Field::kTid: tid_.SetNumber(n); break;
      case Field::kId: flow_id_ = IdFromNum(n); break;
      case Field::kCorrelation: correlation_ = IdFromNum(n); break;
      case Field::kFlops: if (std::isfinite(n.d) && n.d >= 0) flops_ = n.d; break;
      case Field::kDeviceType: device_type_ = static_cast<int8_t>(n.d > 0 ? 1 : 0); break;
      case Field::kBytes: bytes_ = ByteCount(n).value_or(0); break;
      case Field::kTotalAllocated: total_allocated_ = ByteCount(n).value_or(-1); break;
      case Field::kTotalReserved: total_reserved_ = ByteCount(n).value_or(-1); break;
      case Field::kDevMem: out_->device->memory_mb = n.d / 1e6; break;
      case Field::kDevSms: out_->device->sm_count = SmallCount(n); break;
      case Field::kDevId: out_->device->index = SmallCount(n); break;
      default: break;
    }
    pending_ = Field::kNone;
    return true;
  }

  // --- Input Dims, rendered like Python's str() of the nested list -------------------------
  bool ShapesOpen(char c) {
    if (depth_ + shapes_depth_ >= kMaxDepth) return TooDeep();
    ShapesSeparator();
    shapes_ += c;
    first_.push_back(1);
    ++shapes_depth_;
    return true;
  }
  bool ShapesClose(char c) {
    shapes_ += c;
    if (!first_.empty()) first_.pop_back();
    if (--shapes_depth_ == 0) {
      shapes_depth_ = -1;
      shapes_id_ = out_->strings.Intern(shapes_);
    }
    return true;
  }
  void ShapesSeparator() {
    if (!first_.empty()) {
      if (!first_.back()) shapes_ += ", ";
      first_.back() = 0;
    }
  }

  // --- events -----------------------------------------------------------------------------
  void BeginEvent() {
    in_event_ = true;
    ph_.clear();
    cat_.clear();
    name_.clear();
    pid_.Clear();
    tid_.Clear();
    has_ts_ = unusable_ = false;
    ts_ns_ = dur_ns_ = 0;
    correlation_ = flow_id_ = kNoId;
    flops_ = -1;
    bytes_ = 0;
    total_allocated_ = total_reserved_ = -1;
    device_type_ = -1;
    shapes_id_ = 0;
  }

  // Threads are keyed by (pid, tid) as written: 1 and "1" are different threads. The common
  // all-integer case skips building the key string.
  uint32_t ThreadId() {
    const bool ints = pid_.is_int && tid_.is_int;
    if (ints) {
      auto it = int_threads_.find({pid_.i, tid_.i});
      if (it != int_threads_.end()) return it->second;
    }
    thread_key_.clear();
    absl::StrAppend(&thread_key_, pid_.Text(), "/", tid_.Text());
    const uint32_t id = out_->strings.Intern(thread_key_);
    if (ints) int_threads_.emplace(std::make_pair(pid_.i, tid_.i), id);
    return id;
  }

  void FinishEvent() {
    in_event_ = false;
    in_args_ = false;
    auto& stats = out_->stats;
    ++stats.events;
    if (!has_ts_ || unusable_) {
      if (ph_ == "X" || ph_ == "i" || ph_ == "s") ++stats.skipped_events;
      return;
    }
    TraceEvent ev;
    ev.ts_ns = ts_ns_;
    if (ph_ == "X") {
      ++stats.complete_events;
      ev.dur_ns = dur_ns_;
      out_->min_ts_ns = std::min(out_->min_ts_ns, ts_ns_);
      out_->max_end_ns = std::max(out_->max_end_ns, ts_ns_ + dur_ns_);
      const bool cpu_copy =
          absl::EqualsIgnoreCase(cat_, "cpu_op") || absl::EqualsIgnoreCase(cat_, "user_annotation");
      if (absl::StartsWith(name_, "ProfilerStep#")) {
        int64_t n = 0;
        const char* b = name_.data() + 13;
        const char* e = name_.data() + name_.size();
        if (std::from_chars(b, e, n).ec == std::errc()) {
          out_->steps.push_back(StepMark{n, ts_ns_, dur_ns_, cpu_copy});
        }
      }
      const std::optional<EventClass> cls = ClassifyCompleteEvent(cat_, name_);
      if (!cls) return;  // other categories only shape the window
      ev.cls = *cls;
      ev.correlation = correlation_;
      if (flops_ >= 0 && ev.cls == EventClass::kCpuOp) {
        out_->flops.push_back(flops_);
        ev.aux = static_cast<uint32_t>(out_->flops.size());
      }
      ev.shapes = shapes_id_;
      if (shapes_id_ != 0 && ev.cls == EventClass::kCpuOp) out_->has_input_shapes = true;
    } else if (ph_ == "i" && name_ == "[memory]") {
      ev.cls = EventClass::kMemoryInstant;
      ev.device_type = device_type_;
      ev.aux = static_cast<uint32_t>(out_->memory.size());
      out_->memory.push_back(MemorySample{bytes_, total_allocated_, total_reserved_});
    } else if (ph_ == "s" && absl::EqualsIgnoreCase(cat_, "ac2g")) {
      ev.cls = EventClass::kFlowStart;
      ev.correlation = flow_id_;
    } else if (ph_ == "s" && absl::EqualsIgnoreCase(cat_, "fwdbwd")) {
      ev.cls = EventClass::kFwdBwdStart;
      ev.correlation = flow_id_;
    } else {
      return;
    }
    ev.name = out_->strings.Intern(name_);
    ev.thread = ThreadId();
    out_->events.push_back(ev);
  }

  TraceData* out_;
  int depth_ = 0;
  int event_depth_ = -10;
  bool root_is_object_ = false;
  bool events_array_open_ = false;
  bool saw_events_ = false;
  bool in_event_ = false;
  bool in_args_ = false;
  bool in_device_props_ = false;
  bool in_device_ = false;
  bool device_done_ = false;
  bool too_deep_ = false;
  std::string root_key_;
  Field pending_ = Field::kNone;

  // The event being read.
  // A pid or tid: an integer (the common case), another number, or a string.
  struct IdValue {
    bool is_int = false;
    int64_t i = 0;
    std::string text;  // non-integers, rendered; strings are quoted so "1" != 1
    void Clear() {
      is_int = false;
      i = 0;
      text.clear();
    }
    void SetNumber(const Num& n) {
      is_int = n.is_int;
      i = n.i;
      text = n.is_int ? std::string() : absl::StrCat(n.d);
    }
    void SetString(std::string_view v) {
      is_int = false;
      text = absl::StrCat("\"", absl::string_view(v.data(), v.size()), "\"");
    }
    std::string Text() const { return is_int ? absl::StrCat(i) : text; }
  };
  std::string ph_, cat_, name_, thread_key_;
  IdValue pid_, tid_;
  absl::flat_hash_map<std::pair<int64_t, int64_t>, uint32_t> int_threads_;
  bool has_ts_ = false, unusable_ = false;
  int64_t ts_ns_ = 0, dur_ns_ = 0, correlation_ = kNoId, flow_id_ = kNoId;
  double flops_ = -1;
  int64_t bytes_ = 0, total_allocated_ = -1, total_reserved_ = -1;
  int8_t device_type_ = -1;
  uint32_t shapes_id_ = 0;
  std::string shapes_;
  std::vector<uint8_t> first_;  // per open list: no element yet (bytes: vector<bool> is slow)
  int shapes_depth_ = -1;
};

// What every parser does after the last event: the checks that make JSON a trace, the device.
absl::StatusOr<TraceData> Finish(TraceData data, const TraceHandler& handler,
                                 const std::string& what) {
  if (!handler.saw_events()) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": not a Chrome trace (no \"traceEvents\" list) and not a libreyolo profile "
              "(no \"schema\": \"libreyolo.profile.analysis/...\")"));
  }
  if (data.device->name.empty()) {
    data.device.reset();
  } else {
    data.device->type = absl::StrContains(data.device->name, "AMD") ? "rocm" : "cuda";
  }
  return data;
}

TraceData EmptyData(size_t json_bytes_hint) {
  TraceData data;
  // Reserving from the size means the vector never reallocates (a realloc would briefly hold
  // two copies); untouched reserved pages cost no resident memory. Kineto writes >= 100 bytes
  // of JSON per event.
  data.events.reserve(json_bytes_hint / 100);
  data.device.emplace();
  return data;
}

// The RapidJSON SAX reader: the reference. It decides every input simdjson does not accept.
template <typename Stream>
absl::StatusOr<TraceData> Parse(Stream& stream, const std::string& what,
                                const absl::Status* stream_status, size_t json_bytes_hint) {
  TraceData data = EmptyData(json_bytes_hint);
  TraceHandler handler(&data);
  rapidjson::Reader reader;
  const rapidjson::ParseResult result = reader.Parse<kParseFlags>(stream, handler);
  if (stream_status != nullptr && !stream_status->ok()) return *stream_status;
  if (handler.too_deep()) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": JSON nested deeper than ", kMaxDepth, " levels at byte ", result.Offset(),
        "; a Chrome trace is never that deep, so this is not a trace"));
  }
  if (result.IsError()) {
    return absl::InvalidArgumentError(absl::StrCat(
        NotJsonAt(what, result),
        ". Is the file complete? Re-export it with the profiler's export_chrome_trace."));
  }
  return Finish(std::move(data), handler, what);
}

absl::StatusOr<TraceData> ReadFileRapidJson(const std::string& path) {
  ASSIGN_OR_RETURN(auto reader, ChunkedFileReader::Open(path));
  ChunkStream stream(reader.get());
  return Parse(stream, path, &stream.status(), reader->UncompressedSizeHint());
}

absl::StatusOr<TraceData> ReadTextRapidJson(std::string_view json) {
  rapidjson::MemoryStream stream(json.data(), json.size());
  return Parse(stream, "trace", nullptr, json.size());
}

// --- simdjson ---------------------------------------------------------------------------------
// The on-demand parser walks every value (nothing is skipped unread, so nothing invalid passes
// unseen) and calls the same handler, in the same order, as RapidJSON's SAX reader: the two
// readers agree on every input simdjson accepts (the fuzz target checks this). Whatever simdjson
// rejects (bad JSON, invalid UTF-8, NaN/Infinity literals, numbers beyond a double) or the handler
// stops (nesting too deep) is handed back, and the caller lets the RapidJSON reader decide it:
// its error messages, byte offsets and extensions stay exactly as they were.
namespace od = simdjson::ondemand;

class SimdWalker {
 public:
  explicit SimdWalker(TraceHandler* handler) : h_(handler) {}

  // Each returns false when the walk must stop: a simdjson error or a handler refusal.
  bool Value(od::value v) {
    od::json_type type;
    if (v.type().get(type) != simdjson::SUCCESS) return false;
    switch (type) {
      case od::json_type::object: {
        od::object o;
        if (v.get_object().get(o) != simdjson::SUCCESS) return false;
        return Object(o);
      }
      case od::json_type::array: {
        od::array a;
        if (v.get_array().get(a) != simdjson::SUCCESS) return false;
        return Array(a);
      }
      case od::json_type::string: {
        // Without escapes the string is its raw bytes: no copy, and the value is left for the
        // iterator to step over.
        const std::string_view raw = v.raw_json_token();
        if (raw.empty() || raw[0] != '"') return false;
        std::string_view s;
        switch (ScanString(raw.data() + 1, &s)) {
          case kPlain: break;
          case kEscaped:
            if (v.get_string().get(s) != simdjson::SUCCESS) return false;
            break;
          case kControl: return false;  // RapidJSON's error to report
        }
        return h_->String(s.data(), static_cast<rapidjson::SizeType>(s.size()), true);
      }
      case od::json_type::number:
        return Number(v);
      case od::json_type::boolean: {
        bool b = false;
        if (v.get_bool().get(b) != simdjson::SUCCESS) return false;
        return h_->Bool(b);
      }
      case od::json_type::null: {
        bool is_null = false;
        if (v.is_null().get(is_null) != simdjson::SUCCESS || !is_null) return false;
        return h_->Null();
      }
    }
    return false;
  }

  bool Object(od::object o) {
    if (!h_->StartObject()) return false;
    for (auto field : o) {
      od::field f;
      if (std::move(field).get(f) != simdjson::SUCCESS) return false;
      std::string_view key;
      switch (ScanString(f.key().raw(), &key)) {
        case kPlain: break;
        case kEscaped:
          if (f.unescaped_key().get(key) != simdjson::SUCCESS) return false;
          break;
        case kControl: return false;
      }
      if (!h_->Key(key.data(), static_cast<rapidjson::SizeType>(key.size()), true)) return false;
      if (!Value(f.value())) return false;
    }
    return h_->EndObject(0);
  }

  bool Array(od::array a) {
    if (!h_->StartArray()) return false;
    for (auto element : a) {
      od::value v;
      if (std::move(element).get(v) != simdjson::SUCCESS) return false;
      if (!Value(v)) return false;
    }
    return h_->EndArray(0);
  }

  enum StringKind { kPlain, kEscaped, kControl };
  // `p`: just after a string's opening quote (simdjson has checked that it closes, and its
  // buffers are padded, so 16-byte loads up to the closing quote stay inside). kPlain sets
  // `out` to its bytes; kControl: an unescaped control character, which JSON forbids (also
  // the zero padding after an unclosed string, for ElementWalker, which has no simdjson check).
  static StringKind ScanString(const char* p, std::string_view* out) {
    const char* q = p;
#if defined(__SSE2__)
    const __m128i quote = _mm_set1_epi8('"');
    const __m128i backslash = _mm_set1_epi8('\\');
    const __m128i control = _mm_set1_epi8(0x1F);
    while (true) {  // to the first quote, backslash or control character
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
      const __m128i is_quote = _mm_cmpeq_epi8(v, quote);
      const __m128i hit = _mm_or_si128(
          _mm_or_si128(is_quote, _mm_cmpeq_epi8(v, backslash)),
          _mm_cmpeq_epi8(_mm_min_epu8(v, control), v));  // v <= 0x1F
      const auto m = static_cast<unsigned>(_mm_movemask_epi8(hit));
      if (m != 0) {
        q += std::countr_zero(m);
        // The first hit a quote: the string ends there (decided from the masks, without
        // reading the byte back).
        if ((m & (0u - m) & static_cast<unsigned>(_mm_movemask_epi8(is_quote))) != 0) {
          *out = std::string_view(p, static_cast<size_t>(q - p));
          return kPlain;
        }
        break;
      }
      q += 16;
    }
#endif
    while (true) {
      const auto c = static_cast<unsigned char>(*q);
      if (c == '"') break;
      if (c == '\\') return kEscaped;
      if (c < 0x20) return kControl;
      ++q;
    }
    *out = std::string_view(p, static_cast<size_t>(q - p));
    return kPlain;
  }

 private:
  // Numbers are converted from their text by ConvertNumber, as RapidJSON's are, not by simdjson:
  // its 3.0 on-demand get_number() reads a fraction of more than 19 significant digits as 0
  // (1682725897235145.250, a timestamp with nanoseconds) and get_double() some of them wrongly
  // (0.30000000000000001665 as 0.1155...); the fuzz target found both. A number beyond a double,
  // or text that is not JSON's number grammar, is left to RapidJSON.
  bool Number(od::value v) {
    std::string_view t = v.raw_json_token();
    NumberShape shape;
    if (!ScanNumber(t, &shape) || shape.big_exponent) return false;
    // A value the handler does not keep needs no conversion when both readers surely accept it
    // as a finite number: no exponent, at most 300 integer digits.
    if (!h_->WantsScalar() && !shape.exponent && shape.integer_digits <= 300) return true;
    NumberKind kind;
    int64_t i = 0;
    uint64_t u = 0;
    double d = 0, beyond = 0;
    // Beyond a double RapidJSON decides: it refuses some such numbers (too many digits) itself.
    if (!ConvertNumber(t.substr(0, shape.length), &kind, &i, &u, &d, &beyond)) return false;
    switch (kind) {
      case NumberKind::kInt64: return h_->Int64(i);
      case NumberKind::kUint64: return h_->Uint64(u);
      case NumberKind::kDouble: return h_->Double(d);
    }
    return false;
  }

  struct NumberShape {
    size_t length = 0;  // of the number, without the whitespace after it
    size_t integer_digits = 0;
    bool fraction = false, exponent = false;
    // A positive exponent above 308: RapidJSON refuses some such numbers whatever their value
    // (0E400: kParseErrorNumberTooBig), so it decides them.
    bool big_exponent = false;
  };
  // JSON's number grammar, -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?, followed by whitespace
  // only (the token runs to the next structural character).
  static bool ScanNumber(std::string_view t, NumberShape* shape) {
    const auto digit = [&](size_t i) { return i < t.size() && t[i] >= '0' && t[i] <= '9'; };
    size_t i = 0;
    if (i < t.size() && t[i] == '-') ++i;
    if (!digit(i)) return false;
    const size_t first_digit = i;
    if (t[i] == '0') {
      ++i;
    } else {
      while (digit(i)) ++i;
    }
    shape->integer_digits = i - first_digit;
    if (i < t.size() && t[i] == '.') {
      const size_t first = ++i;
      while (digit(i)) ++i;
      if (i == first) return false;
      shape->fraction = true;
    }
    if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
      ++i;
      const bool negative = i < t.size() && t[i] == '-';
      if (i < t.size() && (t[i] == '+' || t[i] == '-')) ++i;
      const size_t first = i;
      int exponent = 0;
      for (; digit(i); ++i) exponent = std::min(exponent * 10 + (t[i] - '0'), 1000);
      if (i == first) return false;
      shape->exponent = true;
      shape->big_exponent = !negative && exponent > 308;
    }
    shape->length = i;
    while (i < t.size() && (t[i] == ' ' || t[i] == '\n' || t[i] == '\r' || t[i] == '\t')) ++i;
    return i == t.size();
  }

  TraceHandler* h_;
};

// Walks a whole document (an object or an array at the root) through the handler. false: the
// RapidJSON reader must decide this input (a simdjson error, a scalar root, trailing content or
// a handler refusal).
bool WalkDocument(od::document& doc, SimdWalker& walker) {
  od::json_type type;
  if (doc.type().get(type) != simdjson::SUCCESS) return false;
  bool ok = false;
  if (type == od::json_type::object) {
    od::object o;
    ok = doc.get_object().get(o) == simdjson::SUCCESS && walker.Object(o);
  } else if (type == od::json_type::array) {
    od::array a;
    ok = doc.get_array().get(a) == simdjson::SUCCESS && walker.Array(a);
  }  // a scalar document is never a trace: RapidJSON says which error it is
  // Anything after the root value (or an error that killed the iterator) is RapidJSON's to report.
  return ok && doc.current_location().error() == simdjson::OUT_OF_BOUNDS;
}

// Walks the elements of a batch document "[e1,...,ek]" as elements of the open events list.
bool WalkElements(od::document& doc, SimdWalker& walker) {
  od::array a;
  if (doc.get_array().get(a) != simdjson::SUCCESS) return false;
  for (auto element : a) {
    od::value v;
    if (std::move(element).get(v) != simdjson::SUCCESS || !walker.Value(v)) return false;
  }
  return doc.current_location().error() == simdjson::OUT_OF_BOUNDS;
}

// --- the events' own walker ----------------------------------------------------------------------
// Reads the elements of a batch ("[e1,...,ek]") in one pass over its bytes, without simdjson's
// on-demand machinery (which cost ~60 % of the walking thread), calling the handler as it goes in
// document order: the handler gets exactly the calls RapidJSON's reader (and SimdWalker) would
// make, and dispatches on each key as before. It takes only what both readers read the same way:
// event objects, strings without escapes, numbers without exponents (kept ones of at most 40
// characters, integers that fit 64 bits), true/false/null, at most 64 levels inside an element.
// On anything else it declines the element: the handler is put back between two elements (the
// event is dropped unfinished; the only trace it can leave, an interned Input Dims string, is the
// one the next walk of the same element interns first again, so string ids do not change), and
// the batch from that element on is walked by SimdWalker as before. Numbers are converted only
// where the handler keeps them (WantsScalar); the others are only checked against JSON's grammar.
class ElementWalker {
 public:
  enum Result { kWalked, kRefused, kDeclined };
  explicit ElementWalker(TraceHandler* handler) : h_(handler) {}
  int64_t walked = 0, declined = 0;  // elements (internal::EventWalkCounts)

  // `text`: "[e1,...,ek]" followed by simdjson's (zero) padding. kRefused: the handler stopped,
  // or the text is not a list of elements (RapidJSON decides the input). kDeclined: *resume is the
  // offset of the first element not walked; every element before it was.
  Result Walk(std::string_view text, size_t* resume) {
    const char* const begin = text.data();
    const char* const end = begin + text.size();
    if (text.empty() || *begin != '[') return kRefused;
    const char* p = SkipWs(begin + 1);
    if (*p == ']') return SkipWs(p + 1) == end ? kWalked : kRefused;
    while (true) {
      refused_ = false;
      const char* next = *p == '{' ? Element(p) : nullptr;  // other elements: SimdWalker's
      if (refused_) return kRefused;
      if (next == nullptr) {
        ++declined;
        h_->AbandonElement();
        *resume = static_cast<size_t>(p - begin);
        return kDeclined;
      }
      ++walked;
      p = SkipWs(next);
      if (*p == ',') {
        p = SkipWs(p + 1);
        if (*p == ']') return kRefused;  // a trailing comma (a decline here would lose the comma)
        continue;
      }
      return *p == ']' && SkipWs(p + 1) == end ? kWalked : kRefused;
    }
  }

 private:
  static constexpr int kMaxElementDepth = 64;  // one bit each in `objects`

  static const char* SkipWs(const char* p) {
    while (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t') ++p;
    return p;
  }
  static bool Digit(char c) { return c >= '0' && c <= '9'; }
  // A handler call's result: false stops the walk (refused_).
  bool Ok(bool handler_result) {
    refused_ = !handler_result;
    return handler_result;
  }

  // One element from `p` (a value, not whitespace); returns just after it, or null: declined
  // (or refused_).
  const char* Element(const char* p) {
    uint64_t objects = 0;  // bit d: the container at depth d + 1 is an object
    int depth = 0;
    while (true) {
      switch (*p) {  // p: at a value
        case '{':
          if (depth == kMaxElementDepth || !Ok(h_->StartObject())) return nullptr;
          p = SkipWs(p + 1);
          if (*p == '}') {
            if (!Ok(h_->EndObject(0))) return nullptr;
            ++p;
            break;
          }
          objects |= uint64_t{1} << depth;
          ++depth;
          if ((p = Key(p)) == nullptr) return nullptr;
          continue;
        case '[':
          if (depth == kMaxElementDepth || !Ok(h_->StartArray())) return nullptr;
          p = SkipWs(p + 1);
          if (*p == ']') {
            if (!Ok(h_->EndArray(0))) return nullptr;
            ++p;
            break;
          }
          objects &= ~(uint64_t{1} << depth);
          ++depth;
          continue;
        case '"': {
          std::string_view s;
          if (!PlainString(p, &s)) return nullptr;
          // Scalars the handler would not keep are not passed (its call would change nothing).
          if (h_->WantsScalar() &&
              !Ok(h_->String(s.data(), static_cast<rapidjson::SizeType>(s.size()), true))) {
            return nullptr;
          }
          p = s.data() + s.size() + 1;
          break;
        }
        case 't':
          if (std::memcmp(p, "true", 4) != 0 || (h_->WantsScalar() && !Ok(h_->Bool(true)))) {
            return nullptr;
          }
          p += 4;
          break;
        case 'f':
          if (std::memcmp(p, "false", 5) != 0 || (h_->WantsScalar() && !Ok(h_->Bool(false)))) {
            return nullptr;
          }
          p += 5;
          break;
        case 'n':
          if (std::memcmp(p, "null", 4) != 0 || (h_->WantsScalar() && !Ok(h_->Null()))) {
            return nullptr;
          }
          p += 4;
          break;
        default:
          if ((p = Number(p)) == nullptr) return nullptr;
          break;
      }
      // After a value: close containers until one continues with a comma.
      while (true) {
        if (depth == 0) return p;
        p = SkipWs(p);
        const bool object = ((objects >> (depth - 1)) & 1) != 0;
        if (*p == ',') {
          p = SkipWs(p + 1);
          if (object && (p = Key(p)) == nullptr) return nullptr;
          break;
        }
        if (*p != (object ? '}' : ']') || !Ok(object ? h_->EndObject(0) : h_->EndArray(0))) {
          return nullptr;
        }
        ++p;
        --depth;
      }
    }
  }

  // `p` at a key's opening quote: the key, then the colon; returns the value's first byte.
  const char* Key(const char* p) {
    std::string_view s;
    if (*p != '"' || !PlainString(p, &s)) return nullptr;
    const char* q = SkipWs(s.data() + s.size() + 1);
    if (*q != ':' || !Ok(h_->Key(s.data(), static_cast<rapidjson::SizeType>(s.size()), true))) {
      return nullptr;
    }
    return SkipWs(q + 1);
  }
  // A string without escapes or control characters (an unclosed one runs into the zero padding).
  static bool PlainString(const char* quote, std::string_view* s) {
    return SimdWalker::ScanString(quote + 1, s) == SimdWalker::kPlain &&
           s->size() <= std::numeric_limits<rapidjson::SizeType>::max();
  }

  // -?(0|[1-9][0-9]*)(.[0-9]+)? and nothing of a number after it (what follows is checked by the
  // caller); exponents are declined. Numbers the handler keeps are passed as RapidJSON and
  // simdjson pass them: int64, uint64 beyond it, a double where there is a fraction (correctly
  // rounded, as simdjson's; at most 40 characters: finite); integers beyond 64 bits (RapidJSON
  // computes those its own way) are declined. Others are only checked (at most 300 integer
  // digits, as SimdWalker::Number: both readers accept those).
  const char* Number(const char* p) {
    const char* q = p;
    const bool minus = *q == '-';
    q += minus;
    uint64_t int_value = 0;  // exact up to 19 digits
    if (*q == '0') {
      ++q;
    } else if (*q >= '1' && *q <= '9') {
      for (; Digit(*q); ++q) int_value = int_value * 10 + static_cast<uint64_t>(*q - '0');
    } else {
      return nullptr;
    }
    const size_t digits = static_cast<size_t>(q - p) - minus;
    bool frac = false;
    if (*q == '.') {
      ++q;
      if (!Digit(*q)) return nullptr;
      while (Digit(*q)) ++q;
      frac = true;
    }
    if (*q == 'e' || *q == 'E' || digits > 300) return nullptr;
    if (!h_->WantsScalar()) return q;
    if (!frac && digits <= 18) {  // the common case, without from_chars' generality
      const auto v = static_cast<int64_t>(int_value);
      return Ok(h_->Int64(minus ? -v : v)) ? q : nullptr;
    }
    if (frac && q - p - minus <= 16) {
      // At most 15 digits (and the point): the digits as an integer below 2^53 and a power of
      // ten up to 10^15 are exact doubles, so their quotient is correctly rounded (Clinger's
      // fast path), as from_chars' and simdjson's.
      static constexpr double kPow10[] = {1e0, 1e1, 1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                          1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};
      uint64_t m = 0;
      int scale = 0;
      for (const char* d = p + minus; d != q; ++d) {
        if (*d == '.') {
          scale = static_cast<int>(q - d - 1);
          continue;
        }
        m = m * 10 + static_cast<uint64_t>(*d - '0');
      }
      const double v = static_cast<double>(m) / kPow10[scale];
      return Ok(h_->Double(minus ? -v : v)) ? q : nullptr;
    }
    if (q - p > 40) return nullptr;
    NumberKind kind;
    int64_t i = 0;
    uint64_t u = 0;
    double d = 0, beyond = 0;
    if (!ConvertNumber(std::string_view(p, static_cast<size_t>(q - p)), &kind, &i, &u, &d,
                       &beyond) ||
        (!frac && kind == NumberKind::kDouble)) {
      return nullptr;  // integers beyond 64 bits: SimdWalker's
    }
    const bool ok = kind == NumberKind::kInt64    ? Ok(h_->Int64(i))
                    : kind == NumberKind::kUint64 ? Ok(h_->Uint64(u))
                                                  : Ok(h_->Double(d));
    return ok ? q : nullptr;
  }

  TraceHandler* h_;
  bool refused_ = false;
};

// --- streaming: the events list in batches ------------------------------------------------------
// A trace is one JSON document, but simdjson's on-demand parser wants a whole document in memory
// (and indexes it whole: ~4 bytes per token). So a splitter cuts the byte stream, as it arrives,
// into documents simdjson parses one at a time:
//   - the events ("traceEvents" at the root, or the root list itself): batches of whole
//     elements, each parsed as the document "[e1,...,ek]", walked as elements of the list;
//   - the skeleton: everything else, i.e. the document with each events list emptied ("[]"),
//     parsed at the end (device properties, the checks that make it a trace).
// The handler sees the events between a synthetic {"traceEvents": [ ... ]} (or [ ... ]), so it
// is in exactly the state RapidJSON's reader would put it in; the skeleton's root keys come after
// the events instead of around them, which changes nothing the handler keeps (the events do not
// depend on them). The splitter tracks strings, escapes and nesting only; everything it cuts is
// validated by simdjson (the skeleton keeps every byte outside the events' elements, each batch
// every byte of its elements), the separators it cuts at are checked by it (no empty element,
// no trailing comma). Whatever it cannot cut (a root key with an escape, a document that ends
// early) goes to the RapidJSON reader.
constexpr size_t kBlockBytes = size_t{1} << 18;  // read / inflate unit
constexpr size_t kBatchBytes = size_t{1} << 18;  // JSON per simdjson document of events

// JSON text followed by simdjson's padding.
class PaddedText {
 public:
  void Append(const char* p, size_t n) {
    if (n == 0) return;
    Reserve(size_ + n);
    std::memcpy(data_.get() + size_, p, n);
    size_ += n;
  }
  void Push(char c) { Append(&c, 1); }
  void Clear() { size_ = 0; }
  size_t size() const { return size_; }
  // Room for `want` bytes of text without growing (growing copies the text).
  void Reserve(size_t want) {
    if (data_ && want <= capacity_) return;
    const size_t capacity = std::max({want, capacity_ * 2, size_t{4096}});
    std::unique_ptr<char[]> bigger(new char[capacity + simdjson::SIMDJSON_PADDING]);
    if (size_ > 0) std::memcpy(bigger.get(), data_.get(), size_);
    data_ = std::move(bigger);
    capacity_ = capacity;
  }
  simdjson::padded_string_view view() {
    Reserve(size_);
    std::memset(data_.get() + size_, 0, simdjson::SIMDJSON_PADDING);
    return simdjson::padded_string_view(data_.get(), size_, capacity_ + simdjson::SIMDJSON_PADDING);
  }

 private:
  std::unique_ptr<char[]> data_;
  size_t size_ = 0, capacity_ = 0;
};

struct Piece {
  enum Kind { kBeginEvents, kEvents, kEndEvents, kSkeleton };
  Kind kind = kEvents;
  bool bare_list = false;  // kBeginEvents / kEndEvents: the events list is the root
  PaddedText text;         // kEvents: "[e1,...,ek]"; kSkeleton: the document, events emptied
  // The text indexed already (simdjson's first stage) by `parser`, where the piece was made;
  // null: the walking thread indexes it itself.
  std::unique_ptr<od::parser> parser;
  od::document doc;
  simdjson::error_code index_error = simdjson::SUCCESS;
};

// Parsers for pieces indexed in the reading thread: each goes back once its piece is walked, so
// there are never more than the pieces in flight (the queue's capacity plus two).
class ParserPool {
 public:
  std::unique_ptr<od::parser> Get() {
    std::lock_guard<std::mutex> lock(mu_);
    if (free_.empty()) return std::make_unique<od::parser>();
    std::unique_ptr<od::parser> p = std::move(free_.back());
    free_.pop_back();
    return p;
  }
  void Put(std::unique_ptr<od::parser> p) {
    std::lock_guard<std::mutex> lock(mu_);
    free_.push_back(std::move(p));
  }
  // simdjson's first stage (the structural index, ~1/8 of the parse's CPU) of a piece, in the
  // thread that made it: it overlaps with the walk of the pieces before it.
  // The batches of events are not indexed: ElementWalker reads them from their text.
  void Index(Piece& piece) {
    if (piece.kind != Piece::kSkeleton) return;
    piece.parser = Get();
    piece.index_error = piece.parser->iterate(piece.text.view()).get(piece.doc);
  }

 private:
  std::mutex mu_;
  std::vector<std::unique_ptr<od::parser>> free_;
};

class EventSplitter {
 public:
  using Sink = std::function<bool(Piece&&)>;  // false: stop
  EventSplitter(size_t batch_bytes, Sink sink) : batch_bytes_(batch_bytes), sink_(std::move(sink)) {}

  // false: stop (the sink refused, or this input is the RapidJSON reader's).
  bool Feed(const char* p, size_t n) {
    size_t seg = 0;  // start of the bytes not yet routed to the skeleton or the batch
    for (size_t i = 0; i < n; ++i) {
      // Inside the events list (almost every byte of a trace): 64 bytes at a time, by bit masks.
      // It stops at the bracket that closes the list, left to the byte-wise machine below.
      if (events_depth_ >= 0) {
        if (!ScanEvents(p, n, &i, &seg)) return false;
        if (i == n) break;
      }
      // Outside it: skip to the next byte that matters inside a string.
      if (in_string_ && !escaped_ && !in_key_) {
        i = SkipInString(p, i, n);
        if (i == n) break;
      }
      const auto c = static_cast<unsigned char>(p[i]);
      if (in_string_) {
        if (escaped_) {
          escaped_ = false;
        } else if (c == '\\') {
          escaped_ = true;
          key_escape_ = true;
        } else if (c == '"') {
          in_string_ = false;
          if (in_key_) {
            in_key_ = false;
            key_is_events_ = !key_escape_ && key_ == "traceEvents";
          }
          continue;
        }
        if (in_key_) key_ += static_cast<char>(c);
        continue;
      }
      switch (c) {
        case ' ': case '\t': case '\n': case '\r':
          break;
        case '"':
          Token();
          in_string_ = true;
          if (depth_ == 1 && root_ == '{' && expect_key_) {
            in_key_ = true;
            key_.clear();
            key_escape_ = false;
            expect_key_ = false;
          }
          break;
        case '{': case '[':
          if (depth_ == 0 && root_ == 0) root_ = static_cast<char>(c);
          if (c == '[' && events_depth_ < 0 &&
              ((depth_ == 0 && root_ == '[' && !root_done_) ||
               (depth_ == 1 && root_ == '{' && events_value_))) {
            events_value_ = false;
            ++depth_;
            if (depth_ == 1) root_done_ = true;
            skeleton_.text.Append(p + seg, i + 1 - seg);
            seg = i + 1;
            if (!BeginEvents()) return false;
            break;
          }
          Token();
          if (depth_ == 1 && root_ == '{') events_value_ = false;
          ++depth_;
          if (depth_ == 1) expect_key_ = true;
          break;
        case '}': case ']':
          if (events_depth_ >= 0 && depth_ == events_depth_) {  // the events list closes
            batch_.text.Append(p + seg, i - seg);
            seg = i;
            if (!EndEvents()) return false;
          } else {
            Token();
          }
          if (--depth_ < 0) return false;
          if (depth_ == 0) root_done_ = true;
          break;
        case ',':
          if (depth_ == 1 && root_ == '{') {
            expect_key_ = true;
            events_value_ = false;
          }
          break;
        case ':':
          if (depth_ == 1 && root_ == '{') events_value_ = key_is_events_;
          break;
        default:
          Token();
          if (depth_ == 1 && root_ == '{') events_value_ = false;
          break;
      }
    }
    (events_depth_ >= 0 ? batch_.text : skeleton_.text).Append(p + seg, n - seg);
    return true;
  }

  // Runs over p[*at, n) while the events list is open, 64 bytes at a time: bit masks of the
  // quotes, backslashes and brackets, escapes resolved (backslashes are rare: bit by bit), the
  // inside of strings by a prefix XOR of the unescaped quotes (as simdjson's first stage does),
  // so only the brackets outside strings are visited one by one (~1 per 64 bytes of a trace).
  // Each element that brings the depth back to the list's is a place to cut a batch, at the
  // comma after it. Returns with *at == n, or with p[*at] the bracket that closes the list (not
  // consumed, outside any string). false: the sink refused.
  bool ScanEvents(const char* p, size_t n, size_t* at, size_t* seg) {
    size_t i = *at;
    char tail[64];
    while (i < n) {
      const size_t len = std::min<size_t>(64, n - i);
      const char* chunk = p + i;
      if (len < 64) {  // the last bytes of the block, padded with spaces (no bits)
        std::memset(tail, ' ', sizeof(tail));
        std::memcpy(tail, chunk, len);
        chunk = tail;
      }
      const Masks m = Classify(chunk);
      uint64_t escaped = escaped_ ? 1 : 0;
      bool escape_out = false;
      for (uint64_t x = m.backslash; x != 0; x &= x - 1) {
        const int b = std::countr_zero(x);
        if ((escaped >> b) & 1) continue;  // an escaped backslash escapes nothing
        if (static_cast<size_t>(b) + 1 < len) {
          escaped |= uint64_t{1} << (b + 1);
        } else {
          escape_out = true;  // escapes the first byte of the next 64
        }
      }
      uint64_t inside = PrefixXor(m.quote & ~escaped);  // from an opening quote to the closing one
      if (in_string_) inside = ~inside;
      for (uint64_t x = m.bracket & ~inside; x != 0; x &= x - 1) {
        const int b = std::countr_zero(x);
        const char c = chunk[b];
        if (c == '{' || c == '[') {
          ++depth_;
          continue;
        }
        if (depth_ == events_depth_) {  // the list closes
          in_string_ = escaped_ = false;
          *at = i + static_cast<size_t>(b);
          return true;
        }
        if (--depth_ != events_depth_) continue;
        const size_t end = i + static_cast<size_t>(b) + 1;  // just after the element
        if (batch_.text.size() + (end - *seg) < batch_bytes_) continue;
        size_t k = end;
        while (k < n && (p[k] == ' ' || p[k] == '\n' || p[k] == '\r' || p[k] == '\t')) ++k;
        if (k == n || p[k] != ',') continue;  // not here (simdjson judges whatever it is)
        batch_.text.Append(p + *seg, end - *seg);
        *seg = k + 1;  // the comma is dropped: the next batch starts after it
        ++cuts_;
        if (!EmitBatch()) return false;
      }
      in_string_ = (inside >> 63) != 0;
      escaped_ = escape_out;
      i += len;
    }
    *at = n;
    return true;
  }

  struct Masks {
    uint64_t quote = 0, backslash = 0, bracket = 0;  // bit k: byte k of the 64
  };
  static Masks Classify(const char* p) {
    Masks m;
#if defined(__SSE2__)
    const __m128i quote = _mm_set1_epi8('"');
    const __m128i backslash = _mm_set1_epi8('\\');
    const __m128i lower = _mm_set1_epi8(0x20);
    const __m128i open = _mm_set1_epi8('{');   // '[' | 0x20 == '{'
    const __m128i close = _mm_set1_epi8('}');  // ']' | 0x20 == '}'
    for (int k = 0; k < 4; ++k) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * k));
      const __m128i folded = _mm_or_si128(v, lower);
      auto bits = [&](__m128i eq) {
        return static_cast<uint64_t>(static_cast<uint16_t>(_mm_movemask_epi8(eq))) << (16 * k);
      };
      m.quote |= bits(_mm_cmpeq_epi8(v, quote));
      m.backslash |= bits(_mm_cmpeq_epi8(v, backslash));
      m.bracket |= bits(_mm_or_si128(_mm_cmpeq_epi8(folded, open), _mm_cmpeq_epi8(folded, close)));
    }
#else
    for (int k = 0; k < 64; ++k) {
      const char c = p[k];
      const uint64_t bit = uint64_t{1} << k;
      if (c == '"') m.quote |= bit;
      if (c == '\\') m.backslash |= bit;
      if (c == '{' || c == '}' || c == '[' || c == ']') m.bracket |= bit;
    }
#endif
    return m;
  }
  // Bit k of the result: the XOR of bits 0..k of x.
  static uint64_t PrefixXor(uint64_t x) {
    x ^= x << 1;
    x ^= x << 2;
    x ^= x << 4;
    x ^= x << 8;
    x ^= x << 16;
    x ^= x << 32;
    return x;
  }

  // The first i' >= i with p[i'] a quote or a backslash (n if none).
  static size_t SkipInString(const char* p, size_t i, size_t n) {
#if defined(__SSE2__)
    const __m128i quote = _mm_set1_epi8('"');
    const __m128i backslash = _mm_set1_epi8('\\');
    for (; i + 16 <= n; i += 16) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
      const int m = _mm_movemask_epi8(
          _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)));
      if (m != 0) return i + static_cast<size_t>(std::countr_zero(static_cast<unsigned>(m)));
    }
#endif
    for (; i < n; ++i) {
      if (p[i] == '"' || p[i] == '\\') return i;
    }
    return n;
  }
  // At the end of the input: hands on the skeleton. false: the document ended early.
  bool Finish() {
    if (in_string_ || depth_ != 0 || events_depth_ >= 0) return false;
    skeleton_.kind = Piece::kSkeleton;
    return sink_(std::move(skeleton_));
  }

 private:
  // The byte-wise machine never sees the inside of an events list (ScanEvents does).
  void Token() {}
  bool BeginEvents() {
    events_depth_ = depth_;
    cuts_ = 0;
    Piece begin;
    begin.kind = Piece::kBeginEvents;
    begin.bare_list = depth_ == 1;
    NewBatch();
    return sink_(std::move(begin));
  }
  bool EndEvents() {
    // The batch after the last cut: "[" and whitespace only is no element. After a cut (a
    // comma dropped) that is a trailing comma, which JSON forbids; else an empty list.
    const std::string_view rest = batch_.text.view().substr(1);
    const bool element = rest.find_first_not_of(" \t\n\r") != std::string_view::npos;
    if (!element && cuts_ > 0) return false;
    if (element && !EmitBatch()) return false;
    Piece end;
    end.kind = Piece::kEndEvents;
    end.bare_list = events_depth_ == 1;
    events_depth_ = -1;
    return sink_(std::move(end));
  }
  void NewBatch() {
    batch_ = Piece();
    batch_.kind = Piece::kEvents;
    // A batch ends at the first element end past batch_bytes_: sized once, not grown by
    // doubling (each doubling copied it).
    batch_.text.Reserve(std::min(batch_bytes_, size_t{1} << 20) + (size_t{1} << 14));
    batch_.text.Push('[');
  }
  bool EmitBatch() {
    batch_.text.Push(']');
    const bool ok = sink_(std::move(batch_));
    NewBatch();
    return ok;
  }

  const size_t batch_bytes_;
  Sink sink_;
  Piece skeleton_, batch_;
  int64_t depth_ = 0;
  int64_t events_depth_ = -1;  // the depth inside the open events list; -1 when none is open
  int64_t cuts_ = 0;          // batches cut (at a comma) in the open events list
  char root_ = 0;             // '{', '[' or 0 (none yet, or a scalar)
  bool root_done_ = false;    // the first root value has ended (or opened, for a list)
  bool in_string_ = false, escaped_ = false;
  bool in_key_ = false, key_escape_ = false, expect_key_ = false;
  bool key_is_events_ = false;  // the last root key was "traceEvents" (with no escape)
  bool events_value_ = false;   // just after "traceEvents": at the root
  std::string key_;
};

// Parses the pieces in order through one handler.
class PieceParser {
 public:
  // `pool`: where the parsers of pieces indexed elsewhere go back (null: none are).
  explicit PieceParser(TraceData* data, ParserPool* pool = nullptr)
      : handler_(data), walker_(&handler_), elements_(&handler_), pool_(pool) {}
  bool Take(Piece& piece) {
    if (piece.kind != Piece::kEvents && piece.kind != Piece::kSkeleton) return TakeMark(piece);
    if (piece.kind == Piece::kEvents && piece.parser == nullptr) return TakeEvents(piece);
    od::document own;
    od::document* doc = &piece.doc;
    bool ok = true;
    if (piece.parser == nullptr) {
      ok = parser_.iterate(piece.text.view()).get(own) == simdjson::SUCCESS;
      doc = &own;
    } else {
      ok = piece.index_error == simdjson::SUCCESS;
    }
    if (ok) {
      ok = piece.kind == Piece::kEvents ? WalkElements(*doc, walker_) : WalkDocument(*doc, walker_);
    }
    if (piece.parser != nullptr && pool_ != nullptr) {
      piece.doc = od::document();  // lets go of the parser before it is reused
      pool_->Put(std::move(piece.parser));
    }
    return ok;
  }
  const TraceHandler& handler() const { return handler_; }
  internal::EventWalkCounts counts() const { return {elements_.walked, elements_.declined}; }

 private:
  bool TakeMark(const Piece& piece) {
    switch (piece.kind) {
      case Piece::kBeginEvents:
        if (piece.bare_list) return handler_.StartArray();
        return handler_.StartObject() && handler_.Key("traceEvents", 11, true) &&
               handler_.StartArray();
      case Piece::kEndEvents:
        if (piece.bare_list) return handler_.EndArray(0);
        return handler_.EndArray(0) && handler_.EndObject(0);
      case Piece::kEvents:
      case Piece::kSkeleton:
        break;
    }
    return false;
  }

  // A batch by ElementWalker; from the first element it declines on, by simdjson (SimdWalker):
  // the rest of the batch as the document "[ej,...,ek]".
  bool TakeEvents(Piece& piece) {
    const simdjson::padded_string_view text = piece.text.view();
    size_t resume = 0;
    switch (elements_.Walk(text, &resume)) {
      case ElementWalker::kWalked: return true;
      case ElementWalker::kRefused: return false;
      case ElementWalker::kDeclined: break;
    }
    rest_.Clear();
    rest_.Push('[');
    rest_.Append(text.data() + resume, text.size() - resume);
    od::document doc;
    return parser_.iterate(rest_.view()).get(doc) == simdjson::SUCCESS &&
           WalkElements(doc, walker_);
  }

  TraceHandler handler_;
  SimdWalker walker_;
  ElementWalker elements_;
  ParserPool* pool_;
  od::parser parser_;
  PaddedText rest_;
};

// A bounded queue between the reading thread and the parsing one.
class PieceQueue {
 public:
  explicit PieceQueue(size_t capacity) : capacity_(capacity) {}
  bool Push(Piece&& piece) {
    std::unique_lock<std::mutex> lock(mu_);
    not_full_.wait(lock, [&] { return cancelled_ || items_.size() < capacity_; });
    if (cancelled_) return false;
    items_.push_back(std::move(piece));
    not_empty_.notify_one();
    return true;
  }
  bool Pop(Piece* piece) {
    std::unique_lock<std::mutex> lock(mu_);
    not_empty_.wait(lock, [&] { return closed_ || !items_.empty(); });
    if (items_.empty()) return false;
    *piece = std::move(items_.front());
    items_.pop_front();
    not_full_.notify_one();
    return true;
  }
  void Close() {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    not_empty_.notify_all();
  }
  void Cancel() {
    std::lock_guard<std::mutex> lock(mu_);
    cancelled_ = true;
    items_.clear();
    not_full_.notify_all();
  }

 private:
  const size_t capacity_;
  std::mutex mu_;
  std::condition_variable not_full_, not_empty_;
  std::deque<Piece> items_;
  bool closed_ = false, cancelled_ = false;
};

// A partial result (the events of one batch, walked on their own) appended to `out`: string ids
// renumbered, side-table indexes shifted. The partial's strings are interned in the order it
// interned them, after those of every batch before it: the order one walk in file order interns
// them, so the string table (ids included) is the same.
void MergePartial(const TraceData& part, TraceData* out) {
  std::vector<uint32_t> ids(part.strings.size());
  for (uint32_t i = 0; i < ids.size(); ++i) ids[i] = out->strings.Intern(part.strings.Get(i));
  const auto flops_base = static_cast<uint32_t>(out->flops.size());
  const auto memory_base = static_cast<uint32_t>(out->memory.size());
  for (TraceEvent ev : part.events) {
    ev.name = ids[ev.name];
    ev.thread = ids[ev.thread];
    ev.shapes = ids[ev.shapes];
    if (ev.cls == EventClass::kMemoryInstant) {
      ev.aux += memory_base;  // an index
    } else if (ev.aux != 0) {
      ev.aux += flops_base;  // 1 + an index; 0: none
    }
    out->events.push_back(ev);
  }
  out->flops.insert(out->flops.end(), part.flops.begin(), part.flops.end());
  out->memory.insert(out->memory.end(), part.memory.begin(), part.memory.end());
  out->steps.insert(out->steps.end(), part.steps.begin(), part.steps.end());
  out->min_ts_ns = std::min(out->min_ts_ns, part.min_ts_ns);
  out->max_end_ns = std::max(out->max_end_ns, part.max_end_ns);
  out->has_input_shapes = out->has_input_shapes || part.has_input_shapes;
  ParseStats& s = out->stats;
  s.events += part.stats.events;
  s.complete_events += part.stats.complete_events;
  s.skipped_events += part.stats.skipped_events;
  s.non_numeric_ids += part.stats.non_numeric_ids;
  s.duplicate_steps += part.stats.duplicate_steps;
  s.unattributed_kernels += part.stats.unattributed_kernels;
}

// The pieces in order, batches of events walked on `workers` threads besides the caller's (which
// merges and, while it waits, walks too), each into a partial TraceData merged in file order
// (MergePartial): the result is the one of a walk in order. Every other piece (the events list's
// marks, the skeleton) goes to the caller's parser once every batch before it is merged.
// workers == 0: everything in order on the caller's thread.
class OrderedWalk {
 public:
  OrderedWalk(TraceData* out, ParserPool* pool, int workers) : out_(out), main_(out, pool) {
    for (int i = 0; i < workers; ++i) threads_.emplace_back([this] { Work(); });
  }
  ~OrderedWalk() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
      todo_.clear();
    }
    work_cv_.notify_all();
    for (std::thread& t : threads_) t.join();
  }
  OrderedWalk(const OrderedWalk&) = delete;
  OrderedWalk& operator=(const OrderedWalk&) = delete;

  // false: stop (the input is the RapidJSON reader's).
  bool Take(Piece& piece) {
    if (piece.kind == Piece::kEvents && !threads_.empty()) {
      auto job = std::make_unique<Job>();
      job->piece = std::move(piece);
      job->bare_list = bare_list_;
      {
        std::lock_guard<std::mutex> lock(mu_);
        todo_.push_back(job.get());
      }
      work_cv_.notify_one();
      in_flight_.push_back(std::move(job));
      return Merge(2 * threads_.size() + 2);
    }
    if (!Merge(0)) return false;
    if (piece.kind == Piece::kBeginEvents) bare_list_ = piece.bare_list;
    return main_.Take(piece);
  }
  // Merges every batch in flight. false: one failed.
  bool Drain() { return Merge(0); }
  // Why a walker's thread ended by an exception, "" when none did.
  std::string thread_error() {
    std::lock_guard<std::mutex> lock(mu_);
    return thread_error_;
  }

  const TraceHandler& handler() const { return main_.handler(); }
  internal::EventWalkCounts counts() const {
    internal::EventWalkCounts c = main_.counts();
    c.walked += counts_.walked;
    c.declined += counts_.declined;
    return c;
  }

 private:
  struct Job {
    Piece piece;
    bool bare_list = false;
    TraceData data;
    internal::EventWalkCounts counts;
    bool ok = false;
    bool done = false;  // under mu_
  };

  static void Run(Job* job) {
    job->data = EmptyData(job->piece.text.size());
    PieceParser parser(&job->data);
    Piece begin;  // puts the partial's handler inside an events list
    begin.kind = Piece::kBeginEvents;
    begin.bare_list = job->bare_list;
    job->ok = parser.Take(begin) && parser.Take(job->piece);
    job->counts = parser.counts();
    job->piece = Piece();  // the text is not needed any more
  }
  // A walker's thread. One that throws (std::bad_alloc, the test's injection) marks its batch
  // done and failed, and the reader failed (thread_error): the caller walks the batches left.
  void Work() {
    Job* job = nullptr;
    RunGuarded(
        "trace batch walker", "the trace read fails", [&] { WorkLoop(&job); },
        [&](const std::string& what) {
          {
            std::lock_guard<std::mutex> lock(mu_);
            if (job != nullptr) job->done = true;  // ok stays false
            if (thread_error_.empty()) {
              thread_error_ = absl::StrCat("a trace batch walker thread threw: ", what);
            }
          }
          done_cv_.notify_all();
        });
  }
  void WorkLoop(Job** job) {
    while (true) {
      {
        std::unique_lock<std::mutex> lock(mu_);
        *job = nullptr;
        work_cv_.wait(lock, [&] { return stop_ || !todo_.empty(); });
        if (stop_) return;
        *job = todo_.front();
        todo_.pop_front();
      }
      if (internal::g_batch_walker_throws_for_test.load() > 0 &&
          internal::g_batch_walker_throws_for_test.fetch_sub(1) > 0) {
        throw std::runtime_error("injected by the test");
      }
      Run(*job);
      {
        std::lock_guard<std::mutex> lock(mu_);
        (*job)->done = true;
      }
      done_cv_.notify_all();
    }
  }
  // Merges finished batches in order; waits (walking a queued batch itself if there is one)
  // while more than `keep` are in flight.
  bool Merge(size_t keep) {
    while (!in_flight_.empty()) {
      Job* front = in_flight_.front().get();
      Job* mine = nullptr;
      {
        std::unique_lock<std::mutex> lock(mu_);
        if (!front->done) {
          if (in_flight_.size() <= keep) return true;
          if (!todo_.empty()) {
            mine = todo_.front();
            todo_.pop_front();
          } else {
            done_cv_.wait(lock, [&] { return front->done; });
          }
        }
      }
      if (mine != nullptr) {
        Run(mine);
        std::lock_guard<std::mutex> lock(mu_);
        mine->done = true;
        continue;
      }
      if (!front->ok) return false;
      MergePartial(front->data, out_);
      counts_.walked += front->counts.walked;
      counts_.declined += front->counts.declined;
      in_flight_.pop_front();
    }
    return true;
  }

  TraceData* out_;
  PieceParser main_;
  bool bare_list_ = false;
  std::deque<std::unique_ptr<Job>> in_flight_;  // file order
  internal::EventWalkCounts counts_;
  std::mutex mu_;
  std::condition_variable work_cv_, done_cv_;
  std::deque<Job*> todo_;  // not started yet
  bool stop_ = false;
  std::string thread_error_;  // under mu_
  std::vector<std::thread> threads_;  // last: joined (by the destructor) before the rest goes
};

// Threads walking batches besides the caller's: one per core beyond the two the reading thread
// and the caller use (at most 6). None on two cores: measured on the 2-core dev box, a second
// walker cut the wall time by ~16 % while the other core was idle, added ~15 % when the box was
// busy, and cost ~15 % more CPU (the merge re-interns each batch's strings) either way.
int BatchWorkers() {
  const unsigned cores = std::thread::hardware_concurrency();
  return cores <= 2 ? 0 : static_cast<int>(std::min(cores - 2, 6u));
}

// The file, read (and inflated) on a thread of its own while this one parses. nullopt: the
// RapidJSON reader must decide this input.
std::optional<absl::StatusOr<TraceData>> ReadFileStreaming(const std::string& path) {
  ASSIGN_OR_RETURN(std::unique_ptr<BlockReader> reader, BlockReader::Open(path));
  TraceData data = EmptyData(reader->UncompressedSizeHint());
  ParserPool pool;
  OrderedWalk parser(&data, &pool, BatchWorkers());
  PieceQueue queue(4);
  absl::Status source_status;
  bool split_ok = true;
  auto produce = [&] {
    EventSplitter splitter(kBatchBytes, [&](Piece&& p) {
      pool.Index(p);
      return queue.Push(std::move(p));
    });
    std::vector<char> block(kBlockBytes);
    while (true) {
      auto n = reader->Read(block.data(), block.size());
      if (!n.ok()) {
        source_status = n.status();
        break;
      }
      if (*n == 0) {
        split_ok = splitter.Finish();
        break;
      }
      if (!splitter.Feed(block.data(), *n)) {
        split_ok = false;
        break;
      }
    }
    queue.Close();
  };
  // The read thread: one that throws fails the read (and closes the queue, so the parse ends).
  std::thread producer([&] {
    RunGuarded("trace read", "the trace read fails", produce, [&](const std::string& what) {
      source_status = absl::InternalError(
          absl::StrCat("reading ", path, ": the trace read thread threw: ", what));
      queue.Close();
    });
  });
  bool parse_ok = true;
  Piece piece;
  while (queue.Pop(&piece)) {
    if (!parser.Take(piece)) {
      parse_ok = false;
      queue.Cancel();
      break;
    }
  }
  if (parse_ok) parse_ok = parser.Drain();
  producer.join();
  if (!source_status.ok()) return source_status;
  if (std::string e = parser.thread_error(); !e.empty()) {
    return absl::InternalError(absl::StrCat("reading ", path, ": ", e));
  }
  if (!parse_ok || !split_ok) return std::nullopt;
  return Finish(std::move(data), parser.handler(), path);
}

}  // namespace

namespace internal {

std::atomic<int> g_batch_walker_throws_for_test{0};

std::optional<absl::StatusOr<TraceData>> ReadTraceTextSimdjson(std::string_view json,
                                                                size_t block_bytes,
                                                                size_t batch_bytes) {
  return ReadTraceTextSimdjson(json, block_bytes, batch_bytes, nullptr);
}

std::optional<absl::StatusOr<TraceData>> ReadTraceTextSimdjson(std::string_view json,
                                                                size_t block_bytes,
                                                                size_t batch_bytes,
                                                                EventWalkCounts* counts) {
  return ReadTraceTextSimdjson(json, block_bytes, batch_bytes, counts, 0);
}

std::optional<absl::StatusOr<TraceData>> ReadTraceTextSimdjson(std::string_view json,
                                                                size_t block_bytes,
                                                                size_t batch_bytes,
                                                                EventWalkCounts* counts,
                                                                int workers) {
  TraceData data = EmptyData(json.size());
  OrderedWalk parser(&data, nullptr, workers);
  EventSplitter splitter(batch_bytes, [&](Piece&& p) { return parser.Take(p); });
  block_bytes = std::max<size_t>(block_bytes, 1);
  bool ok = true;
  for (size_t at = 0; ok && at < json.size(); at += block_bytes) {
    ok = splitter.Feed(json.data() + at, std::min(block_bytes, json.size() - at));
  }
  ok = ok && splitter.Finish() && parser.Drain();
  if (std::string e = parser.thread_error(); !e.empty()) return absl::InternalError(e);
  if (!ok) return std::nullopt;
  if (counts != nullptr) *counts = parser.counts();
  return Finish(std::move(data), parser.handler(), "trace");
}

}  // namespace internal

namespace {

absl::StatusOr<TraceData> ReadFileSimd(const std::string& path) {
  std::optional<absl::StatusOr<TraceData>> result = ReadFileStreaming(path);
  if (result.has_value()) return *std::move(result);
  return ReadFileRapidJson(path);
}

}  // namespace

bool SameTraceData(const TraceData& a, const TraceData& b, std::string* why) {
  auto differ = [&](std::string what) {
    *why = std::move(what);
    return false;
  };
  if (a.strings.size() != b.strings.size()) return differ("string table sizes");
  for (uint32_t i = 0; i < a.strings.size(); ++i) {
    if (a.strings.Get(i) != b.strings.Get(i)) return differ(absl::StrCat("string ", i));
  }
  if (a.events.size() != b.events.size()) {
    return differ(absl::StrCat("event counts ", a.events.size(), " vs ", b.events.size()));
  }
  for (size_t i = 0; i < a.events.size(); ++i) {
    const TraceEvent& x = a.events[i];
    const TraceEvent& y = b.events[i];
    if (x.ts_ns != y.ts_ns || x.dur_ns != y.dur_ns || x.correlation != y.correlation ||
        x.name != y.name || x.thread != y.thread || x.shapes != y.shapes || x.aux != y.aux ||
        x.cls != y.cls || x.device_type != y.device_type) {
      return differ(absl::StrCat("event ", i));
    }
  }
  if (a.flops.size() != b.flops.size()) return differ("flops counts");
  for (size_t i = 0; i < a.flops.size(); ++i) {
    if (std::bit_cast<uint64_t>(a.flops[i]) != std::bit_cast<uint64_t>(b.flops[i])) {
      return differ(absl::StrCat("flops ", i));
    }
  }
  if (a.memory.size() != b.memory.size()) return differ("memory sample counts");
  for (size_t i = 0; i < a.memory.size(); ++i) {
    const MemorySample& x = a.memory[i];
    const MemorySample& y = b.memory[i];
    if (x.bytes != y.bytes || x.total_allocated != y.total_allocated ||
        x.total_reserved != y.total_reserved) {
      return differ(absl::StrCat("memory sample ", i));
    }
  }
  if (a.steps.size() != b.steps.size()) return differ("step counts");
  for (size_t i = 0; i < a.steps.size(); ++i) {
    const StepMark& x = a.steps[i];
    const StepMark& y = b.steps[i];
    if (x.number != y.number || x.ts_ns != y.ts_ns || x.dur_ns != y.dur_ns ||
        x.cpu_copy != y.cpu_copy) {
      return differ(absl::StrCat("step ", i));
    }
  }
  if (a.min_ts_ns != b.min_ts_ns || a.max_end_ns != b.max_end_ns) return differ("time span");
  if (a.has_input_shapes != b.has_input_shapes) return differ("has_input_shapes");
  if (a.device.has_value() != b.device.has_value()) return differ("device presence");
  if (a.device) {
    const DeviceInfo& x = *a.device;
    const DeviceInfo& y = *b.device;
    const bool same_mem = x.memory_mb.has_value() == y.memory_mb.has_value() &&
                          (!x.memory_mb || std::bit_cast<uint64_t>(*x.memory_mb) ==
                                               std::bit_cast<uint64_t>(*y.memory_mb));
    if (x.type != y.type || x.name != y.name || x.index != y.index || x.sm_count != y.sm_count ||
        !same_mem) {
      return differ("device");
    }
  }
  const ParseStats& x = a.stats;
  const ParseStats& y = b.stats;
  if (x.events != y.events || x.complete_events != y.complete_events ||
      x.skipped_events != y.skipped_events || x.non_numeric_ids != y.non_numeric_ids) {
    return differ(absl::StrCat("parse counters: events ", x.events, "/", y.events, ", skipped ",
                               x.skipped_events, "/", y.skipped_events));
  }
  return true;
}

absl::StatusOr<TraceData> ReadTraceFile(const std::string& path, TraceParser parser) {
  if (parser == TraceParser::kRapidJson) return ReadFileRapidJson(path);
  return ReadFileSimd(path);
}

absl::StatusOr<TraceData> ReadTraceText(std::string_view json, TraceParser parser) {
  if (parser == TraceParser::kRapidJson) return ReadTextRapidJson(json);
  std::optional<absl::StatusOr<TraceData>> result =
      internal::ReadTraceTextSimdjson(json, kBlockBytes, kBatchBytes);
  if (result.has_value()) return *std::move(result);
  return ReadTextRapidJson(json);
}

}  // namespace libreyolo
