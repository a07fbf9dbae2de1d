#include "server/engine/collect/op_collector.h"

#include <ATen/core/function_schema.h>
#include <ATen/core/ivalue.h>
#include <ATen/record_function.h>
#include <c10/util/ThreadLocalDebugInfo.h>
#include <sys/syscall.h>
#include <time.h>
#include <torch/csrc/profiler/orchestration/observer.h>
#include <torch/csrc/profiler/util.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstring>
#include <exception>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/status/status_macros.h"
#include "common/trace/chrome_trace_writer.h"
#include "common/trace/flop_formulas.h"
#include "server/engine/collect/flop_attribution.h"

namespace libreyolo::engine {
namespace {

namespace impl = torch::profiler::impl;

int64_t ClockNs(clockid_t id) {
  timespec ts{};
  ::clock_gettime(id, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

inline int64_t NowNs() { return ClockNs(CLOCK_MONOTONIC); }

// CLOCK_REALTIME minus CLOCK_MONOTONIC, from the closest of a few back-to-back reads.
int64_t RealtimeMinusMonotonicNs() {
  int64_t best_width = -1, offset = 0;
  for (int i = 0; i < 5; ++i) {
    const int64_t before = NowNs();
    const int64_t real = ClockNs(CLOCK_REALTIME);
    const int64_t after = NowNs();
    if (best_width < 0 || after - before < best_width) {
      best_width = after - before;
      offset = real - (before + (after - before) / 2);
    }
  }
  return offset;
}

enum class RecordKind : uint8_t { kOp, kRange };
// Per op name: not yet seen, counted by LibTorch (computeFlops: add, mul ...), not counted, or
// one of our formula table's (common/trace/flop_formulas.h: its inputs kept as FlopArgs).
enum class FlopsState : uint8_t { kUnknown, kCounted, kNotCounted, kOurs };

struct OpRecord {
  int64_t start_ns = 0;
  int64_t end_ns = -1;  // -1: still open
  int64_t sequence_nr = -1;
  uint64_t fwd_thread = 0;    // RecordFunction's id of the forward's thread (backward ops)
  uint32_t name = 0;          // index into ThreadBuffer::names
  uint32_t dims_offset = 0;   // into ThreadBuffer::dims: per input, its rank then its sizes (-1:
  uint32_t dims_inputs = 0;   // not a tensor)
  int32_t flops_args = -1;    // into ThreadBuffer::flops_args (or ::flop_args for kOurs)
  int32_t input_type = -1;    // a collective range's dtype: index into ThreadBuffer::names
  RecordKind kind = RecordKind::kOp;
};

struct MemoryRecord {
  int64_t ts_ns = 0;
  int64_t bytes = 0;
  int8_t device_type = 0;  // 0 CPU, 1 CUDA
  int16_t device_index = -1;
};

// The pointer-keyed front of a thread's name table: RecordFunction hands out `const char*`
// names, most of them the same few hundred pointers over and over.
struct NameSlot {
  const char* ptr = nullptr;
  uint32_t id = 0;
};
constexpr size_t kNameSlots = 1024;

// One thread's records. Registered once per collection; kept alive by the registry and by the
// thread's own pointer, so a callback in flight while Stop runs writes into a live buffer.
struct ThreadBuffer {
  uint64_t os_thread = 0;
  uint64_t torch_thread = 0;  // at::RecordFunction::currentThreadId()
  std::vector<OpRecord> records;
  std::vector<MemoryRecord> memory;
  std::vector<size_t> open;  // indices of the records not yet ended, innermost last
  std::vector<std::string> names;
  std::vector<FlopsState> flops_state;  // per name
  absl::flat_hash_map<std::string, uint32_t> name_ids;
  std::array<NameSlot, kNameSlots> name_cache{};
  std::vector<int64_t> dims;
  std::vector<std::unordered_map<std::string, c10::IValue>> flops_args;
  std::vector<std::vector<FlopArg>> flop_args;  // the formula table's ops
  std::mutex mu;  // taken by the owner per record and by Stop: uncontended while collecting
};

struct Registry {
  std::mutex mu;
  std::vector<std::shared_ptr<ThreadBuffer>> buffers;
  std::atomic<uint64_t> generation{0};  // bumped per collection: threads re-register
  std::atomic<bool> running{false};
  OpCollectorOptions options;
};

Registry& Reg() {
  static Registry r;
  return r;
}

ThreadBuffer* ThisThread() {
  thread_local std::shared_ptr<ThreadBuffer> mine;
  thread_local uint64_t generation = 0;
  Registry& reg = Reg();
  const uint64_t g = reg.generation.load(std::memory_order_acquire);
  if (mine == nullptr || generation != g) {
    auto b = std::make_shared<ThreadBuffer>();
    b->os_thread = static_cast<uint64_t>(::syscall(SYS_gettid));
    b->torch_thread = at::RecordFunction::currentThreadId();
    const auto reserve = static_cast<size_t>(reg.options.reserve_per_thread);
    b->records.reserve(reserve);
    b->open.reserve(64);
    if (reg.options.record_shapes) b->dims.reserve(reserve * 8);
    if (reg.options.profile_memory) b->memory.reserve(reserve / 2);
    {
      const std::lock_guard<std::mutex> lock(reg.mu);
      reg.buffers.push_back(b);
    }
    mine = std::move(b);
    generation = g;
  }
  return mine.get();
}

uint32_t Intern(ThreadBuffer& b, const char* name) {
  if (name == nullptr) name = "";
  const auto p = reinterpret_cast<uintptr_t>(name);
  NameSlot& slot = b.name_cache[(p ^ (p >> 10)) % kNameSlots];
  // The compare guards against a pointer reused for another name (ranges and autograd nodes
  // name themselves with strings that die with the record).
  if (slot.ptr == name && std::strcmp(b.names[slot.id].c_str(), name) == 0) return slot.id;
  const absl::string_view key(name);
  uint32_t id;
  if (auto it = b.name_ids.find(key); it != b.name_ids.end()) {
    id = it->second;
  } else {
    id = static_cast<uint32_t>(b.names.size());
    b.names.emplace_back(key);
    b.flops_state.push_back(FlopsState::kUnknown);
    b.name_ids.emplace(b.names.back(), id);
  }
  slot.ptr = name;
  slot.id = id;
  return id;
}

// The FLOPs arguments of `fn` when LibTorch counts FLOPs for its op (empty otherwise).
std::unordered_map<std::string, c10::IValue> FlopsArgs(const at::RecordFunction& fn) {
  try {
    return impl::saveExtraArgs(fn);
  } catch (const std::exception&) {
    return {};
  }
}

// The inputs of a formula-table op as the formulas read them: sizes, ints, bools, strings.
// The TorchScript interpreter hands a boxed op its whole stack (the dispatcher's callBoxed
// records `stack` as the inputs): the op's own arguments are the last ones, as its schema counts
// them.
std::vector<FlopArg> OurFlopArgs(const at::RecordFunction& fn) {
  std::vector<FlopArg> out;
  try {
    c10::ArrayRef<const c10::IValue> inputs = fn.inputs();
    if (const auto schema = fn.operator_schema(); schema.has_value()) {
      const size_t n = schema->arguments().size();
      if (inputs.size() > n) inputs = inputs.slice(inputs.size() - n);
    }
    for (const c10::IValue& v : inputs) {
      if (v.isTensor() && v.toTensor().defined()) {
        const auto sizes = v.toTensor().sizes();  // throws for symbolic sizes
        out.push_back(FlopArg::Tensor({sizes.begin(), sizes.end()}));
      } else if (v.isInt()) {
        out.push_back(FlopArg::Ints({v.toInt()}));
      } else if (v.isIntList()) {
        out.push_back(FlopArg::Ints(v.toIntVector()));
      } else if (v.isBool()) {
        out.push_back(FlopArg::Bools({v.toBool()}));
      } else if (v.isBoolList()) {
        out.push_back(FlopArg::Bools(v.toBoolList().vec()));
      } else if (v.isString()) {
        out.push_back(FlopArg::String(v.toStringRef()));
      } else {
        out.push_back(FlopArg::None());
      }
    }
  } catch (const std::exception&) {
    return {};  // no count for this op: the ops it dispatches to are tried instead
  }
  return out;
}

// Per input, its rank then its sizes (-1: not a tensor, 0: undefined) into b.dims.
void RecordInputDims(ThreadBuffer& b, const at::RecordFunction& fn, OpRecord& r) {
  r.dims_offset = static_cast<uint32_t>(b.dims.size());
  try {
    for (const c10::IValue& v : fn.inputs()) {
      ++r.dims_inputs;
      if (!v.isTensor()) {
        b.dims.push_back(-1);
        continue;
      }
      const at::Tensor& t = v.toTensor();
      if (!t.defined()) {
        b.dims.push_back(0);
        continue;
      }
      const auto sizes = t.sizes();  // throws for nested and symbolic-size tensors
      b.dims.push_back(static_cast<int64_t>(sizes.size()));
      b.dims.insert(b.dims.end(), sizes.begin(), sizes.end());
    }
  } catch (const std::exception&) {
    // No shapes for this op, but its record: a start callback that failed would leave the op
    // unrecorded and its end closing the enclosing record instead.
    b.dims.resize(r.dims_offset);
    r.dims_inputs = 0;
  }
}

// "gloo:all_reduce", "nccl:broadcast", ...: the ranges c10d's backends open around a
// collective's execution.
bool IsCollectiveRange(absl::string_view name) {
  return absl::StartsWith(name, "gloo:") || absl::StartsWith(name, "nccl:");
}

// The interned dtype name ("float", "c10::Half") of the first defined tensor input; -1: none.
int32_t FirstTensorType(ThreadBuffer& b, const at::RecordFunction& fn) {
  for (const c10::IValue& v : fn.inputs()) {
    if (!v.isTensor() || !v.toTensor().defined()) continue;
    const std::string type(v.toTensor().dtype().name());
    return static_cast<int32_t>(Intern(b, type.c_str()));
  }
  return -1;
}

std::unique_ptr<at::ObserverContext> OnStart(const at::RecordFunction& fn) {
  Registry& reg = Reg();
  if (!reg.running.load(std::memory_order_relaxed)) return nullptr;
  ThreadBuffer& b = *ThisThread();
  const OpCollectorOptions& o = reg.options;
  std::unique_lock<std::mutex> lock(b.mu);
  OpRecord r;
  r.name = Intern(b, fn.name());
  r.kind = fn.scope() == at::RecordScope::USER_SCOPE ? RecordKind::kRange : RecordKind::kOp;
  if (r.kind == RecordKind::kRange && o.record_shapes && fn.needsInputs() &&
      IsCollectiveRange(b.names[r.name])) {
    // A collective's range (Gloo's, NCCL's) carries the tensors it moves: their shapes and the
    // first one's dtype, as LibTorch's profiler records them, are its size in bytes.
    RecordInputDims(b, fn, r);
    r.input_type = FirstTensorType(b, fn);
  }
  if (r.kind == RecordKind::kOp) {
    r.sequence_nr = fn.seqNr();
    r.fwd_thread = fn.forwardThreadId();
    if (fn.needsInputs()) {
      if (o.record_shapes) RecordInputDims(b, fn, r);
      if (o.with_flops && b.flops_state[r.name] == FlopsState::kUnknown &&
          ClassifyFlopOp(b.names[r.name]) == FlopOpClass::kFormula) {
        b.flops_state[r.name] = FlopsState::kOurs;
      }
      if (o.with_flops && b.flops_state[r.name] == FlopsState::kOurs) {
        lock.unlock();  // no lock held over LibTorch's code
        auto args = OurFlopArgs(fn);
        lock.lock();
        r.flops_args = static_cast<int32_t>(b.flop_args.size());
        b.flop_args.push_back(std::move(args));
      } else if (o.with_flops && b.flops_state[r.name] != FlopsState::kNotCounted) {
        lock.unlock();  // saveExtraArgs builds IValues: no lock held over LibTorch's code
        auto args = FlopsArgs(fn);
        lock.lock();
        if (args.empty()) {
          if (b.flops_state[r.name] == FlopsState::kUnknown) {
            b.flops_state[r.name] = FlopsState::kNotCounted;
          }
        } else {
          b.flops_state[r.name] = FlopsState::kCounted;
          r.flops_args = static_cast<int32_t>(b.flops_args.size());
          b.flops_args.push_back(std::move(args));
        }
      }
    }
  }
  b.open.push_back(b.records.size());
  r.start_ns = NowNs();  // last: the bookkeeping above is not the op's time
  b.records.push_back(r);
  return nullptr;
}

void OnEnd(const at::RecordFunction& /*fn*/, at::ObserverContext* /*ctx*/) {
  const int64_t now = NowNs();  // first: the bookkeeping below is not the op's time
  if (!Reg().running.load(std::memory_order_relaxed)) return;
  ThreadBuffer& b = *ThisThread();
  const std::lock_guard<std::mutex> lock(b.mu);
  if (b.open.empty()) return;  // began before the collection (or on another thread)
  b.records[b.open.back()].end_ns = now;
  b.open.pop_back();
}

// c10's memory reporting hook (c10::reportMemoryUsageToProfiler finds it in the thread's
// PROFILER_STATE debug info). A ProfilerStateBase with a disabled config, so that LibTorch's
// own checks (profilerEnabled()) read it as "no LibTorch profiler here", as it is.
class MemoryReporter final : public impl::ProfilerStateBase {
 public:
  MemoryReporter() : ProfilerStateBase(impl::ProfilerConfig(impl::ProfilerState::Disabled)) {}

  void reportMemoryUsage(void* /*ptr*/, int64_t alloc_size, size_t /*total_allocated*/,
                         size_t /*total_reserved*/, c10::Device device) override {
    // The exporter keeps the running totals per device from the window's start, as it does for
    // LibTorch's events (trace_export.h), so both collectors' totals mean the same thing.
    const int64_t now = NowNs();
    if (!Reg().running.load(std::memory_order_relaxed)) return;
    ThreadBuffer& b = *ThisThread();
    const std::lock_guard<std::mutex> lock(b.mu);
    MemoryRecord m;
    m.ts_ns = now;
    m.bytes = alloc_size;
    m.device_type = device.is_cpu() ? 0 : 1;
    m.device_index = device.is_cpu() ? -1 : static_cast<int16_t>(device.index());
    b.memory.push_back(m);
  }
  bool memoryProfilingEnabled() const override { return true; }
  impl::ActiveProfilerType profilerType() override { return impl::ActiveProfilerType::NONE; }
};

// Takes our reporter off the thread's debug info (it is on top: nothing between Start and Stop
// pushes debug info of its own on the collecting thread).
void PopMemoryReporter() {
  try {
    (void)c10::ThreadLocalDebugInfo::_pop(c10::DebugInfoKind::PROFILER_STATE);
  } catch (const std::exception&) {
    // Not on top: left in place; it records nothing once `running` is false.
  }
}

// The autograd engine's "autograd::engine::evaluate_function: <Node>" ranges carry neither a
// sequence number nor a forward thread; LibTorch's profiler gives them their node's (the record
// of that name right inside them), and so do we. Returns the record to take them from.
const OpRecord* EvaluateFunctionNode(const ThreadBuffer& b, size_t i) {
  static constexpr absl::string_view kPrefix = "autograd::engine::evaluate_function: ";
  const OpRecord& r = b.records[i];
  const absl::string_view name = b.names[r.name];
  if (r.sequence_nr >= 0 || !absl::StartsWith(name, kPrefix)) return nullptr;
  const absl::string_view node = name.substr(kPrefix.size());
  for (size_t j = i + 1; j < b.records.size() && j <= i + 4; ++j) {
    const OpRecord& inner = b.records[j];
    if (inner.start_ns >= r.end_ns) break;
    if (inner.sequence_nr >= 0 && b.names[inner.name] == node) return &inner;
  }
  return nullptr;
}

std::string DimsJson(const ThreadBuffer& b, const OpRecord& r) {
  std::string out = "[";
  size_t at = r.dims_offset;
  for (uint32_t i = 0; i < r.dims_inputs; ++i) {
    if (i > 0) out += ", ";
    const int64_t rank = b.dims[at++];
    out += "[";
    for (int64_t d = 0; d < rank; ++d) {
      if (d > 0) out += ", ";
      absl::StrAppend(&out, b.dims[at++]);
    }
    out += "]";
  }
  return out + "]";
}

}  // namespace

bool OpCollector::Active() { return Reg().running.load(std::memory_order_acquire); }

absl::StatusOr<std::unique_ptr<OpCollector>> OpCollector::Start(const OpCollectorOptions& o) {
  if (o.reserve_per_thread < 0 || o.reserve_per_thread > (int64_t{1} << 26)) {
    return absl::InvalidArgumentError(
        absl::StrCat("reserve_per_thread must be in [0, 2^26], got ", o.reserve_per_thread));
  }
  Registry& reg = Reg();
  bool expected = false;
  if (!reg.running.compare_exchange_strong(expected, true)) {
    return absl::FailedPreconditionError("an op collection is already running");
  }
  std::unique_ptr<OpCollector> c(new OpCollector());
  {
    const std::lock_guard<std::mutex> lock(reg.mu);
    reg.buffers.clear();
    reg.options = o;
  }
  reg.generation.fetch_add(1, std::memory_order_acq_rel);
  c->owner_ = std::this_thread::get_id();
  c->realtime_minus_monotonic_ns_ = RealtimeMinusMonotonicNs();
  try {
    at::RecordFunctionCallback cb(&OnStart, &OnEnd);
    cb.needsInputs(o.record_shapes || o.with_flops)
        .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION,
                 at::RecordScope::USER_SCOPE});
    c->handle_ = at::addThreadLocalCallback(cb);
    if (o.profile_memory) {
      c10::ThreadLocalDebugInfo::_push(c10::DebugInfoKind::PROFILER_STATE,
                                       std::make_shared<MemoryReporter>());
      c->memory_ = true;
    }
  } catch (const std::exception& e) {
    if (c->handle_ != 0) at::removeCallback(c->handle_);
    reg.running.store(false);
    return absl::InternalError(absl::StrCat("cannot add the RecordFunction callback: ", e.what()));
  }
  c->running_ = true;
  return c;
}

OpCollector::~OpCollector() {
  // Discarded (an overhead probe's session): detached, its records dropped unconverted.
  if (running_ && std::this_thread::get_id() == owner_) (void)Detach();
  if (running_) Reg().running.store(false);  // another thread: at least record nothing more
}

std::vector<std::shared_ptr<void>> OpCollector::Detach() {
  running_ = false;
  at::removeCallback(handle_);
  if (memory_ && !paused_) PopMemoryReporter();
  Registry& reg = Reg();
  std::vector<std::shared_ptr<ThreadBuffer>> buffers;
  {
    const std::lock_guard<std::mutex> lock(reg.mu);
    buffers.swap(reg.buffers);
  }
  // Callbacks copied into other threads' state (autograd's) may still run; they find
  // `running` false once it is stored, and the buffers stay alive while they do.
  reg.running.store(false, std::memory_order_release);
  return {buffers.begin(), buffers.end()};
}

absl::Status OpCollector::OnOwnerThread(const char* what) const {
  if (!running_) return absl::FailedPreconditionError("the op collection was already stopped");
  if (std::this_thread::get_id() != owner_) {
    return absl::FailedPreconditionError(absl::StrCat(
        what, " must run on the thread that started the op collection (its callbacks are that "
              "thread's)"));
  }
  return absl::OkStatus();
}

absl::Status OpCollector::Pause() {
  RETURN_IF_ERROR(OnOwnerThread("Pause"));
  if (paused_) return absl::OkStatus();
  at::disableCallback(handle_);
  if (memory_) PopMemoryReporter();
  paused_ = true;
  return absl::OkStatus();
}

absl::Status OpCollector::Resume() {
  RETURN_IF_ERROR(OnOwnerThread("Resume"));
  if (!paused_) return absl::OkStatus();
  at::reenableCallback(handle_);
  if (memory_) {
    c10::ThreadLocalDebugInfo::_push(c10::DebugInfoKind::PROFILER_STATE,
                                     std::make_shared<MemoryReporter>());
  }
  paused_ = false;
  return absl::OkStatus();
}

absl::StatusOr<CollectedTrace> OpCollector::Stop() {
  RETURN_IF_ERROR(OnOwnerThread("Stop"));
  std::vector<std::shared_ptr<ThreadBuffer>> buffers;
  for (auto& b : Detach()) buffers.push_back(std::static_pointer_cast<ThreadBuffer>(b));
  const int64_t to_realtime = realtime_minus_monotonic_ns_;
  std::unordered_map<uint64_t, uint64_t> os_thread_of;  // RecordFunction's thread id -> OS id
  for (const auto& b : buffers) os_thread_of[b->torch_thread] = b->os_thread;
  CollectedTrace out;
  int64_t still_open = 0;
  for (const auto& b : buffers) {
    const std::lock_guard<std::mutex> lock(b->mu);
    for (size_t i = 0; i < b->records.size(); ++i) {
      const OpRecord& r = b->records[i];
      if (r.end_ns < 0) {
        ++still_open;
        continue;
      }
      CollectedEvent e;
      e.kind = r.kind == RecordKind::kRange ? CollectedKind::kUserAnnotation : CollectedKind::kCpuOp;
      e.name = b->names[r.name];
      e.start_ns = r.start_ns + to_realtime;
      e.dur_ns = r.end_ns - r.start_ns;
      e.thread = b->os_thread;
      const OpRecord* node = e.kind == CollectedKind::kCpuOp ? EvaluateFunctionNode(*b, i) : nullptr;
      const int64_t sequence_nr = node != nullptr ? node->sequence_nr : r.sequence_nr;
      if (e.kind == CollectedKind::kCpuOp && sequence_nr >= 0) {
        e.sequence_nr = sequence_nr;
        const uint64_t fwd_id = node != nullptr ? node->fwd_thread : r.fwd_thread;
        const auto fwd = os_thread_of.find(fwd_id);
        e.fwd_thread = fwd_id == 0 ? 0 : fwd != os_thread_of.end() ? fwd->second : fwd_id;
      }
      if (r.dims_inputs > 0) e.input_dims_json = DimsJson(*b, r);
      if (r.input_type >= 0) {
        const std::string& type = b->names[static_cast<size_t>(r.input_type)];
        e.extra_args_json = absl::StrCat("\"Input type\": [", JsonQuote(type), "]");
      }
      if (r.flops_args >= 0 && b->flops_state[r.name] == FlopsState::kOurs) {
        e.flop_args = std::move(b->flop_args[static_cast<size_t>(r.flops_args)]);
      } else if (r.flops_args >= 0) {
        try {
          const uint64_t flops = impl::computeFlops(
              e.name, b->flops_args[static_cast<size_t>(r.flops_args)]);
          if (flops > 0) e.flops = static_cast<double>(flops);
        } catch (const std::exception&) {
          // An argument LibTorch's counter cannot read: no FLOPs for this op, as LibTorch.
        }
      }
      out.events.push_back(std::move(e));
    }
    for (const MemoryRecord& m : b->memory) {
      CollectedEvent e;
      e.kind = CollectedKind::kMemory;
      e.name = "[memory]";
      e.start_ns = m.ts_ns + to_realtime;
      e.thread = b->os_thread;
      e.bytes = m.bytes;
      e.device_type = m.device_type;
      e.device_index = m.device_index;
      out.events.push_back(std::move(e));
    }
  }
  if (still_open > 0) {
    out.notes.push_back(absl::StrCat("op collector: ", still_open,
                                     " record(s) still open at Stop were dropped"));
  }
  AttributeFlops(out);
  return out;
}

}  // namespace libreyolo::engine
