// `profile run`: a short LibreYOLO9 training run measured without the profiler, then recorded
// under torch.profiler's schedule and analysed by the common analyser.
#include <torch/cuda.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <numeric>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/analysis/latency_stats.h"
#include "common/analysis/load_shift.h"
#include "common/analysis/repeat_trials.h"
#include "common/analysis/verdict.h"
#include "server/engine/collect/profiling_session.h"
#include "server/engine/data/dataset.h"
#include "server/engine/data/dataset_spec.h"
#include "server/engine/data/loader.h"
#include "server/engine/engine.h"
#include "server/engine/job_files.h"
#include "server/engine/model/module_scope.h"
#include "server/engine/model_loader.h"
#include "server/engine/overhead_budget.h"
#include "server/engine/runtime_info.h"
#include "server/engine/train/auto_batch.h"
#include "server/engine/train/profiled_window.h"
#include "server/engine/train/train_config.h"
#include "server/engine/train/trainer.h"

namespace libreyolo::engine {
namespace {

using Clock = std::chrono::steady_clock;

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

absl::Status Validate(const TrainJobSpec& s) {
  if (s.batch != -1 && (s.batch < 1 || s.batch > 1024)) {
    return absl::InvalidArgumentError("--batch must be 1..1024, or -1 for auto-batch");
  }
  if (s.imgsz < 32 || s.imgsz > 4096 || s.imgsz % 32 != 0) {
    return absl::InvalidArgumentError("--imgsz must be a multiple of 32 between 32 and 4096");
  }
  if (s.workers < 0 || s.workers > 256)
    return absl::InvalidArgumentError("--workers must be 0..256");
  if (s.steps < 1) return absl::InvalidArgumentError("--steps (--active) must be >= 1");
  if (s.warmup < 0) return absl::InvalidArgumentError("--warmup must be >= 0");
  if (s.repeat < 1) return absl::InvalidArgumentError("--repeat must be >= 1");
  if (s.skip_first < 0 || s.wait < 0) {
    return absl::InvalidArgumentError("--skip-first and --wait must be >= 0");
  }
  if (s.cycles < 1) return absl::InvalidArgumentError("--cycles must be >= 1");
  return ValidateOverheadBudget(s.profiler.overhead_budget_pct);
}

// Exit 3: the window cannot be filled from one epoch at this batch.
absl::Status WindowNotFilled(const TrainJobSpec& s, const DetectionDataset& data, int64_t batch) {
  const int64_t window = s.warmup + s.steps;
  const int64_t per_epoch = DataLoader::BatchesPerEpoch(data.size(), static_cast<int>(batch), true);
  const int64_t fitting_batch = data.size() / window;
  return absl::OutOfRangeError(absl::StrFormat(
      "no profile: the measured window (--warmup %d + --steps %d = %d steps) never fills: %s "
      "gives %d full batch(es) of %d per epoch. Use a larger dataset (at least %d images), "
      "fewer --steps/--warmup (at most %d step%s in all), or a smaller --batch%s.",
      s.warmup, s.steps, window, data.Describe(), per_epoch, batch, window * batch, per_epoch,
      per_epoch == 1 ? "" : "s",
      fitting_batch >= 1 ? absl::StrFormat(" (at most %d)", fitting_batch)
                         : std::string(" (even 1 is too large here)")));
}

struct MeasuredWindows {
  std::vector<TrialMeasurement> trials;  // each trial's unsynchronised steps
  double step_ms = 0;      // unsynchronised steps, over every trial
  double dataload_ms = 0;  // the loader's share of those steps
  PhaseTimes phases;       // synchronised steps: the composition
  double synced_step_ms = 0;
  double loss_first = 0, loss_last = 0;
};

}  // namespace

absl::StatusOr<JobResult> RunTrainJob(const TrainJobSpec& spec, const ProgressFn& progress,
                                      const CancelToken* cancel) {
  auto report = [&](const std::string& stage, int64_t done, int64_t total,
                    const std::string& message = "") {
    if (progress) progress(JobProgress{stage, done, total, message});
  };
  auto cancelled = [&] { return cancel != nullptr && cancel->cancelled.load(); };
  if (auto valid = Validate(spec); !valid.ok()) return valid;
  auto device = ParseDevice(spec.model.device);
  if (!device.ok()) return device.status();
  auto dataset_spec = ResolveDataset(spec.data);
  if (!dataset_spec.ok()) return dataset_spec.status();
  auto dataset = OpenDataset(*dataset_spec, Split::kTrain);
  if (!dataset.ok()) return dataset.status();
  const int64_t window = spec.warmup + spec.steps;
  // Fail before loading anything when even a batch of one cannot fill the window.
  if (spec.batch > 0 && (*dataset)->size() / spec.batch < window) {
    return WindowNotFilled(spec, **dataset, spec.batch);
  }
  if ((*dataset)->size() < window) return WindowNotFilled(spec, **dataset, 1);
  const ThreadSettings threads = ConfigureThreads(spec.model.threads);
  const bool amp = spec.amp && device->cuda;

  try {
    std::optional<CudaAllocatorStats> at_start;
    if (device->cuda) {
      auto stats = ReadCudaAllocator(device->index);
      if (!stats.ok()) return stats.status();
      at_start = *stats;
    }
    report("loading model", 0, 1);
    auto loaded = LoadModel(spec.model.weights, spec.model.size, (*dataset)->num_classes());
    if (!loaded.ok()) return loaded.status();
    if (!loaded->notice.empty()) report("loading model", 1, 1, loaded->notice);
    if (device->cuda) loaded->model->to(CudaDevice(*device));
    loaded->model->train();
    // Module scopes for the probes and the recorded steps (the measured windows record none).
    std::optional<ModuleScopes> module_scopes;
    if (spec.profiler.with_modules) module_scopes.emplace(*loaded->model);

    int64_t batch = spec.batch;
    std::string batch_rule;
    if (batch == -1) {
      report("auto-batch", 0, 1);
      const AutoBatch a =
          PickAutoBatch(loaded->model, *device, amp, spec.imgsz, (*dataset)->size(), window);
      batch = a.batch;
      batch_rule = a.rule;
      report("auto-batch", 1, 1, batch_rule);
    }

    LoaderOptions lo;
    lo.batch_size = static_cast<int>(batch);
    lo.image_size = static_cast<int>(spec.imgsz);
    lo.workers = static_cast<int>(spec.workers);
    lo.pin_memory = device->cuda;
    auto loader = DataLoader::Create(*dataset, lo);
    if (!loader.ok()) return loader.status();
    LoaderBatchSource source(loader->get());

    TrainerOptions to;
    to.device = *device;
    to.amp = amp;
    to.imgsz = spec.imgsz;
    Trainer trainer(loaded->model, to);

    // The measured windows run without the profiler: these are the numbers users see.
    MeasuredWindows m;
    StepLog step_log;
    auto log_step = [&](const char* stage, int64_t trial, const PhaseTimes& t, bool synced) {
      step_log.Add(StepRecord{stage, trial + 1, static_cast<int64_t>(step_log.size()) + 1,
                              trainer.last_losses(),
                              synced ? std::optional<double>(t.total()) : std::nullopt,
                              trainer.LearningRates()});
    };
    double unsynced_ms = 0, unsynced_dataload = 0, synced_ms = 0;
    int64_t unsynced_n = 0, synced_n = 0;
    torch::Tensor first_loss;
    // On CUDA the first half (at least one step) is timed whole, the rest per phase.
    const int64_t timed = device->cuda ? spec.steps - spec.steps / 2 : spec.steps;
    for (int64_t trial = 0; trial < spec.repeat; ++trial) {
      if (auto s = source.Reserve(window); !s.ok()) return s;
      for (int64_t i = 0; i < spec.warmup; ++i) {
        if (cancelled()) return absl::CancelledError("cancelled during warmup");
        auto t = trainer.Step(source, false);
        if (!t.ok()) return t.status();
        log_step("warmup", trial, *t, !device->cuda);
        report("warmup", trial * spec.warmup + i + 1, spec.repeat * spec.warmup);
      }
      double trial_ms = 0, trial_dataload = 0;
      const auto t0 = Clock::now();
      for (int64_t i = 0; i < spec.steps; ++i) {
        if (cancelled()) return absl::CancelledError("cancelled while measuring");
        const bool per_phase = device->cuda && i >= timed;
        if (i == timed && device->cuda) {
          torch::cuda::synchronize(device->index);
          trial_ms = Ms(Clock::now() - t0);
        }
        auto t = trainer.Step(source, per_phase);
        if (!t.ok()) return t.status();
        // Kept on the device and read after the window: .item() would sync mid-window.
        if (trial == 0 && i == 0) first_loss = trainer.last_loss();
        log_step("measuring", trial, *t, per_phase || !device->cuda);
        if (i < timed) trial_dataload += t->dataload;
        if (per_phase || !device->cuda) {
          m.phases += *t;
          synced_ms += t->total();
          ++synced_n;
        }
        report("measuring", trial * spec.steps + i + 1, spec.repeat * spec.steps);
      }
      if (!device->cuda || timed == spec.steps) {
        if (device->cuda) torch::cuda::synchronize(device->index);
        trial_ms = Ms(Clock::now() - t0);
      }
      unsynced_ms += trial_ms;
      unsynced_dataload += trial_dataload;
      unsynced_n += timed;
      TrialMeasurement tm;
      tm.step_ms = trial_ms / static_cast<double>(timed);
      tm.dataload_ms = trial_dataload / static_cast<double>(timed);
      m.trials.push_back(tm);
    }
    m.loss_first = first_loss.item<double>();
    m.loss_last = trainer.last_loss().item<double>();
    m.step_ms = unsynced_ms / static_cast<double>(unsynced_n);
    m.dataload_ms = unsynced_dataload / static_cast<double>(unsynced_n);
    m.phases = m.phases.Scaled(synced_n > 0 ? 1.0 / static_cast<double>(synced_n) : 0.0);
    m.synced_step_ms = synced_n > 0 ? synced_ms / static_cast<double>(synced_n) : m.step_ms;

    JobFiles files = JobFilesFor(spec.project, "prof", spec.output);
    if (auto made = CreateJobDir(files); !made.ok()) return made;
    // Written before the profiled window: a job that fails later still leaves its steps.
    if (auto w = WriteFileAtomically(files.metrics, step_log.ToJsonLines()); !w.ok()) return w;
    ScheduleSettings schedule;
    schedule.skip_first = spec.skip_first;
    schedule.wait = spec.wait;
    schedule.warmup = spec.warmup;
    schedule.active = spec.steps;
    schedule.cycles = spec.cycles;
    auto profiler_options = [&](const ResolvedSwitches& sw) {
      return SessionOptions(sw, spec.profiler.collector, device->cuda && spec.profiler.cuda);
    };
    // The overhead budget and the profile's overhead_pct (overhead_budget.h): each probe round
    // times kProbePairs single-step windows under the profiler, each between two without it,
    // synced as recorded steps are. A window takes its step from one epoch, so any dataset that
    // fills the measured window can be probed (no exit 3 the run would not have had).
    int64_t probed = 0, round_end = 0;
    auto probe = [&](const ResolvedSwitches& sw) -> absl::StatusOr<ProbeTimings> {
      round_end = probed + kProbeRoundWindows;
      auto after_window = [&] { report("probing", ++probed, round_end); };
      return ProbeRound(trainer, source, profiler_options(sw), kProbePairs, after_window, cancel);
    };
    // The probes' share: at most the job's own steps (the measured trials and the profiler's).
    const int64_t job_windows = spec.repeat * window + spec.skip_first +
                                spec.cycles * (spec.wait + spec.warmup + spec.steps);
    auto applied = ApplyOverheadBudget(spec.profiler, spec.profiler.overhead_budget_pct, probe,
                                       ProbeRoundLimit(job_windows));
    if (!applied.ok()) return applied.status();
    const BudgetOutcome budget = *std::move(applied);
    const TorchProfilerOptions po = profiler_options(budget.switches);
    PostWindowTimes post_window;
    auto profiled = RunProfiledWindow(trainer, source, schedule, po, files, spec.output,
                                      &post_window, progress, cancel);
    if (!profiled.ok()) return profiled.status();

    Profile p = std::move(profiled->analysed.profile);
    p.trace = profiled->trace;
    p.source_kind = "profile";  // what a reader of the written file will see
    // A seeded random init is labelled with the size it was built at (`--size s` with the default
    // weights name is a LibreYOLO9s, not "LibreYOLO9t.pt").
    p.model = loaded->weights_label == "random-init"
                  ? absl::StrCat("LibreYOLO9", spec.model.size, " (random init)")
                  : loaded->weights_label;
    p.batch = batch;
    // Means over the trials (repeat_trials.h); gpu_util stays the profiled window's own ratio.
    ApplyMeasuredTrials(p, batch, m.trials);

    TrainConfigFacts facts;
    facts.spec = &spec;
    facts.batch = batch;
    facts.batch_rule = batch_rule;
    facts.amp_effective = amp;
    facts.device_label = device->Label();
    facts.weights_label = loaded->weights_label;
    facts.model_label = p.model;
    facts.dataset = (*dataset)->Describe();
    facts.dataset_images = (*dataset)->size();
    facts.threads = threads;
    facts.optimizer =
        absl::StrCat(trainer.groups().Describe(SgdSettings{}), "; ", trainer.UpdateDescription());
    facts.metrics_file = files.Recorded(files.metrics);
    facts.loss_first = m.loss_first;
    facts.loss_last = m.loss_last;
    facts.skipped_steps = trainer.skipped_steps();
    facts.phases = m.phases;
    facts.loader_note = (*loader)->note();
    if (loaded->head_reinitialised) facts.head_reinit = &*loaded->head_reinitialised;
    if (device->cuda) {
      facts.cuda_index = device->index;
      facts.cuda_at_start = at_start;
      auto props = CudaDeviceProperties(device->index);
      if (!props.ok()) return props.status();
      p.device = *props;
    }
    if (profiled->memory) {
      // The allocator's own peaks over the recorded steps (see infer_job.cc).
      p.peak_vram_mb = static_cast<double>(profiled->memory->peak_allocated) / 1e6;
      p.peak_reserved_mb = static_cast<double>(profiled->memory->peak_reserved) / 1e6;
    }
    p.config_json = TrainConfigJson(facts);
    p.profiler_json = TrainProfilerJson(spec, po.cuda, budget, *profiled);
    p.tool_name = "libreyolo-profiler";
    p.tool_version = LIBREYOLO_VERSION;
    p.libtorch_version = LibTorchVersion();
    p.created_at = absl::FormatTime(absl::RFC3339_sec, absl::Now(), absl::UTCTimeZone());
    if (!p.device.has_value()) {
      DeviceInfo info;
      info.type = device->cuda ? "cuda" : "cpu";
      info.name = device->Label();
      if (device->cuda) info.index = device->index;
      p.device = info;
    }
    const Verdict v = ComputeVerdict(p);
    p.bound = v.bound;
    p.bound_why = v.why;
    // Last, over the final numbers: timings that cannot all be true are said so (load_shift.h).
    RecordLoadShift(&p);

    report("writing", 0, 1);
    JobResult result;
    result.post_window = post_window;
    if (auto w = WriteJobOutputs(p, files, spec.output, &profiled->analysed, spec.repeat > 1,
                                 &result);
        !w.ok()) {
      return w;
    }
    result.trace_path = profiled->trace;
    report("writing", 1, 1);
    result.profile = std::move(p);
    return result;
  } catch (const c10::Error& e) {
    return absl::InternalError(absl::StrCat("LibTorch failed: ", e.what_without_backtrace()));
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("training failed: ", e.what()));
  }
}

}  // namespace libreyolo::engine
