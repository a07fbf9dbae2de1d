#include "server/engine/train/profiled_window.h"

#include <torch/cuda.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status/status_macros.h"
#include "server/engine/collect/module_scope_events.h"
#include "server/engine/collect/profiling_session.h"
#include "server/engine/collect/recorded_kinds.h"

namespace libreyolo::engine {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// The last cycle's trace under its step name too, without writing it twice: a hard link,
// else a copy (filesystems without links).
absl::Status LinkOrCopy(const std::string& from, const std::string& to) {
  std::error_code ec;
  fs::remove(to, ec);
  fs::create_hard_link(from, to, ec);
  if (!ec) return absl::OkStatus();
  fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
  if (ec) return absl::UnavailableError(absl::StrCat("cannot write ", to, ": ", ec.message()));
  return absl::OkStatus();
}

}  // namespace

void DropWarmupEvents(CollectedTrace& trace, int64_t first_active) {
  const std::string name = absl::StrCat("ProfilerStep#", first_active);
  int64_t cutoff = 0;
  bool found = false;
  for (const CollectedEvent& e : trace.events) {
    if (e.kind == CollectedKind::kUserAnnotation && e.name == name) {
      cutoff = found ? std::min(cutoff, e.start_ns) : e.start_ns;
      found = true;
    }
  }
  if (!found) return;
  std::erase_if(trace.events, [&](const CollectedEvent& e) { return e.start_ns < cutoff; });
}

absl::StatusOr<ProfiledWindow> RunProfiledWindow(Trainer& trainer, LoaderBatchSource& source,
                                                 const ScheduleSettings& schedule,
                                                 const TorchProfilerOptions& options,
                                                 const JobFiles& files,
                                                 const TraceExportOptions& export_base,
                                                 const ProgressFn& progress,
                                                 const CancelToken* cancel) {
  ProfiledWindow out;
  const int64_t total = schedule.TotalSteps();
  int64_t step = 0;  // profiler steps taken, as torch.profiler's step_num
  double recorded_ms = 0;
  // One step outside any recorded range (skip_first, wait); profiled ones pass their range.
  auto run = [&](bool sync) -> absl::Status {
    if (cancel != nullptr && cancel->cancelled.load()) {
      return absl::CancelledError("cancelled while profiling");
    }
    RETURN_IF_ERROR(trainer.Step(source, sync).status());
    ++step;
    if (progress) progress(JobProgress{"profiling", step, total, ""});
    return absl::OkStatus();
  };
  auto run_in_range = [&](bool sync) -> absl::Status {
    ScopedRange range(absl::StrCat("ProfilerStep#", step));
    return run(sync);
  };

  for (int64_t i = 0; i < schedule.skip_first; ++i) {
    RETURN_IF_ERROR(run(false));
  }
  TraceExportOptions export_options = export_base;
  export_options.pid = static_cast<int64_t>(::getpid());
  for (int64_t cycle = 0; cycle < schedule.cycles; ++cycle) {
    for (int64_t i = 0; i < schedule.wait; ++i) {
      RETURN_IF_ERROR(run(false));
    }
    RETURN_IF_ERROR(source.Reserve(schedule.warmup + schedule.active));
    // The job's CPU collector, with CUPTI for GPU activity on CUDA (profiling_session.h).
    ASSIGN_OR_RETURN(auto profiler, ProfilingSession::Start(options));
    for (int64_t i = 0; i < schedule.warmup; ++i) {
      RETURN_IF_ERROR(run_in_range(true));
    }
    const int64_t first_active = step;
    const DeviceChoice& device = trainer.device();
    if (device.cuda) {
      // The [memory] running totals start from what the allocator holds as the active steps
      // begin (the warmup's events are dropped); the peaks are the active steps' own.
      torch::cuda::synchronize(device.index);
      RETURN_IF_ERROR(ResetCudaAllocatorPeaks(device.index));
      ASSIGN_OR_RETURN(auto now, ReadCudaAllocator(device.index));
      export_options.device_allocated_at_start = now.allocated;
      export_options.device_reserved_at_start = now.reserved;
    }
    const auto t0 = Clock::now();
    for (int64_t i = 0; i < schedule.active; ++i) {
      RETURN_IF_ERROR(run_in_range(true));
    }
    recorded_ms += std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    out.recorded_steps += schedule.active;
    if (device.cuda) {
      ASSIGN_OR_RETURN(auto peaks, ReadCudaAllocator(device.index));
      out.memory = peaks;
    }
    ASSIGN_OR_RETURN(auto collected, profiler->Stop());
    out.gpu_collector = profiler->gpu_collector();
    out.cpu_collector = profiler->cpu_collector();
    DropWarmupEvents(collected, first_active);
    for (const std::string& note : collected.notes) {
      if (std::find(out.notes.begin(), out.notes.end(), note) == out.notes.end()) {
        out.notes.push_back(note);
      }
    }
    const std::string named =
        (fs::path(files.dir) / absl::StrCat("profile_trace.", step, ".json")).string();
    out.cycle_traces.push_back(files.Recorded(named));
    if (cycle + 1 == schedule.cycles) {
      // The analysed cycle: kept for the analyse stage, which writes it.
      out.module_scopes = HoldsModuleScopes(collected.events);
      out.recorded = RecordedKindsOf(collected.events);
      out.last_cycle = std::move(collected);
      out.last_export = export_options;
      out.last_named = named;
      break;
    }
    if (progress) progress(JobProgress{"writing", cycle, schedule.cycles, "trace"});
    RETURN_IF_ERROR(WriteTraceAtomically(collected, named, export_options));
  }
  out.mean_step_ms =
      out.recorded_steps > 0 ? recorded_ms / static_cast<double>(out.recorded_steps) : 0.0;
  return out;
}

absl::Status AnalyseProfiledWindow(ProfiledWindow* window, const JobFiles& files,
                                   const JobOutputOptions& output, PostWindowTimes* times) {
  if (!window->last_cycle) return absl::InternalError("the profiled window recorded no cycle");
  // Written and analysed in one pass (job_files.h).
  ASSIGN_OR_RETURN(auto analysed, WriteAndAnalyseTrace(*window->last_cycle, files.trace,
                                                       window->last_export, output, times));
  window->last_cycle.reset();
  window->analysed = std::move(analysed);
  RETURN_IF_ERROR(LinkOrCopy(files.trace, window->last_named));
  window->trace = files.trace;
  return absl::OkStatus();
}

absl::StatusOr<ProbeTimings> ProbeRound(Trainer& trainer, LoaderBatchSource& source,
                                        const TorchProfilerOptions& options, int64_t pairs,
                                        const std::function<void()>& after_window,
                                        const CancelToken* cancel) {
  // One session for the round, paused through the unprofiled windows
  // (ProfilingSession::Pause); with CUDA activity each profiled window starts its own.
  std::unique_ptr<ProfilingSession> round;  // stops (events dropped) as the round ends
  if (!options.cuda) {
    ASSIGN_OR_RETURN(auto started, ProfilingSession::Start(options));
    round = std::move(started);
    RETURN_IF_ERROR(round->Pause());
  }
  auto window = [&](std::vector<double>& ms, int64_t i, bool profiled) -> absl::Status {
    if (cancel != nullptr && cancel->cancelled.load()) {
      return absl::CancelledError("cancelled while probing");
    }
    RETURN_IF_ERROR(source.Reserve(1));
    std::unique_ptr<ProfilingSession> own;
    if (profiled && round != nullptr) {
      RETURN_IF_ERROR(round->Resume());
    } else if (profiled) {
      ASSIGN_OR_RETURN(auto started, ProfilingSession::Start(options));
      own = std::move(started);
    }
    const auto t0 = Clock::now();
    {
      ScopedRange range(absl::StrCat("ProfilerStep#", i));
      RETURN_IF_ERROR(trainer.Step(source, /*sync=*/true).status());
    }
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    if (profiled && round != nullptr) {
      RETURN_IF_ERROR(round->Pause());
    }
    if (after_window) after_window();
    return absl::OkStatus();  // `own` stops here, its events unread
  };
  ProbeTimings t;
  for (int64_t i = 0; i < pairs; ++i) {
    RETURN_IF_ERROR(window(t.unprofiled_ms, 2 * i, false));
    RETURN_IF_ERROR(window(t.profiled_ms, 2 * i + 1, true));
  }
  RETURN_IF_ERROR(window(t.unprofiled_ms, 2 * pairs, false));
  return t;
}

}  // namespace libreyolo::engine
