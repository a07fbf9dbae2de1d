// The profiled part of `profile run`, driven by torch.profiler.schedule's knobs: skip_first
// steps once, then `cycles` times: `wait` steps without the profiler, `warmup` steps with it
// running but discarded, `active` recorded steps. Each completed cycle is written as an
// on_trace_ready handler would: profile_trace.<step>.json, <step> being the profiler steps
// taken so far; the last cycle is also profile_trace.json (a hard link), the one analysed.
#ifndef LIBREYOLO_SERVER_ENGINE_TRAIN_PROFILED_WINDOW_H_
#define LIBREYOLO_SERVER_ENGINE_TRAIN_PROFILED_WINDOW_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/engine/collect/collected_trace.h"
#include "server/engine/collect/torch_profiler.h"
#include "server/engine/engine.h"
#include "server/engine/job/job_files.h"
#include "server/engine/job/overhead_budget.h"
#include "server/engine/runtime/cuda_runtime.h"
#include "server/engine/train/trainer.h"

namespace libreyolo::engine {

struct ScheduleSettings {
  int64_t skip_first = 0, wait = 0, warmup = 0, active = 1, cycles = 1;
  // Steps the whole schedule runs.
  int64_t TotalSteps() const { return skip_first + cycles * (wait + warmup + active); }
};

struct ProfiledWindow {
  // profile_trace.<step>.json, one per cycle, in order, as profile.json records them
  // (JobFiles::Recorded).
  std::vector<std::string> cycle_traces;
  std::string trace;  // profile_trace.json: the last cycle
  AnalysedTrace analysed;  // the last cycle, analysed in memory (job_files.h)
  double mean_step_ms = 0;                // recorded (active) steps over every cycle
  int64_t recorded_steps = 0;
  std::vector<std::string> notes;      // the collectors' notes (e.g. no CUPTI)
  std::string cpu_collector = "none";  // "native" or "libtorch"
  std::string gpu_collector = "none";  // "cupti", "libtorch" (Kineto) or "none"
  bool module_scopes = false;          // the analysed trace (the last cycle) holds module scopes
  RecordedKinds recorded;              // what the analysed trace holds (shapes, FLOPs, memory)
  // CUDA: the caching allocator over the last cycle's active steps (peaks since they began).
  std::optional<CudaAllocatorStats> memory;
  // The last cycle as recorded, until AnalyseProfiledWindow writes and analyses it.
  std::optional<CollectedTrace> last_cycle;
  TraceExportOptions last_export;
  std::string last_named;  // profile_trace.<step>.json of the last cycle
};

// Drops what a cycle's warmup recorded: every event that starts before the range of
// "ProfilerStep#<first_active>". Without that range the trace is kept whole.
void DropWarmupEvents(CollectedTrace& trace, int64_t first_active);

// Runs the schedule (the record stage). Recorded steps sync per phase on CUDA (real phase wall
// times). Steps that a window needs are reserved from one epoch, or from an epoch's start on when
// the dataset holds fewer batches (LoaderBatchSource::Reserve).
// Every cycle but the last is written as it ends; the last is kept for AnalyseProfiledWindow.
// `export_base` names the trace's process and its distributedInfo; the window fills in the rest.
absl::StatusOr<ProfiledWindow> RunProfiledWindow(Trainer& trainer, LoaderBatchSource& source,
                                                 const ScheduleSettings& schedule,
                                                 const TorchProfilerOptions& options,
                                                 const JobFiles& files,
                                                 const TraceExportOptions& export_base,
                                                 const ProgressFn& progress,
                                                 const CancelToken* cancel);

// The analyse stage: writes the last cycle as profile_trace.json (hard-linked as its
// profile_trace.<step>.json) and analyses it in the same pass (job_files.h), into
// `window->analysed`.
absl::Status AnalyseProfiledWindow(ProfiledWindow* window, const JobFiles& files,
                                   const JobOutputOptions& output, PostWindowTimes* times);

// One round of an overhead probe (overhead_budget.h): `pairs` profiled windows, each between two
// unprofiled ones (unprofiled, profiled, ..., unprofiled), one training step each, synced per
// phase as recorded steps are. The round keeps one profiler session with `options`, paused
// through the unprofiled windows and resumed before a profiled window's clock starts
// (ProfilingSession::Pause); its events are dropped as the round ends. With CUDA activity each
// profiled window starts a session of its own. Each window reserves its step from one epoch
// (LoaderBatchSource::Reserve, outside the clock), so a round needs no more than one batch an
// epoch. `after_window` (may be empty) runs after each window, for progress.
absl::StatusOr<ProbeTimings> ProbeRound(Trainer& trainer, LoaderBatchSource& source,
                                        const TorchProfilerOptions& options, int64_t pairs,
                                        const std::function<void()>& after_window,
                                        const CancelToken* cancel);

}  // namespace libreyolo::engine

#endif  // LIBREYOLO_SERVER_ENGINE_TRAIN_PROFILED_WINDOW_H_
