// `profile infer`: the inference path of LibreYOLO9 measured without the profiler, then a
// profiled window recorded to profile_trace.json and analysed by the common analyser.
#include <torch/cuda.h>
#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <numeric>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/analysis/latency_stats.h"
#include "common/analysis/load_shift.h"
#include "common/analysis/repeat_trials.h"
#include "common/analysis/verdict.h"
#include "common/json/json_writer.h"
#include "server/engine/budget_cache.h"
#include "server/engine/collect/module_scope_events.h"
#include "server/engine/collect/profiling_session.h"
#include "server/engine/collect/recorded_kinds.h"
#include "server/engine/collect/torch_profiler.h"
#include "server/engine/collect/trace_export.h"
#include "server/engine/cuda_runtime.h"
#include "server/engine/data/batch.h"
#include "server/engine/data/inference_source.h"
#include "server/engine/data/transforms.h"
#include "server/engine/engine.h"
#include "server/engine/infer/postprocess.h"
#include "server/engine/infer/torchscript_model.h"
#include "server/engine/job_files.h"
#include "server/engine/model/module_scope.h"
#include "server/engine/model_loader.h"
#include "server/engine/overhead_budget.h"
#include "server/engine/runtime_info.h"

namespace libreyolo::engine {
namespace {

using Clock = std::chrono::steady_clock;

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

// JsonWriter ends a document with a newline; the profile embeds the object verbatim.
std::string Finish(JsonWriter& w) {
  std::string s = w.Take();
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

absl::Status Validate(const InferJobSpec& s, bool cuda) {
  if (s.batch < 1 || s.batch > 1024) return absl::InvalidArgumentError("--batch must be 1..1024");
  if (s.imgsz < 32 || s.imgsz > 4096 || s.imgsz % 32 != 0) {
    return absl::InvalidArgumentError("--imgsz must be a multiple of 32 between 32 and 4096");
  }
  if (s.warmup < 0) return absl::InvalidArgumentError("--warmup must be >= 0");
  if (s.runs < 1) return absl::InvalidArgumentError("--runs must be >= 1");
  if (s.repeat < 1) return absl::InvalidArgumentError("--repeat must be >= 1");
  if (s.conf < 0 || s.conf > 1) return absl::InvalidArgumentError("--conf must be in [0, 1]");
  if (s.iou < 0 || s.iou > 1) return absl::InvalidArgumentError("--iou must be in [0, 1]");
  if (s.max_det < 1) return absl::InvalidArgumentError("--max-det must be >= 1");
  if (s.amp_dtype != "float16" && s.amp_dtype != "bfloat16") {
    return absl::InvalidArgumentError("--amp-dtype must be float16 or bfloat16");
  }
  if (s.half && !cuda) {
    return absl::InvalidArgumentError("--half autocasts on CUDA only; drop it with --device cpu");
  }
  return ValidateOverheadBudget(s.profiler.overhead_budget_pct);
}

struct StageTimes {
  double pre = 0, fwd = 0, post = 0;
  double total() const { return pre + fwd + post; }
};

// What an inference iteration needs of a model: its input made from the images (on the CPU),
// its forward and its decode (the number of detections). Two kinds: LibreYOLO9 built here from
// a checkpoint, and a TorchScript export of any family the Python LibreYOLO exports.
class InferModel {
 public:
  virtual ~InferModel() = default;
  virtual absl::StatusOr<torch::Tensor> Prepare(const std::vector<cv::Mat>& images, bool pin) = 0;
  virtual torch::IValue Forward(const torch::Tensor& input) = 0;
  virtual absl::StatusOr<int64_t> Decode(const torch::IValue& output,
                                         const PostprocessOptions& o) = 0;
};

class Yolo9InferModel final : public InferModel {
 public:
  Yolo9InferModel(Yolo9 model, int64_t imgsz) : model_(std::move(model)), imgsz_(imgsz) {}
  absl::StatusOr<torch::Tensor> Prepare(const std::vector<cv::Mat>& images, bool pin) override {
    std::vector<cv::Mat> canvases;
    for (const cv::Mat& image : images) {
      LetterboxGeometry g;
      canvases.push_back(LetterboxImage(image, static_cast<int>(imgsz_), &g));
    }
    return ImagesToTensor(canvases, pin);
  }
  torch::IValue Forward(const torch::Tensor& input) override { return model_->predict(input); }
  absl::StatusOr<int64_t> Decode(const torch::IValue& output,
                                 const PostprocessOptions& o) override {
    int64_t n = 0;
    for (const Detections& d : Postprocess(output.toTensor(), o)) n += d.scores.size(0);
    return n;
  }

 private:
  Yolo9 model_;
  int64_t imgsz_;
};

class ExportInferModel final : public InferModel {
 public:
  explicit ExportInferModel(TorchScriptModel* model) : model_(model) {}
  absl::StatusOr<torch::Tensor> Prepare(const std::vector<cv::Mat>& images, bool pin) override {
    std::vector<cv::Mat> canvases;
    geometry_.assign(images.size(), ExportGeometry{});
    for (size_t i = 0; i < images.size(); ++i) canvases.push_back(model_->Canvas(images[i], &geometry_[i]));
    auto input = model_->ToInput(canvases);
    if (!input.ok() || !pin) return input;
    return input->pin_memory();
  }
  torch::IValue Forward(const torch::Tensor& input) override { return model_->Forward(input); }
  absl::StatusOr<int64_t> Decode(const torch::IValue& output,
                                 const PostprocessOptions& o) override {
    auto dets = model_->Postprocess(output, o, geometry_);
    if (!dets.ok()) return dets.status();
    int64_t n = 0;
    for (const Detections& d : *dets) n += d.scores.size(0);
    return n;
  }

 private:
  TorchScriptModel* model_;
  std::vector<ExportGeometry> geometry_;  // of the images last prepared
};

// One inference iteration over images [first, first + batch) of the source, cycling.
class InferIteration {
 public:
  InferIteration(const InferJobSpec& spec, const InferenceSource& source, InferModel* model,
                 const DeviceChoice& device)
      : spec_(spec), source_(source), model_(model), device_(device) {}

  absl::StatusOr<StageTimes> Run(int64_t iteration, bool sync_stages) {
    StageTimes t;
    auto t0 = Clock::now();
    torch::Tensor input;
    {
      ScopedRange r("step/preprocess");
      std::vector<cv::Mat> images;
      for (int64_t b = 0; b < spec_.batch; ++b) {
        const auto index = static_cast<size_t>((iteration * spec_.batch + b) %
                                               static_cast<int64_t>(source_.size()));
        auto image = LoadInferenceImage(source_, index);
        if (!image.ok()) return image.status();
        images.push_back(*std::move(image));
      }
      auto prepared = model_->Prepare(images, /*pin=*/device_.cuda);
      if (!prepared.ok()) return prepared.status();
      input =
          device_.cuda
              ? prepared->to(
                    torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(device_.index)), true)
              : *prepared;
      Sync(sync_stages);
    }
    auto t1 = Clock::now();
    torch::IValue predictions;
    {
      ScopedRange r("step/forward");
      torch::InferenceMode guard;
      {
        const CudaAutocast autocast(spec_.half && device_.cuda, spec_.amp_dtype == "bfloat16");
        predictions = model_->Forward(input);
      }
      Sync(sync_stages);
    }
    auto t2 = Clock::now();
    {
      ScopedRange r("step/postprocess");
      torch::InferenceMode guard;
      PostprocessOptions po;
      po.conf = spec_.conf;
      po.iou = spec_.iou;
      po.max_det = spec_.max_det;
      auto n = model_->Decode(predictions, po);
      if (!n.ok()) return n.status();
      detections_ = *n;
    }
    auto t3 = Clock::now();
    t.pre = Ms(t1 - t0);
    t.fwd = Ms(t2 - t1);
    t.post = Ms(t3 - t2);
    return t;
  }

  int64_t detections() const { return detections_; }

 private:
  void Sync(bool on) const {
    if (on && device_.cuda) torch::cuda::synchronize(device_.index);
  }

  const InferJobSpec& spec_;
  const InferenceSource& source_;
  InferModel* model_;
  DeviceChoice device_;
  int64_t detections_ = 0;
};

// The job's model, of either kind, on its device.
struct JobModel {
  std::optional<LoadedModel> yolo9;            // a LibreYOLO9 checkpoint (or its random init)
  std::unique_ptr<TorchScriptModel> exported;  // or a TorchScript export
  std::unique_ptr<InferModel> runner;
  std::string label;          // profile.json's `model`
  std::string weights_label;  // the path, or "random-init"
  std::string size;
  int64_t height = 0, width = 0;  // the input canvas
  std::string notice;
};

absl::StatusOr<JobModel> LoadInferModel(const InferJobSpec& spec, const DeviceChoice& device) {
  JobModel m;
  const torch::Device cuda(torch::kCUDA, static_cast<c10::DeviceIndex>(device.index));
  try {
    if (IsTorchScriptArchive(spec.model.weights)) {
      auto exported = TorchScriptModel::Load(spec.model.weights);
      if (!exported.ok()) return exported.status();
      m.exported = *std::move(exported);
      const ExportMetadata& meta = m.exported->metadata();
      if (spec.batch != 1) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--batch ", spec.batch, ": ", spec.model.weights, " (", meta.Label(),
            ") was traced at batch 1 and its metadata says dynamic: false; run it with --batch 1"));
      }
      m.label = meta.Label();
      m.weights_label = spec.model.weights;
      m.size = meta.size;
      m.height = meta.height;
      m.width = meta.width;
      std::vector<std::string> notes = {absl::StrCat(
          spec.model.weights, ": a ", meta.family->name, " TorchScript export (", m.label,
          "), run as the Python LibreYOLO's TorchScript backend runs it")};
      if (spec.imgsz != meta.height || spec.imgsz != meta.width) {
        notes.push_back(absl::StrCat("it runs at the ", meta.width, "x", meta.height,
                                     " it was traced at (imgsz ", spec.imgsz, " does not apply)"));
      }
      m.notice = absl::StrJoin(notes, "; ");
      if (device.cuda) m.exported->To(cuda);
      m.runner = std::make_unique<ExportInferModel>(m.exported.get());
      return m;
    }
    auto loaded = LoadModel(spec.model.weights, spec.model.size, 0);
    if (!loaded.ok()) return loaded.status();
    m.yolo9 = *std::move(loaded);
    m.yolo9->model->eval();
    if (device.cuda) m.yolo9->model->to(cuda);
    // A seeded random init is labelled with the size it was built at (`--size s` with the
    // default weights name is a LibreYOLO9s, not "LibreYOLO9t.pt").
    m.weights_label = m.yolo9->weights_label;
    m.label = m.weights_label == "random-init"
                  ? absl::StrCat("LibreYOLO9", spec.model.size, " (random init)")
                  : m.weights_label;
    m.size = spec.model.size;
    m.height = m.width = spec.imgsz;
    m.notice = m.yolo9->notice;
    m.runner = std::make_unique<Yolo9InferModel>(m.yolo9->model, spec.imgsz);
    return m;
  } catch (const c10::Error& e) {
    return absl::InternalError(
        absl::StrCat("LibTorch failed loading the model: ", e.what_without_backtrace()));
  }
}

}  // namespace

absl::StatusOr<JobResult> RunInferJob(const InferJobSpec& spec, const ProgressFn& progress,
                                      const CancelToken* cancel) {
  auto report = [&](const std::string& stage, int64_t done, int64_t total) {
    if (progress) progress(JobProgress{stage, done, total, ""});
  };
  auto cancelled = [&] { return cancel != nullptr && cancel->cancelled.load(); };
  auto device = ParseDevice(spec.model.device);
  if (!device.ok()) return device.status();
  if (auto valid = Validate(spec, device->cuda); !valid.ok()) return valid;
  const ThreadSettings threads = ConfigureThreads(spec.model.threads);
  auto source = ResolveInferenceSource(spec.source);
  if (!source.ok()) return source.status();
  // What LibTorch's caching allocator already held on the device when the job began (a
  // long-lived daemon keeps earlier jobs' blocks cached): the profile records it.
  std::optional<CudaAllocatorStats> at_start;
  if (device->cuda) {
    auto stats = ReadCudaAllocator(device->index);
    if (!stats.ok()) return stats.status();
    at_start = *stats;
  }

  report("loading model", 0, 1);
  auto loaded = LoadInferModel(spec, *device);
  if (!loaded.ok()) return loaded.status();
  if (progress && !loaded->notice.empty())
    progress(JobProgress{"loading model", 1, 1, loaded->notice});
  InferIteration iteration(spec, *source, loaded->runner.get(), *device);
  // Module scopes for the probes and the recorded window (nothing is recorded with --no-trace);
  // a TorchScript export's modules are one traced graph, which has none of ours.
  std::optional<ModuleScopes> module_scopes;
  if (spec.trace && spec.profiler.with_modules && loaded->yolo9) {
    module_scopes.emplace(*loaded->yolo9->model);
  }
  bool modules_recorded = false;  // the trace holds module scopes: the profile says so

  try {
    for (int64_t i = 0; i < spec.warmup; ++i) {
      if (cancelled()) return absl::CancelledError("cancelled during warmup");
      if (auto t = iteration.Run(i, false); !t.ok()) return t.status();
      report("warmup", i + 1, spec.warmup);
    }
    // The measured window runs without the profiler: these are the numbers users see. The
    // first half times whole iterations; the second half syncs per stage for the composition.
    // Each trial's measurements (repeat_trials.h): the headline is their mean.
    std::vector<TrialMeasurement> trials;
    std::optional<CudaEventTimer> timer;
    if (device->cuda) {
      auto created = CudaEventTimer::Create(device->index);
      if (!created.ok()) return created.status();
      timer.emplace(*std::move(created));
    }
    for (int64_t trial = 0; trial < spec.repeat; ++trial) {
      TrialMeasurement m;
      StageTimes stage_sum;
      int64_t stage_n = 0;
      for (int64_t i = 0; i < spec.runs; ++i) {
        if (cancelled()) return absl::CancelledError("cancelled while measuring");
        const bool per_stage = i >= spec.runs / 2;
        const auto t0 = Clock::now();
        if (timer) timer->Start();
        auto t = iteration.Run(spec.warmup + i, per_stage);
        if (!t.ok()) return t.status();
        if (timer) {
          auto gpu_ms = timer->StopMs();
          if (!gpu_ms.ok()) return gpu_ms.status();
          m.cuda_event_ms.push_back(*gpu_ms);
        }
        if (device->cuda) torch::cuda::synchronize(device->index);
        m.latency_samples_ms.push_back(Ms(Clock::now() - t0));
        if (per_stage || !device->cuda) {
          stage_sum.pre += t->pre;
          stage_sum.fwd += t->fwd;
          stage_sum.post += t->post;
          ++stage_n;
        }
        report("measuring", trial * spec.runs + i + 1, spec.repeat * spec.runs);
      }
      m.step_ms = ComputeLatencyStats(m.latency_samples_ms).mean_ms;
      const double k = stage_n > 0 ? 1.0 / static_cast<double>(stage_n) : 0.0;
      m.stages = Stages{stage_sum.pre * k, stage_sum.fwd * k, stage_sum.post * k};
      trials.push_back(std::move(m));
    }
    JobFiles files = JobFilesFor(spec.project, "infer", spec.output);
    if (auto made = CreateJobDir(files); !made.ok()) return made;
    Profile p;
    std::optional<AnalysedTrace> analysed_window;  // the recorded window, analysed (none with --no-trace)
    PostWindowTimes post_window;
    std::optional<CudaAllocatorStats> window_peaks;
    RecordedKinds recorded;  // what the trace holds (nothing with --no-trace)
    std::string gpu_collector = "none";
    std::string cpu_collector = "none";
    std::vector<std::string> collector_notes;
    auto profiler_options = [&](const ResolvedSwitches& sw) {
      return SessionOptions(sw, spec.profiler.collector, device->cuda && spec.profiler.cuda);
    };
    // The overhead budget and the profile's overhead_pct (overhead_budget.h): each probe round
    // times kProbePairs single-iteration windows under the profiler, each between two without
    // it (unprofiled, profiled, ..., unprofiled), whole iterations synced as the measured
    // window times them. One session a round, paused through the unprofiled windows and
    // resumed before a profiled window's clock starts (ProfilingSession::Pause), with the
    // job's collectors; its events are dropped when the round ends. With CUDA activity a
    // profiled window starts its own session.
    // The iterations the trace records (--profiled-runs, at most --runs); none without a trace.
    const int64_t recorded_runs =
        spec.trace ? std::max<int64_t>(1, std::min(spec.profiled_runs, spec.runs)) : 0;
    BudgetOutcome budget = SkipOverheadBudget(spec.profiler, "--no-trace: nothing is profiled");
    bool budget_cached = false;
    if (spec.trace) {
      int64_t probed = 0, round_end = 0;
      // `po` set: a profiled window, recorded by `round` (resumed for it) or by its own session.
      auto window = [&](std::vector<double>& ms, int64_t i, const TorchProfilerOptions* po,
                        ProfilingSession* round) -> absl::Status {
        if (cancelled()) return absl::CancelledError("cancelled while probing");
        std::unique_ptr<ProfilingSession> own;
        if (po != nullptr && round != nullptr) {
          if (auto s = round->Resume(); !s.ok()) return s;
        } else if (po != nullptr) {
          auto started = ProfilingSession::Start(*po);
          if (!started.ok()) return started.status();
          own = *std::move(started);
        }
        const auto t0 = Clock::now();
        {
          ScopedRange step(absl::StrCat("ProfilerStep#", i + 1));
          auto t = iteration.Run(spec.warmup + spec.runs + i, false);
          if (!t.ok()) return t.status();
          if (device->cuda) torch::cuda::synchronize(device->index);
        }
        ms.push_back(Ms(Clock::now() - t0));
        if (po != nullptr && round != nullptr) {
          if (auto s = round->Pause(); !s.ok()) return s;
        }
        report("probing", ++probed, round_end);
        return absl::OkStatus();  // `own` stops here, its events dropped
      };
      auto probe = [&](const ResolvedSwitches& sw) -> absl::StatusOr<ProbeTimings> {
        round_end = probed + kProbeRoundWindows;
        const TorchProfilerOptions po = profiler_options(sw);
        std::unique_ptr<ProfilingSession> round;  // stops (events dropped) as the round ends
        if (!po.cuda) {
          auto started = ProfilingSession::Start(po);
          if (!started.ok()) return started.status();
          round = *std::move(started);
          if (auto s = round->Pause(); !s.ok()) return s;
        }
        ProbeTimings t;
        for (int64_t i = 0; i < kProbePairs; ++i) {
          if (auto s = window(t.unprofiled_ms, 2 * i, nullptr, round.get()); !s.ok()) return s;
          if (auto s = window(t.profiled_ms, 2 * i + 1, &po, round.get()); !s.ok()) return s;
        }
        if (auto s = window(t.unprofiled_ms, 2 * kProbePairs, nullptr, round.get()); !s.ok()) {
          return s;
        }
        return t;
      };
      // Same job, same choice (budget_cache.h): an identical earlier job in this process decided.
      BudgetKey key;
      key.mode = "inference";
      key.weights = WeightsIdentity(spec.model.weights);
      key.size = loaded->size;
      key.imgsz = loaded->height;
      key.batch = spec.batch;
      key.device = device->Label();
      key.precision = spec.half ? absl::StrCat("autocast ", spec.amp_dtype) : "fp32";
      key.cuda_activity = device->cuda && spec.profiler.cuda;
      key.threads = spec.model.threads;
      key.requested = spec.profiler;
      // The probes' share: at most the job's own iterations (measured and recorded).
      const int64_t job_windows = spec.repeat * (spec.warmup + spec.runs) + recorded_runs;
      auto applied = ApplyOverheadBudgetCached(BudgetDecisionCache::Process(), key.Build(),
                                               spec.profiler, spec.profiler.overhead_budget_pct,
                                               probe, &budget_cached, ProbeRoundLimit(job_windows));
      if (!applied.ok()) return applied.status();
      budget = *std::move(applied);
      const int64_t n = recorded_runs;
      TraceExportOptions eo;
      eo.pid = static_cast<int64_t>(::getpid());
      if (device->cuda) {
        // The window's memory starts from what the allocator holds now; its peaks are the
        // window's own.
        if (auto reset = ResetCudaAllocatorPeaks(device->index); !reset.ok()) return reset;
        auto now = ReadCudaAllocator(device->index);
        if (!now.ok()) return now.status();
        eo.device_allocated_at_start = now->allocated;
        eo.device_reserved_at_start = now->reserved;
      }
      // n iterations as the profiler records them: one ProfilerStep#N range each, synced.
      auto profiled_iterations = [&](bool progress_events) -> absl::Status {
        for (int64_t i = 0; i < n; ++i) {
          if (cancelled()) return absl::CancelledError("cancelled while profiling");
          ScopedRange step(absl::StrCat("ProfilerStep#", i + 1));
          auto t = iteration.Run(spec.warmup + spec.runs + i, false);
          if (!t.ok()) return t.status();
          if (device->cuda) torch::cuda::synchronize(device->index);
          if (progress_events) report("profiling", i + 1, n);
        }
        return absl::OkStatus();
      };
      // The recorded window: the job's CPU collector, with CUPTI for GPU activity on CUDA.
      auto profiler = ProfilingSession::Start(profiler_options(budget.switches));
      if (!profiler.ok()) return profiler.status();
      if (auto s = profiled_iterations(true); !s.ok()) return s;
      auto collected = (*profiler)->Stop();
      if (!collected.ok()) return collected.status();
      recorded = RecordedKindsOf(collected->events);
      gpu_collector = (*profiler)->gpu_collector();
      cpu_collector = (*profiler)->cpu_collector();
      collector_notes = collected->notes;
      modules_recorded = HoldsModuleScopes(collected->events);
      if (device->cuda) {
        auto peaks = ReadCudaAllocator(device->index);
        if (!peaks.ok()) return peaks.status();
        window_peaks = *peaks;
      }
      if (!spec.kineto_trace_path.empty()) {
        // The cross-check: as many iterations again under LibTorch's profiler alone (CUDA
        // activity through Kineto's own CUPTI subscriber), saved by LibTorch itself.
        TorchProfilerOptions ko = profiler_options(budget.switches);
        ko.cuda = device->cuda;  // TorchProfiler: LibTorch's profiler whatever the job's collector
        ko.kineto_trace_path = spec.kineto_trace_path;
        auto kineto = TorchProfiler::Start(ko);
        if (!kineto.ok()) return kineto.status();
        if (auto s = profiled_iterations(false); !s.ok()) return s;
        if (auto saved = (*kineto)->Stop(); !saved.ok()) return saved.status();
      }
      report("analysing", 0, 1);
      auto analysed = WriteAndAnalyseTrace(*collected, files.trace, eo, spec.output, &post_window);
      if (!analysed.ok()) return analysed.status();
      analysed_window = *std::move(analysed);
      p = std::move(analysed_window->profile);
      p.trace = files.trace;
      if (window_peaks) {
        // The allocator's own peaks over the window: the [memory] events' running totals
        // reach the same values when profile_memory is on, and these exist when it is off.
        p.peak_vram_mb = static_cast<double>(window_peaks->peak_allocated) / 1e6;
        p.peak_reserved_mb = static_cast<double>(window_peaks->peak_reserved) / 1e6;
      }
    }

    // The headline numbers come from the unprofiled trials.
    p.mode = "inference";
    p.model = loaded->label;
    p.batch = spec.batch;
    JsonWriter config(/*pretty=*/false);
    config.BeginObject()
        .Field("model", p.model)
        .Field("size", loaded->size)
        .Field("weights", loaded->weights_label);
    if (loaded->exported) {
      const ExportMetadata& meta = loaded->exported->metadata();
      config.Field("format", "torchscript")
          .Field("model_family", std::string(meta.family->name))
          .Field("num_classes", meta.num_classes);
      if (!meta.libreyolo_version.empty()) config.Field("exported_by_libreyolo", meta.libreyolo_version);
    } else {
      config.Field("format", "checkpoint").Field("model_family", "yolo9");
    }
    config.Field("batch", spec.batch).Field("imgsz", loaded->height);
    if (loaded->height != loaded->width) {
      config.Field("imgsz_h", loaded->height).Field("imgsz_w", loaded->width);
    }
    config
        .Field("half", spec.half)
        .Field("amp_dtype", spec.amp_dtype)
        .Field("device", device->Label())
        .Field("conf", spec.conf)
        .Field("iou", spec.iou)
        .Field("max_det", spec.max_det)
        .Field("warmup", spec.warmup)
        .Field("runs", spec.runs)
        .Field("repeat", spec.repeat)
        .Field("mode", "inference");
    WriteThreadFields(config, threads);
    if (device->cuda) WriteCudaFields(config, device->index, at_start);
    config.Field("source", source->sample ? "sample" : files.Recorded(spec.source)).EndObject();
    p.config_json = Finish(config);
    JsonWriter prof(/*pretty=*/false);
    prof.BeginObject().Field("activities", device->cuda && spec.profiler.cuda ? "cpu,cuda" : "cpu");
    WriteSwitchFields(prof, budget, recorded, modules_recorded, spec.profiler.overhead_budget_pct);
    prof.Field("profiled_iterations", recorded_runs);
    WriteOverheadFields(prof, budget);
    if (spec.trace) WriteSwitchDecision(prof, budget_cached);
    prof.Field("cpu_collector", cpu_collector).Field("gpu_collector", gpu_collector);
    if (loaded->exported && spec.trace && spec.profiler.with_modules) {
      collector_notes.push_back(
          "module scopes n/a: a TorchScript export is one traced graph, without LibreYOLO9's "
          "modules (ops and kernels are recorded as usual)");
    }
    if (!collector_notes.empty()) {
      prof.Key("notes").BeginArray();
      for (const std::string& n : collector_notes) prof.String(n);
      prof.EndArray();
    }
    p.profiler_json = Finish(prof.EndObject());
    // Step, throughput, latency, stages and the residual host overhead: means over the trials
    // (the residual uses the same unprofiled step as the headline); GPU utilisation stays a
    // ratio within the profiled window.
    ApplyMeasuredTrials(p, spec.batch, trials);
    p.source_kind = "profile";
    p.tool_name = "libreyolo-profiler";
    p.tool_version = LIBREYOLO_VERSION;
    p.libtorch_version = LibTorchVersion();
    p.created_at = absl::FormatTime(absl::RFC3339_sec, absl::Now(), absl::UTCTimeZone());
    if (device->cuda) {
      auto props = CudaDeviceProperties(device->index);
      if (!props.ok()) return props.status();
      p.device = *props;
    }
    if (!p.device.has_value()) {
      DeviceInfo d;
      d.type = device->cuda ? "cuda" : "cpu";
      d.name = device->Label();
      p.device = d;
    }
    const Verdict v = ComputeVerdict(p);
    p.bound = v.bound;
    p.bound_why = v.why;
    // Last, over the final numbers: timings that cannot all be true are said so (load_shift.h).
    RecordLoadShift(&p);
    report("writing", 0, 1);
    JobResult result;
    result.post_window = post_window;
    if (auto w = WriteJobOutputs(p, files, spec.output, analysed_window ? &*analysed_window : nullptr,
                                 spec.repeat > 1, &result);
        !w.ok()) {
      return w;
    }
    report("writing", 1, 1);
    result.trace_path = spec.trace ? files.trace : "";
    result.profile = std::move(p);
    return result;
  } catch (const c10::Error& e) {
    return absl::InternalError(absl::StrCat("LibTorch failed: ", e.what_without_backtrace()));
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("inference failed: ", e.what()));
  }
}

}  // namespace libreyolo::engine
