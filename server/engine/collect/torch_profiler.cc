#include "server/engine/collect/torch_profiler.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/record_function.h>
#include <c10/util/ThreadLocalDebugInfo.h>
#include <sys/syscall.h>
#include <torch/csrc/autograd/profiler_kineto.h>
#include <unistd.h>
#include <torch/cuda.h>

#include <cstdio>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <vector>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status/status_macros.h"
#include "common/trace/flop_formulas.h"
#include "server/engine/collect/flop_attribution.h"

namespace libreyolo::engine {
namespace {

namespace tp = torch::autograd::profiler;
namespace impl = torch::profiler::impl;

// libkineto::ActivityType values as LibTorch 2.x numbers them.
constexpr uint8_t kActUserAnnotation = 1;
constexpr uint8_t kActGpuMemcpy = 3;
constexpr uint8_t kActGpuMemset = 4;
constexpr uint8_t kActKernel = 5;
constexpr uint8_t kActCudaRuntime = 7;

std::string ShapesJson(const tp::KinetoEvent& e) {
  if (!e.hasShapes()) return "";
  std::vector<std::string> parts;
  for (const auto& shape : e.shapes()) parts.push_back(absl::StrCat("[", absl::StrJoin(shape, ", "), "]"));
  return absl::StrCat("[", absl::StrJoin(parts, ", "), "]");
}

// LibTorch numbers the threads that record ops 1, 2, ... (RecordFunction's ids); Kineto's own
// export and every tool that joins a trace with the system's view (HTA, Perfetto, nsys) use the
// OS thread id. LibTorch's C++ API does not hand out the pair, so each thread that starts a
// profiler or opens one of our ranges (the job's threads) registers its own; a thread that
// never does (autograd's device threads on CUDA) keeps LibTorch's number.
using ThreadMap = std::map<uint64_t, uint64_t>;

std::mutex& ThreadMapMutex() {
  static std::mutex m;
  return m;
}

ThreadMap& Threads() {
  static ThreadMap map;
  return map;
}

void RegisterThisThread() {
  thread_local bool registered = false;
  if (registered) return;
  registered = true;
  const uint64_t torch_id = at::RecordFunction::currentThreadId();
  const auto os_id = static_cast<uint64_t>(::syscall(SYS_gettid));
  const std::lock_guard<std::mutex> lock(ThreadMapMutex());
  Threads()[torch_id] = os_id;
}

uint64_t OsThread(const ThreadMap& map, uint64_t torch_thread) {
  const auto it = map.find(torch_thread);
  return it == map.end() ? torch_thread : it->second;
}

// A formula-table op's inputs as LibTorch recorded them: shapes for the tensors, the concrete
// inputs (ints, int lists, bools, strings) for the rest. Without concrete inputs (LibTorch
// records them unless told not to) the formulas find no stride and count nothing.
std::vector<FlopArg> FlopArgsOf(const tp::KinetoEvent& e) {
  std::vector<FlopArg> out;
  if (!e.hasShapes()) return out;
  auto shapes = e.shapes();
  auto concrete = e.hasConcreteInputs() ? e.concreteInputs() : c10::ArrayRef<c10::IValue>();
  // A TorchScript graph's ops record the interpreter's whole stack as their inputs (the
  // dispatcher's callBoxed): their own arguments are the last ones, as the schema counts them.
  if (const auto op = c10::Dispatcher::singleton().findSchema({e.name(), e.overload_name()})) {
    const size_t n = op->schema().arguments().size();
    if (shapes.size() > n) shapes = shapes.slice(shapes.size() - n);
    if (concrete.size() > n) concrete = concrete.slice(concrete.size() - n);
  }
  for (size_t i = 0; i < shapes.size(); ++i) {
    const c10::IValue* v = i < concrete.size() ? &concrete[i] : nullptr;
    if (!shapes[i].empty()) {
      out.push_back(FlopArg::Tensor(shapes[i]));
    } else if (v != nullptr && v->isInt()) {
      out.push_back(FlopArg::Ints({v->toInt()}));
    } else if (v != nullptr && v->isIntList()) {
      out.push_back(FlopArg::Ints(v->toIntVector()));
    } else if (v != nullptr && v->isBool()) {
      out.push_back(FlopArg::Bools({v->toBool()}));
    } else if (v != nullptr && v->isBoolList()) {
      out.push_back(FlopArg::Bools(v->toBoolList().vec()));
    } else if (v != nullptr && v->isString()) {
      out.push_back(FlopArg::String(v->toStringRef()));
    } else {
      out.push_back(FlopArg::None());
    }
  }
  return out;
}

CollectedEvent Convert(const tp::KinetoEvent& e, const ThreadMap& threads) {
  CollectedEvent c;
  c.name = e.name();
  c.start_ns = static_cast<int64_t>(e.startNs());
  c.dur_ns = static_cast<int64_t>(e.durationNs());
  c.thread = OsThread(threads, e.startThreadId());
  const uint8_t act = e.activityType();
  if (c.name == "[memory]") {
    c.kind = CollectedKind::kMemory;
    c.bytes = e.nBytes();
    const bool cpu = e.deviceType() == c10::DeviceType::CPU;
    c.device_type = cpu ? 0 : 1;
    c.device_index = cpu ? -1 : e.deviceIndex();  // Kineto writes -1 for the host
    c.dur_ns = 0;
    return c;
  }
  switch (act) {
    case kActUserAnnotation: c.kind = CollectedKind::kUserAnnotation; break;
    case kActGpuMemcpy: c.kind = CollectedKind::kMemcpy; break;
    case kActGpuMemset: c.kind = CollectedKind::kMemset; break;
    case kActKernel: c.kind = CollectedKind::kKernel; break;
    case kActCudaRuntime: c.kind = CollectedKind::kRuntime; break;
    default: c.kind = CollectedKind::kCpuOp; break;
  }
  if (c.kind == CollectedKind::kKernel || c.kind == CollectedKind::kMemcpy ||
      c.kind == CollectedKind::kMemset) {
    c.thread = static_cast<uint64_t>(e.deviceResourceId());  // the stream
    c.device_index = e.deviceIndex();
    c.correlation = static_cast<int64_t>(e.linkedCorrelationId());
  } else if (c.kind == CollectedKind::kRuntime) {
    c.correlation = static_cast<int64_t>(e.correlationId());
  } else if (c.kind == CollectedKind::kCpuOp && e.sequenceNr() >= 0) {
    c.sequence_nr = e.sequenceNr();
    c.fwd_thread = e.fwdThreadId() > 0 ? OsThread(threads, e.fwdThreadId()) : 0;
  }
  c.input_dims_json = ShapesJson(e);
  if (e.flops() > 0) c.flops = static_cast<double>(e.flops());
  if (c.kind == CollectedKind::kCpuOp && ClassifyFlopOp(c.name) == FlopOpClass::kFormula) {
    c.flop_args = FlopArgsOf(e);
  }
  return c;
}

}  // namespace

absl::StatusOr<std::unique_ptr<TorchProfiler>> TorchProfiler::Start(const TorchProfilerOptions& o) {
  std::unique_ptr<TorchProfiler> p(new TorchProfiler());
  try {
    if (tp::profilerEnabled()) {
      return absl::FailedPreconditionError("a LibTorch profiler session is already running");
    }
    const impl::ProfilerConfig config(impl::ProfilerState::KINETO, o.record_shapes,
                                      o.profile_memory, /*with_stack=*/false, o.with_flops);
    std::set<impl::ActivityType> activities = {impl::ActivityType::CPU};
    // CUDA activity only where this LibTorch has CUDA (a CPU build cannot record any).
    if (o.cuda && torch::cuda::is_available()) activities.insert(impl::ActivityType::CUDA);
    RegisterThisThread();
    tp::prepareProfiler(config, activities);
    tp::enableProfiler(config, activities);
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("cannot start the LibTorch profiler: ", e.what()));
  }
  p->running_ = true;
  p->cuda_ = o.cuda;
  p->with_flops_ = o.with_flops && o.record_shapes;
  p->kineto_trace_path_ = o.kineto_trace_path;
  return p;
}

absl::Status TorchProfiler::Pause() {
  if (!running_) return absl::FailedPreconditionError("the profiler is not running");
  if (paused_) return absl::OkStatus();
  if (cuda_) {
    return absl::FailedPreconditionError(
        "a profiler session with CUDA activity cannot be paused (its kernels would still be "
        "recorded)");
  }
  try {
    // The session's state is the thread's last debug info of this kind (enableProfiler pushed
    // it); _pop throws otherwise.
    paused_reporter_ = c10::ThreadLocalDebugInfo::_pop(c10::DebugInfoKind::PROFILER_STATE);
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("cannot pause the LibTorch profiler: ", e.what()));
  }
  record_function_was_enabled_ = at::isRecordFunctionEnabled();
  at::enableRecordFunction(false);
  paused_ = true;
  return absl::OkStatus();
}

absl::Status TorchProfiler::Resume() {
  if (!paused_) return absl::OkStatus();
  try {
    c10::ThreadLocalDebugInfo::_push(c10::DebugInfoKind::PROFILER_STATE, paused_reporter_);
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("cannot resume the LibTorch profiler: ", e.what()));
  }
  paused_reporter_.reset();
  at::enableRecordFunction(record_function_was_enabled_);
  paused_ = false;
  return absl::OkStatus();
}

TorchProfiler::~TorchProfiler() {
  if (!running_) return;
  (void)Resume();  // the session's state back on the thread, for disableProfiler to find
  try {
    tp::disableProfiler();
  } catch (...) {  // NOLINT(bugprone-empty-catch): a destructor must not throw
  }
}

absl::StatusOr<CollectedTrace> TorchProfiler::Stop() {
  if (!running_) return absl::FailedPreconditionError("the profiler is not running");
  RETURN_IF_ERROR(Resume());
  running_ = false;
  CollectedTrace trace;
  try {
    const std::unique_ptr<tp::ProfilerResult> result = tp::disableProfiler();
    if (result == nullptr) return absl::InternalError("the LibTorch profiler returned no result");
    ThreadMap threads;
    {
      const std::lock_guard<std::mutex> lock(ThreadMapMutex());
      threads = Threads();
    }
    trace.events.reserve(result->events().size());
    for (const tp::KinetoEvent& e : result->events()) trace.events.push_back(Convert(e, threads));
    if (with_flops_) AttributeFlops(trace);
    if (!kineto_trace_path_.empty()) {
      // LibTorch's save reports nothing when it cannot write: check that the file is there.
      std::remove(kineto_trace_path_.c_str());
      result->save(kineto_trace_path_);
      if (::access(kineto_trace_path_.c_str(), F_OK) != 0) {
        return absl::UnavailableError(absl::StrCat(
            "LibTorch could not save its trace to ", kineto_trace_path_,
            " (missing folder or not writable?); give --kineto-trace a writable path"));
      }
    }
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("stopping the LibTorch profiler failed: ", e.what()));
  }
  return trace;
}

struct ScopedRange::Impl {
  std::optional<at::RecordFunction> guard;
};

ScopedRange::ScopedRange(const std::string& name) : impl_(std::make_unique<Impl>()) {
  RegisterThisThread();
  impl_->guard.emplace(at::RecordScope::USER_SCOPE);
  if (impl_->guard->isActive()) impl_->guard->before(name);
}

ScopedRange::~ScopedRange() = default;

}  // namespace libreyolo::engine
