#include "server/engine/collect/op_collector.h"

#include <ATen/core/ivalue.h>
#include <ATen/record_function.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace libreyolo::engine {
namespace {

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct OpRecord {
  int64_t start_ns = 0;
  int64_t end_ns = -1;  // -1: still open
  int64_t sequence_nr = -1;
  uint32_t name = 0;          // index into ThreadBuffer::names
  uint32_t dims_offset = 0;   // into ThreadBuffer::dims: per input, its rank then its sizes (-1:
  uint32_t dims_inputs = 0;   // not a tensor)
  bool user_scope = false;
};

// One thread's records. Registered once per collection; kept alive by the registry and by the
// thread's own pointer, so a callback in flight while Stop runs writes into a live buffer.
struct ThreadBuffer {
  uint64_t os_thread = 0;
  std::vector<OpRecord> records;
  std::vector<size_t> open;  // indices of the records not yet ended, innermost last
  std::vector<std::string> names;
  std::unordered_map<std::string, uint32_t> name_ids;
  std::vector<int64_t> dims;
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
    b->records.reserve(static_cast<size_t>(reg.options.reserve_per_thread));
    b->open.reserve(64);
    if (reg.options.record_shapes) b->dims.reserve(static_cast<size_t>(reg.options.reserve_per_thread) * 8);
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
  const std::string_view key(name != nullptr ? name : "");
  auto it = b.name_ids.find(std::string(key));
  if (it != b.name_ids.end()) return it->second;
  const auto id = static_cast<uint32_t>(b.names.size());
  b.names.emplace_back(key);
  b.name_ids.emplace(b.names.back(), id);
  return id;
}

std::unique_ptr<at::ObserverContext> OnStart(const at::RecordFunction& fn) {
  if (!Reg().running.load(std::memory_order_relaxed)) return nullptr;
  ThreadBuffer& b = *ThisThread();
  const std::lock_guard<std::mutex> lock(b.mu);
  OpRecord r;
  r.name = Intern(b, fn.name());
  r.sequence_nr = fn.seqNr();
  r.user_scope = fn.scope() == at::RecordScope::USER_SCOPE;
  if (Reg().options.record_shapes && fn.needsInputs()) {
    r.dims_offset = static_cast<uint32_t>(b.dims.size());
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
      const auto sizes = t.sizes();
      b.dims.push_back(static_cast<int64_t>(sizes.size()));
      b.dims.insert(b.dims.end(), sizes.begin(), sizes.end());
    }
  }
  b.open.push_back(b.records.size());
  r.start_ns = NowNs();  // last: the bookkeeping above is not the op's time
  b.records.push_back(r);
  return nullptr;
}

void OnEnd(const at::RecordFunction& /*fn*/, at::ObserverContext* /*ctx*/) {
  const int64_t now = NowNs();  // first: the bookkeeping below is not the op's time
  ThreadBuffer& b = *ThisThread();
  const std::lock_guard<std::mutex> lock(b.mu);
  if (b.open.empty()) return;  // began before the collection (or on another thread)
  b.records[b.open.back()].end_ns = now;
  b.open.pop_back();
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

absl::StatusOr<std::unique_ptr<OpCollector>> OpCollector::Start(const OpCollectorOptions& o) {
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
  try {
    at::RecordFunctionCallback cb(&OnStart, &OnEnd);
    cb.needsInputs(o.record_shapes)
        .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION,
                 at::RecordScope::USER_SCOPE});
    c->handle_ = at::addGlobalCallback(cb);
  } catch (const std::exception& e) {
    reg.running.store(false);
    return absl::InternalError(absl::StrCat("cannot add the RecordFunction callback: ", e.what()));
  }
  c->running_ = true;
  return c;
}

OpCollector::~OpCollector() {
  if (running_) (void)Stop();
}

absl::StatusOr<CollectedTrace> OpCollector::Stop() {
  if (!running_) return absl::FailedPreconditionError("the op collection was already stopped");
  running_ = false;
  at::removeCallback(handle_);
  Registry& reg = Reg();
  reg.running.store(false, std::memory_order_release);
  std::vector<std::shared_ptr<ThreadBuffer>> buffers;
  {
    const std::lock_guard<std::mutex> lock(reg.mu);
    buffers.swap(reg.buffers);
  }
  CollectedTrace out;
  int64_t still_open = 0;
  for (const auto& b : buffers) {
    const std::lock_guard<std::mutex> lock(b->mu);
    for (const OpRecord& r : b->records) {
      if (r.end_ns < 0) {
        ++still_open;
        continue;
      }
      CollectedEvent e;
      e.kind = r.user_scope ? CollectedKind::kUserAnnotation : CollectedKind::kCpuOp;
      e.name = b->names[r.name];
      e.start_ns = r.start_ns;
      e.dur_ns = r.end_ns - r.start_ns;
      e.thread = b->os_thread;
      if (!r.user_scope && r.sequence_nr >= 0) e.sequence_nr = r.sequence_nr;
      if (r.dims_inputs > 0) e.input_dims_json = DimsJson(*b, r);
      out.events.push_back(std::move(e));
    }
  }
  if (still_open > 0) {
    out.notes.push_back(absl::StrCat("op collector: ", still_open,
                                     " record(s) still open at Stop were dropped"));
  }
  return out;
}

}  // namespace libreyolo::engine
