#include "common/trace/trace_reader.h"

#include <rapidjson/error/en.h>
#include <rapidjson/memorystream.h>
#include <rapidjson/reader.h>

#include <bit>
#include <charconv>
#include <cmath>
#include <memory>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/io/file_reader.h"

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
// (kMaxDepth) so hostile input cannot exhaust the stack.
constexpr int kParseFlags = rapidjson::kParseNanAndInfFlag;
constexpr int kMaxDepth = 256;
// Accepted ranges, in microseconds. Epoch timestamps are ~1.7e15 us today; with these bounds
// every end (ts + dur) and every difference of two times fits in int64 nanoseconds.
constexpr double kMinTsUs = -1.0e15;
constexpr double kMaxTsUs = 4.0e15;
constexpr double kMaxDurUs = 4.0e15;

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
  constexpr double kMax = 9007199254740992.0;  // 2^53
  if (!std::isfinite(n.d) || std::fabs(n.d) > kMax) return std::nullopt;
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
      ShapesValue(absl::StrCat("'", absl::string_view(s, len), "'"));
      return true;
    }
    CountStrayElement();
    const std::string_view v(s, len);
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
      ShapesValue("None");
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
      ShapesValue(n.is_int ? absl::StrCat(n.i) : absl::StrCat(n.d));
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
    first_.push_back(true);
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
      first_.back() = false;
    }
  }
  void ShapesValue(const std::string& v) {
    ShapesSeparator();
    shapes_ += v;
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
      if (absl::EqualsIgnoreCase(cat_, "kernel")) {
        ev.cls = EventClass::kKernel;
      } else if (absl::EqualsIgnoreCase(cat_, "gpu_memcpy")) {
        ev.cls = EventClass::kMemcpy;
      } else if (absl::EqualsIgnoreCase(cat_, "gpu_memset")) {
        ev.cls = EventClass::kMemset;
      } else if (absl::EqualsIgnoreCase(cat_, "cpu_op")) {
        ev.cls = EventClass::kCpuOp;
      } else if (absl::EqualsIgnoreCase(cat_, "user_annotation")) {
        // Our --with-modules ranges are user annotations named "nn.Module: <path>".
        ev.cls = absl::StartsWith(name_, "nn.Module: ") ? EventClass::kModule
                                                        : EventClass::kAnnotation;
      } else if (absl::EqualsIgnoreCase(cat_, "cuda_runtime") ||
                 absl::EqualsIgnoreCase(cat_, "cuda_driver")) {
        ev.cls = EventClass::kRuntime;
      } else if (absl::EqualsIgnoreCase(cat_, "python_function") &&
                 absl::StartsWith(name_, "nn.Module: ")) {
        ev.cls = EventClass::kModule;
      } else {
        return;  // other categories only shape the window
      }
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
  std::vector<bool> first_;
  int shapes_depth_ = -1;
};

template <typename Stream>
absl::StatusOr<TraceData> Parse(Stream& stream, const std::string& what,
                                const absl::Status* stream_status, size_t json_bytes_hint) {
  TraceData data;
  // Reserving from the size means the vector never reallocates (a realloc would briefly hold
  // two copies); untouched reserved pages cost no resident memory. Kineto writes >= 100 bytes
  // of JSON per event.
  data.events.reserve(json_bytes_hint / 100);
  data.device.emplace();
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
        what, ": not valid JSON at byte ", result.Offset(), ": ",
        rapidjson::GetParseError_En(result.Code()),
        ". Is the file complete? Re-export it with the profiler's export_chrome_trace."));
  }
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

}  // namespace

absl::StatusOr<TraceData> ReadTraceFile(const std::string& path) {
  auto reader = ChunkedFileReader::Open(path);
  if (!reader.ok()) return reader.status();
  ChunkStream stream(reader->get());
  return Parse(stream, path, &stream.status(), (*reader)->UncompressedSizeHint());
}

absl::StatusOr<TraceData> ReadTraceText(std::string_view json) {
  rapidjson::MemoryStream stream(json.data(), json.size());
  return Parse(stream, "trace", nullptr, json.size());
}

}  // namespace libreyolo
