#include "server/engine/collect/torch_profiler.h"

#include <ATen/record_function.h>
#include <torch/csrc/autograd/profiler_kineto.h>
#include <torch/cuda.h>

#include <exception>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace libreyolo::engine {
namespace {

namespace tp = torch::autograd::profiler;
namespace impl = torch::profiler::impl;

// libkineto::ActivityType values as LibTorch 1.13 and 2.x number them.
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

CollectedEvent Convert(const tp::KinetoEvent& e) {
  CollectedEvent c;
  c.name = e.name();
  c.start_ns = static_cast<int64_t>(e.startUs()) * 1000;
  c.dur_ns = static_cast<int64_t>(e.durationUs()) * 1000;
  c.thread = e.startThreadId();
  const uint8_t act = e.activityType();
  if (c.name == "[memory]") {
    c.kind = CollectedKind::kMemory;
    c.bytes = e.nBytes();
    c.device_type = e.deviceType() == c10::DeviceType::CPU ? 0 : 1;
    c.device_index = e.deviceIndex();
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
  }
  c.input_dims_json = ShapesJson(e);
  if (e.flops() > 0) c.flops = static_cast<double>(e.flops());
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
                                      o.profile_memory, o.with_stack, o.with_flops);
    std::set<impl::ActivityType> activities = {impl::ActivityType::CPU};
    // CUDA activity only where this LibTorch has CUDA (a CPU build cannot record any).
    if (o.cuda && torch::cuda::is_available()) activities.insert(impl::ActivityType::CUDA);
    tp::prepareProfiler(config, activities);
    tp::enableProfiler(config, activities);
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("cannot start the LibTorch profiler: ", e.what()));
  }
  p->running_ = true;
  return p;
}

TorchProfiler::~TorchProfiler() {
  if (!running_) return;
  try {
    tp::disableProfiler();
  } catch (...) {  // NOLINT(bugprone-empty-catch): a destructor must not throw
  }
}

absl::StatusOr<CollectedTrace> TorchProfiler::Stop() {
  if (!running_) return absl::FailedPreconditionError("the profiler is not running");
  running_ = false;
  CollectedTrace trace;
  try {
    const std::unique_ptr<tp::ProfilerResult> result = tp::disableProfiler();
    if (result == nullptr) return absl::InternalError("the LibTorch profiler returned no result");
    trace.events.reserve(result->events().size());
    for (const tp::KinetoEvent& e : result->events()) trace.events.push_back(Convert(e));
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("stopping the LibTorch profiler failed: ", e.what()));
  }
  return trace;
}

struct ScopedRange::Impl {
  std::optional<at::RecordFunction> guard;
};

ScopedRange::ScopedRange(const std::string& name) : impl_(std::make_unique<Impl>()) {
  impl_->guard.emplace(at::RecordScope::USER_SCOPE);
  if (impl_->guard->isActive()) impl_->guard->before(name);
}

ScopedRange::~ScopedRange() = default;

}  // namespace libreyolo::engine
