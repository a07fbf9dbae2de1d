#include "common/analysis/rank_trace.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/analysis/intervals.h"
#include "common/analysis/kernel_classify.h"
#include "common/analysis/trace_analyser.h"
#include "common/io/block_reader.h"
#include "common/json/json_read.h"
#include "common/status/status_macros.h"
#include "common/trace/trace_data_builder.h"
#include "rapidjson/memorystream.h"
#include "rapidjson/reader.h"

namespace libreyolo {

// An all-reduce call: its start and its bytes (-1: not recorded).
struct SizedCall {
  int64_t ts_ns = 0;
  double bytes = 0;
};

// What one pass keeps.
struct RankTraceIntervals {
  DistributedInfo info;
  Intervals steps;  // one per step, unmerged: their durations are the step times
  std::vector<int64_t> step_numbers_in_order;  // N of each of `steps`
  IntervalUnion dataload, comm_cpu, comm_gpu, allreduce_cpu, allreduce_gpu;
  IntervalUnion compute_cpu, compute_gpu;
  std::vector<int64_t> comm_cpu_starts, comm_gpu_starts;
  std::vector<SizedCall> param_sizes, span_sizes;  // record_param_comms; collective spans
  absl::flat_hash_set<int64_t> step_numbers;
  // The profiler's own span(s) (category "Trace": min start, max end), and the kept events'.
  std::optional<Interval> profiler_span;
  int64_t first_ns = std::numeric_limits<int64_t>::max();
  int64_t last_ns = std::numeric_limits<int64_t>::min();
  std::string collective_backend;  // the prefix of the first collective span
};

namespace {

constexpr int kMaxDepth = 256;

// A JSON number as a count or id: -1 (unset) unless a finite integer-valued number in range.
int64_t AsCount(double v) {
  if (!std::isfinite(v) || v < 0 || v > 9e15 || v != std::floor(v)) return -1;
  return static_cast<int64_t>(v);
}

bool IsAllReduce(const std::string& name) {
  const std::string n = absl::AsciiStrToLower(name);
  return absl::StrContains(n, "allreduce") || absl::StrContains(n, "all_reduce");
}

// A CPU span that stands for a collective's execution: torch's "gloo:all_reduce",
// "nccl:all_reduce", ... annotations (the c10d:: ops and record_param_comms are the calls).
bool IsCollectiveSpan(const std::string& name) {
  return absl::StartsWith(name, "gloo:") || absl::StartsWith(name, "nccl:") ||
         absl::StartsWith(name, "mpi:") || absl::StartsWith(name, "ucc:");
}

using Collected = RankTraceIntervals;

// The event being read: its fields and the few args the analysis reads.
struct Pending {
  std::string ph, cat, name, dtype, collective, input_type;
  double ts = std::nan(""), dur = std::nan("");
  int64_t in_nelems = -1;
  int64_t dims_product = -1;  // product of the first input's Input Dims
  int inner_arrays = 0;       // Input Dims' inner lists seen

  // Empties every field, keeping the strings' buffers (one event after another).
  void Reset() {
    for (std::string* f : {&ph, &cat, &name, &dtype, &collective, &input_type}) f->clear();
    ts = dur = std::nan("");
    in_nelems = dims_product = -1;
    inner_arrays = 0;
  }
};

class RankHandler : public rapidjson::BaseReaderHandler<rapidjson::UTF8<>, RankHandler> {
 public:
  RankHandler(Collected* out, bool header_only) : out_(out), header_only_(header_only) {}

  bool StartObject() { return Open(true); }
  bool StartArray() { return Open(false); }
  bool EndObject(rapidjson::SizeType) {
    if (in_event_ && depth_ == event_depth_) {
      Commit();
      in_event_ = false;
    }
    if (in_dist_ && depth_ == 2) {
      in_dist_ = false;
      dist_done_ = true;
      if (header_only_) return false;  // stop: the rest is events
    }
    --depth_;
    return true;
  }
  bool EndArray(rapidjson::SizeType) {
    if (in_event_ && depth_ == event_depth_ + 3 && key_ == "Input Dims") ++ev_.inner_arrays;
    if (in_events_ && depth_ == events_depth_) in_events_ = false;
    --depth_;
    return true;
  }
  bool Key(const char* s, rapidjson::SizeType len, bool) {
    const std::string_view k(s, len);
    if (depth_ == 1) root_key_.assign(k);
    if (in_event_ && (depth_ == event_depth_ || depth_ == event_depth_ + 1)) key_.assign(k);
    if (in_dist_ && depth_ == 2) key_.assign(k);
    return true;
  }
  bool String(const char* s, rapidjson::SizeType len, bool) {
    const std::string_view v(s, len);
    if (in_dist_ && depth_ == 2 && key_ == "backend") out_->info.backend.assign(v);
    if (!in_event_) return true;
    if (depth_ == event_depth_) {
      if (key_ == "ph")
        ev_.ph.assign(v);
      else if (key_ == "cat")
        ev_.cat.assign(v);
      else if (key_ == "name")
        ev_.name.assign(v);
    } else if (depth_ == event_depth_ + 1) {
      if (key_ == "dtype")
        ev_.dtype.assign(v);
      else if (key_ == "Collective name")
        ev_.collective.assign(v);
    } else if (depth_ == event_depth_ + 2 && key_ == "Input type" && ev_.input_type.empty()) {
      ev_.input_type.assign(v.empty() ? "?" : v);
    }
    return true;
  }
  bool Int(int v) { return Number(static_cast<double>(v)); }
  bool Uint(unsigned v) { return Number(static_cast<double>(v)); }
  bool Int64(int64_t v) { return Number(static_cast<double>(v)); }
  bool Uint64(uint64_t v) { return Number(static_cast<double>(v)); }
  bool Double(double v) { return Number(v); }
  bool Default() { return true; }

  bool too_deep() const { return too_deep_; }
  bool stopped_at_header() const { return header_only_ && dist_done_; }

 private:
  bool Open(bool object) {
    if (++depth_ > kMaxDepth) {
      too_deep_ = true;
      return false;
    }
    if (depth_ == 1) {
      if (!object) in_events_ = true, events_depth_ = 1;
      return true;
    }
    if (depth_ == 2 && object && root_key_ == "distributedInfo") in_dist_ = true;
    if (depth_ == 2 && !object && root_key_ == "traceEvents") in_events_ = true, events_depth_ = 2;
    if (in_events_ && !header_only_ && object && depth_ == events_depth_ + 1) {
      in_event_ = true;
      event_depth_ = depth_;
      ev_.Reset();
      key_.clear();
    }
    return true;
  }

  bool Number(double v) {
    if (in_dist_ && depth_ == 2) {
      if (key_ == "rank") out_->info.rank = AsCount(v);
      if (key_ == "world_size") out_->info.world_size = AsCount(v);
      return true;
    }
    if (!in_event_) return true;
    if (depth_ == event_depth_) {
      if (key_ == "ts")
        ev_.ts = v;
      else if (key_ == "dur")
        ev_.dur = v;
    } else if (depth_ == event_depth_ + 1 && key_ == "In msg nelems") {
      ev_.in_nelems = AsCount(v);
    } else if (depth_ == event_depth_ + 3 && key_ == "Input Dims" && ev_.inner_arrays == 0) {
      const int64_t dim = AsCount(v);
      const double p = dim < 0 || ev_.dims_product == -2
                           ? -1.0
                           : (ev_.dims_product < 0 ? 1.0 : static_cast<double>(ev_.dims_product)) *
                                 static_cast<double>(dim);
      ev_.dims_product = p >= 0 && p <= 9e15 ? static_cast<int64_t>(p) : -2;  // -2: unusable
    }
    return true;
  }

  void Commit();
  void CommitCpu(const Interval& iv);

  Collected* out_;
  bool header_only_;
  int depth_ = 0, events_depth_ = -1, event_depth_ = -1;
  bool in_events_ = false, in_event_ = false, in_dist_ = false, dist_done_ = false;
  bool too_deep_ = false;
  std::string root_key_, key_;
  Pending ev_;
};

void RankHandler::Commit() {
  // The trace reader's bounds (trace_data_builder.h): beyond them a ts or dur is no time.
  if (ev_.ph != "X" || !(ev_.ts >= trace_bounds::kMinTsUs && ev_.ts <= trace_bounds::kMaxTsUs) ||
      !(ev_.dur >= 0 && ev_.dur <= trace_bounds::kMaxDurUs)) {
    return;
  }
  const int64_t ts = std::llround(ev_.ts * 1000.0);
  const Interval iv{ts, ts + std::llround(ev_.dur * 1000.0)};
  if (ev_.cat == "Trace") {  // Kineto's "PyTorch Profiler (N)": the span it recorded
    std::optional<Interval>& span = out_->profiler_span;
    span = span ? Interval{std::min(span->first, iv.first), std::max(span->second, iv.second)}
                : iv;
    return;
  }
  out_->first_ns = std::min(out_->first_ns, iv.first);
  out_->last_ns = std::max(out_->last_ns, iv.second);
  if (ev_.cat == "kernel") {
    if (KernelCategory(ev_.name) == kCategoryCommunication) {
      out_->comm_gpu.Add(iv);
      out_->comm_gpu_starts.push_back(ts);
      if (IsAllReduce(ev_.name)) out_->allreduce_gpu.Add(iv);
    } else {
      out_->compute_gpu.Add(iv);
    }
    return;
  }
  if (ev_.cat == "cpu_op" || ev_.cat == "user_annotation") CommitCpu(iv);
}

void RankHandler::CommitCpu(const Interval& iv) {
  const std::string& name = ev_.name;
  int64_t number = 0;
  if (absl::StartsWith(name, "ProfilerStep#")) {
    if (absl::SimpleAtoi(name.substr(13), &number) && out_->step_numbers.insert(number).second) {
      out_->steps.push_back(iv);
      out_->step_numbers_in_order.push_back(number);
    }
    return;
  }
  if (PhaseOfSpanName(name) == "dataload") {
    out_->dataload.Add(iv);
  } else if (IsCollectiveSpan(name)) {
    if (out_->collective_backend.empty()) out_->collective_backend = name.substr(0, name.find(':'));
    out_->comm_cpu.Add(iv);
    out_->comm_cpu_starts.push_back(iv.first);
    if (IsAllReduce(name)) {
      out_->allreduce_cpu.Add(iv);
      // Every all-reduce span is a call; a size where it records one (-1: no dims, -2: a
      // dimension that is no count; a span the profiler stopped before it ended, args
      // "finished": false, records no inputs).
      const std::optional<int64_t> size = DtypeBytes(ev_.input_type);
      const bool sized = size && ev_.dims_product >= 0;
      out_->span_sizes.push_back(
          {iv.first,
           sized ? static_cast<double>(ev_.dims_product) * static_cast<double>(*size) : -1.0});
    }
  } else if (name == "record_param_comms") {
    const std::optional<int64_t> size = DtypeBytes(ev_.dtype);
    if (size && ev_.in_nelems >= 0 && IsAllReduce(ev_.collective)) {
      out_->param_sizes.push_back(
          {iv.first, static_cast<double>(ev_.in_nelems) * static_cast<double>(*size)});
    }
  } else if (ev_.cat == "cpu_op" && !absl::StartsWith(name, "c10d::")) {
    out_->compute_cpu.Add(iv);
  }
}

// A RapidJSON input stream over BlockReader (read(2), or igzip for gzip): the file is never
// held whole. Shaped like rapidjson::FileReadStream (a NUL after the last byte), so that Peek
// and Take stay small enough to inline: they are most of the parse.
class ChunkStream {
 public:
  using Ch = char;
  explicit ChunkStream(BlockReader* reader) : reader_(reader), buf_(1 << 18) { Fill(); }
  Ch Peek() const { return *cur_; }
  Ch Take() {
    const Ch c = *cur_;
    if (cur_ < last_) {
      ++cur_;
    } else if (!eof_) {
      Fill();
    }
    return c;
  }
  size_t Tell() const { return consumed_ + static_cast<size_t>(cur_ - buf_.data()); }
  Ch* PutBegin() { return nullptr; }
  void Put(Ch) {}
  void Flush() {}
  size_t PutEnd(Ch*) { return 0; }
  const absl::Status& status() const { return status_; }

 private:
  [[gnu::noinline]] void Fill() {
    consumed_ += len_;
    len_ = 0;
    if (status_.ok()) {
      auto n = reader_->Read(buf_.data(), buf_.size() - 1);
      if (n.ok()) {
        len_ = *n;
      } else {
        status_ = n.status();
      }
    }
    cur_ = buf_.data();
    if (len_ == 0) {
      eof_ = true;
      buf_[0] = '\0';
      last_ = cur_;
    } else {
      last_ = cur_ + len_ - 1;
    }
  }
  BlockReader* reader_;
  std::vector<char> buf_;
  char* cur_ = nullptr;
  char* last_ = nullptr;  // the last byte read
  size_t len_ = 0, consumed_ = 0;
  bool eof_ = false;
  absl::Status status_;
};

template <typename Stream>
absl::Status Parse(Stream& stream, const absl::Status* stream_status, const std::string& what,
                   Collected* out, bool header_only) {
  RankHandler handler(out, header_only);
  rapidjson::Reader reader;
  const rapidjson::ParseResult r = reader.Parse<rapidjson::kParseNanAndInfFlag>(stream, handler);
  if (stream_status != nullptr && !stream_status->ok()) return *stream_status;
  if (handler.stopped_at_header()) return absl::OkStatus();
  if (handler.too_deep()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": JSON nested deeper than ", kMaxDepth, " levels: not a trace"));
  }
  if (r.IsError()) {
    return absl::InvalidArgumentError(absl::StrCat(
        NotJsonAt(what, r),
        ". Is the file complete? Re-export it with the profiler's export_chrome_trace."));
  }
  return absl::OkStatus();
}

absl::Status ParseFile(const std::string& path, Collected* out, bool header_only) {
  ASSIGN_OR_RETURN(auto reader, BlockReader::Open(path));
  ChunkStream stream(reader.get());
  return Parse(stream, &stream.status(), path, out, header_only);
}

double PerStepMs(int64_t ns, int64_t steps) {
  return static_cast<double>(ns) / 1e6 / static_cast<double>(steps);
}

// The bytes of the window's calls per step; a call without a size (bytes < 0) counts at the
// mean size of those with one.
std::optional<double> BytesPerStep(const std::vector<SizedCall>& calls, const Intervals& window,
                                   int64_t steps) {
  double sum = 0;
  int64_t sized = 0, all = 0;
  for (const SizedCall& c : calls) {
    if (!Inside(window, c.ts_ns)) continue;
    ++all;
    if (c.bytes < 0) continue;
    sum += c.bytes;
    ++sized;
  }
  if (sized == 0) return std::nullopt;
  return sum / static_cast<double>(sized) * static_cast<double>(all) / static_cast<double>(steps);
}

// The ms of the merged `comm` inside each step, by step number, in the order of the steps'
// starts; each step's span appended to `spans` in the same order.
std::vector<std::pair<int64_t, double>> CommByStep(const Intervals& steps,
                                                   const std::vector<int64_t>& numbers,
                                                   const Intervals& comm, Intervals& spans) {
  std::vector<size_t> order(steps.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return steps[a] < steps[b]; });
  std::vector<std::pair<int64_t, double>> out;
  for (size_t i : order) {
    const Interval& s = steps[i];
    auto it = std::lower_bound(comm.begin(), comm.end(), s.first,
                               [](const Interval& c, int64_t t) { return c.second <= t; });
    int64_t ns = 0;
    for (; it != comm.end() && it->first < s.second; ++it) {
      ns += std::min(it->second, s.second) - std::max(it->first, s.first);
    }
    out.emplace_back(numbers[i], static_cast<double>(ns) / 1e6);
    spans.push_back(s);
  }
  return out;
}

int64_t CountInside(const std::vector<int64_t>& starts, const Intervals& window) {
  return std::count_if(starts.begin(), starts.end(),
                       [&](int64_t ts) { return Inside(window, ts); });
}

// The figures of `c` over `window` (merged), each divided by `periods` (steps, or 1 window).
void Reduce(Collected& c, const Intervals& window, int64_t periods, RankFigures& f) {
  const Intervals comm_gpu = c.comm_gpu.Take(), compute_gpu = c.compute_gpu.Take();
  const bool has_kernels = !comm_gpu.empty() || !compute_gpu.empty();
  f.gpu_comm = !comm_gpu.empty();
  const Intervals dataload = Intersect(c.dataload.Take(), window);
  const Intervals compute = has_kernels
                                ? Intersect(compute_gpu, window)
                                : Subtract(Intersect(c.compute_cpu.Take(), window), dataload);
  const Intervals comm = Intersect(f.gpu_comm ? comm_gpu : c.comm_cpu.Take(), window);
  const Intervals allreduce =
      Intersect(f.gpu_comm ? c.allreduce_gpu.Take() : c.allreduce_cpu.Take(), window);
  f.dataload_ms = PerStepMs(Length(dataload), periods);
  f.compute_ms = PerStepMs(Length(compute), periods);
  f.comm_ms = PerStepMs(Length(comm), periods);
  f.exposed_comm_ms = PerStepMs(Length(comm) - Length(Intersect(comm, compute)), periods);
  f.allreduce_ms = PerStepMs(Length(allreduce), periods);
  f.collectives = CountInside(f.gpu_comm ? c.comm_gpu_starts : c.comm_cpu_starts, window);
  f.allreduce_bytes =
      BytesPerStep(c.param_sizes.empty() ? c.span_sizes : c.param_sizes, window, periods);
  if (!f.windowed) {
    f.comm_ms_by_step = CommByStep(c.steps, c.step_numbers_in_order, comm, f.step_spans);
  }
}

absl::StatusOr<RankFigures> Figures(Collected c, const std::string& what) {
  RankFigures f;
  f.path = what;
  f.info = c.info;
  f.steps = static_cast<int64_t>(c.steps.size());
  if (f.steps == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(what,
                     ": no ProfilerStep#N span, so no step to divide by; profile with "
                     "torch.profiler.schedule and call prof.step() once per iteration"));
  }
  double step_ns = 0;  // a double: a hostile trace's many huge steps must not overflow
  for (const Interval& s : c.steps) step_ns += static_cast<double>(s.second - s.first);
  f.step_ms = step_ns / 1e6 / static_cast<double>(f.steps);
  const Intervals window = Merge(c.steps);
  Reduce(c, window, f.steps, f);
  return f;
}

absl::StatusOr<RankFigures> WindowFigures(Collected c, const std::string& what,
                                          const Interval& window) {
  if (window.second <= window.first) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": the window to analyse is empty: the ranks' traces share no recorded time"));
  }
  RankFigures f;
  f.path = what;
  f.info = c.info;
  f.windowed = true;
  f.step_ms = static_cast<double>(window.second - window.first) / 1e6;
  Reduce(c, Intervals{window}, 1, f);
  return f;
}

}  // namespace

std::optional<int64_t> DtypeBytes(std::string_view dtype) {
  std::string d = absl::AsciiStrToLower(std::string(dtype));
  if (absl::StartsWith(d, "c10::")) d = d.substr(5);
  struct Row {
    const char* name;
    int64_t bytes;
  };
  static constexpr Row kRows[] = {
      {"float", 4},       {"float32", 4},       {"double", 8},     {"float64", 8}, {"half", 2},
      {"float16", 2},     {"bfloat16", 2},      {"int", 4},        {"int32", 4},   {"long", 8},
      {"long int", 8},    {"int64", 8},         {"short", 2},      {"int16", 2},   {"char", 1},
      {"signed char", 1}, {"unsigned char", 1}, {"byte", 1},       {"int8", 1},    {"uint8", 1},
      {"bool", 1},        {"float8_e4m3fn", 1}, {"float8_e5m2", 1}};
  for (const Row& r : kRows) {
    if (d == r.name) return r.bytes;
  }
  return std::nullopt;
}

absl::StatusOr<DistributedInfo> ReadDistributedInfo(const std::string& path) {
  Collected c;
  RETURN_IF_ERROR(ParseFile(path, &c, /*header_only=*/true));
  return c.info;
}

RankTraceRead::RankTraceRead() : c_(std::make_unique<RankTraceIntervals>()) {}
RankTraceRead::~RankTraceRead() = default;
RankTraceRead::RankTraceRead(RankTraceRead&&) noexcept = default;
RankTraceRead& RankTraceRead::operator=(RankTraceRead&&) noexcept = default;

const DistributedInfo& RankTraceRead::info() const { return c_->info; }
int64_t RankTraceRead::steps() const { return static_cast<int64_t>(c_->steps.size()); }
const std::string& RankTraceRead::collective_backend() const { return c_->collective_backend; }
std::optional<Interval> RankTraceRead::recorded() const {
  if (c_->profiler_span) return c_->profiler_span;
  if (c_->first_ns > c_->last_ns) return std::nullopt;
  return Interval{c_->first_ns, c_->last_ns};
}

absl::StatusOr<RankTraceRead> ReadRankTraceFile(const std::string& path) {
  RankTraceRead r;
  RETURN_IF_ERROR(ParseFile(path, r.c_.get(), /*header_only=*/false));
  return r;
}

absl::StatusOr<RankTraceRead> ReadRankTraceText(std::string_view json, const std::string& what) {
  RankTraceRead r;
  rapidjson::MemoryStream stream(json.data(), json.size());
  RETURN_IF_ERROR(Parse(stream, nullptr, what, r.c_.get(), /*header_only=*/false));
  return r;
}

absl::StatusOr<RankFigures> RankFiguresOf(RankTraceRead read, const std::string& what) {
  return Figures(std::move(*read.c_), what);
}

absl::StatusOr<RankFigures> RankWindowFiguresOf(RankTraceRead read, const std::string& what,
                                                const Interval& window) {
  return WindowFigures(std::move(*read.c_), what, window);
}

absl::StatusOr<RankFigures> AnalyseRankTraceFile(const std::string& path) {
  ASSIGN_OR_RETURN(auto read, ReadRankTraceFile(path));
  return RankFiguresOf(std::move(read), path);
}

absl::StatusOr<RankFigures> AnalyseRankTraceText(std::string_view json, const std::string& what) {
  ASSIGN_OR_RETURN(auto read, ReadRankTraceText(json, what));
  return RankFiguresOf(std::move(read), what);
}

}  // namespace libreyolo
