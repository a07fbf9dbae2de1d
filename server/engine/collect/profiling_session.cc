#include "server/engine/collect/profiling_session.h"

#include <utility>

#include "common/status/status_macros.h"
#include "server/engine/collect/cupti_collector.h"
#include "server/engine/collect/cupti_convert.h"
#include "server/engine/collect/op_collector.h"

namespace libreyolo::engine {

TorchProfilerOptions SessionOptions(const ResolvedSwitches& switches, const std::string& collector,
                                    bool cuda) {
  TorchProfilerOptions o;
  o.cpu_collector = collector == "libtorch" ? CpuCollector::kLibTorch : CpuCollector::kNative;
  o.record_shapes = switches.record_shapes;
  o.profile_memory = switches.profile_memory;
  o.with_flops = switches.with_flops;
  o.cuda = cuda;
  return o;
}

absl::StatusOr<std::unique_ptr<ProfilingSession>> ProfilingSession::Start(
    const TorchProfilerOptions& options) {
  std::unique_ptr<ProfilingSession> s(new ProfilingSession());
  TorchProfilerOptions torch_options = options;
  bool native = options.cpu_collector == CpuCollector::kNative;
  if (options.cuda) {
    ASSIGN_OR_RETURN(auto cupti, CuptiCollector::Start(CuptiOptions()));
    if (cupti->active()) {
      s->gpu_collector_ = "cupti";
      torch_options.cuda = false;  // one CUPTI subscriber per process
      s->cupti_ = std::move(cupti);
    } else if (!CuptiBuilt()) {
      s->gpu_collector_ = "libtorch";
      s->note_ =
          "GPU activity from LibTorch's profiler (Kineto): this build has no CUPTI collector "
          "(configure with -DLIBREYOLO_CUPTI=ON for grid/block/registers and cudaMalloc counts)";
      if (native) {
        native = false;  // Kineto's CUDA activity comes with LibTorch's profiler only
        s->note_ += "; CPU side recorded by LibTorch's profiler too (collector native asked)";
      }
    } else {
      // No driver or device: nothing to record. Keep the inactive collector, whose Stop()
      // returns the one-line reason as a note.
      torch_options.cuda = false;
      s->cupti_ = std::move(cupti);
    }
  }
  if (native) {
    OpCollectorOptions o;
    o.record_shapes = options.record_shapes;
    o.profile_memory = options.profile_memory;
    // FLOPs only with shapes, as LibTorch's profiler counts them (WriteSwitchFields' rule):
    // one meaning of with_flops whichever collector records.
    o.with_flops = options.with_flops && options.record_shapes;
    ASSIGN_OR_RETURN(auto started, OpCollector::Start(o));
    s->native_ = std::move(started);
    return s;
  }
  ASSIGN_OR_RETURN(auto torch, TorchProfiler::Start(torch_options));
  s->torch_ = std::move(torch);
  return s;
}

ProfilingSession::~ProfilingSession() = default;

const char* ProfilingSession::cpu_collector() const {
  return native_ != nullptr ? "native" : "libtorch";
}

absl::Status ProfilingSession::Pause() {
  if (cupti_ != nullptr && cupti_->active()) {
    return absl::FailedPreconditionError("a session recording GPU activity cannot pause");
  }
  return native_ != nullptr ? native_->Pause() : torch_->Pause();
}

absl::Status ProfilingSession::Resume() {
  return native_ != nullptr ? native_->Resume() : torch_->Resume();
}

absl::StatusOr<CollectedTrace> ProfilingSession::Stop() {
  CollectedTrace gpu;
  if (cupti_ != nullptr) {
    ASSIGN_OR_RETURN(auto stopped, cupti_->Stop());
    gpu = std::move(stopped);
  }
  ASSIGN_OR_RETURN(auto cpu, native_ != nullptr ? native_->Stop() : torch_->Stop());
  if (cupti_ != nullptr) MergeGpuActivity(cpu, std::move(gpu));
  if (!note_.empty()) cpu.notes.push_back(note_);
  return cpu;
}

}  // namespace libreyolo::engine
