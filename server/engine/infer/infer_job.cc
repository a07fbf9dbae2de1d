// `profile infer`, a kind of the job pipeline (job/pipeline.h): the inference path of
// LibreYOLO9 or of a TorchScript export, measured without the profiler, then a profiled window
// recorded to profile_trace.json and analysed by the common analyser.
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
#include "common/analysis/latency_stats.h"
#include "common/analysis/repeat_trials.h"
#include "common/json/json_writer.h"
#include "common/job/names.h"
#include "common/status/status_macros.h"
#include "server/engine/collect/module_scope_events.h"
#include "server/engine/collect/profiling_session.h"
#include "server/engine/collect/recorded_kinds.h"
#include "server/engine/collect/torch_profiler.h"
#include "server/engine/collect/trace_export.h"
#include "server/engine/data/batch.h"
#include "server/engine/data/inference_source.h"
#include "server/engine/data/transforms.h"
#include "server/engine/engine.h"
#include "server/engine/infer/postprocess.h"
#include "server/engine/infer/task_postprocess.h"
#include "server/engine/infer/torchscript_model.h"
#include "server/engine/job/job_files.h"
#include "server/engine/job/model_loader.h"
#include "server/engine/job/overhead_budget.h"
#include "server/engine/job/pipeline.h"
#include "server/engine/model/module_scope.h"
#include "server/engine/runtime/cuda_runtime.h"
#include "server/engine/runtime/runtime_info.h"

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
  // Why the engine does not decode this model's outputs (the postprocess stage is not run and
  // its time is null); empty: it does.
  virtual std::string NoPostprocess() const { return ""; }
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
    if (model_->metadata().task != "detect") {  // task_postprocess.h: top-k, mask, depth map
      ASSIGN_OR_RETURN(auto decoded,
                       TaskPostprocess(model_->metadata(), output, geometry_, o, kTopK));
      int64_t n = 0;
      for (const TaskOutput& d : decoded) n += d.count;
      return n;
    }
    ASSIGN_OR_RETURN(auto dets, model_->Postprocess(output, o, geometry_));
    int64_t n = 0;
    for (const Detections& d : dets) n += d.scores.size(0);
    return n;
  }
  std::string NoPostprocess() const override {
    return model_->metadata().task_settings.no_postprocess;
  }

 private:
  static constexpr int64_t kTopK = 5;  // classification: the backend's Probs.top5
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
        ASSIGN_OR_RETURN(auto image, LoadInferenceImage(source_, index, spec_.max_decoded_pixels));
        images.push_back(std::move(image));
      }
      ASSIGN_OR_RETURN(auto prepared, model_->Prepare(images, /*pin=*/device_.cuda));
      input =
          device_.cuda
              ? prepared.to(
                    torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(device_.index)), true)
              : prepared;
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
    if (!model_->NoPostprocess().empty()) {  // not decoded: no stage, its time null
      t.pre = Ms(t1 - t0);
      t.fwd = Ms(t2 - t1);
      return t;
    }
    {
      ScopedRange r("step/postprocess");
      torch::InferenceMode guard;
      PostprocessOptions po;
      po.conf = spec_.conf;
      po.iou = spec_.iou;
      po.max_det = spec_.max_det;
      ASSIGN_OR_RETURN(auto n, model_->Decode(predictions, po));
      detections_ = n;
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

// `--postprocess none`: the model's preparation and forward, no decode (NoPostprocess says why,
// so the iteration stops after the forward and the stage's time is null).
class ForwardOnlyModel final : public InferModel {
 public:
  static constexpr char kReason[] =
      "--postprocess none: the forward only, nothing decoded (no detections)";
  explicit ForwardOnlyModel(std::unique_ptr<InferModel> inner) : inner_(std::move(inner)) {}
  absl::StatusOr<torch::Tensor> Prepare(const std::vector<cv::Mat>& images, bool pin) override {
    return inner_->Prepare(images, pin);
  }
  torch::IValue Forward(const torch::Tensor& input) override { return inner_->Forward(input); }
  absl::StatusOr<int64_t> Decode(const torch::IValue&, const PostprocessOptions&) override {
    return absl::InternalError("--postprocess none: nothing is decoded");
  }
  // A model that has no decode of its own keeps its reason.
  std::string NoPostprocess() const override {
    std::string own = inner_->NoPostprocess();
    return own.empty() ? std::string(kReason) : own;
  }
  bool OwnReason() const { return !inner_->NoPostprocess().empty(); }

 private:
  std::unique_ptr<InferModel> inner_;
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
      ASSIGN_OR_RETURN(auto exported, TorchScriptModel::Load(spec.model.weights));
      m.exported = std::move(exported);
      const ExportMetadata& meta = m.exported->metadata();
      m.label = meta.task == "detect" ? meta.Label() : TaskLabel(meta);
      m.weights_label = spec.model.weights;
      m.size = meta.size;
      m.height = meta.height;
      m.width = meta.width;
      std::vector<std::string> notes = {absl::StrCat(
          spec.model.weights, ": a ", meta.family_name, " TorchScript export (", m.label,
          "), run as the Python LibreYOLO's TorchScript backend runs it")};
      if (spec.imgsz != meta.height || spec.imgsz != meta.width) {
        notes.push_back(absl::StrCat("it runs at the ", meta.width, "x", meta.height,
                                     " it was traced at (imgsz ", spec.imgsz, " does not apply)"));
      }
      m.notice = absl::StrJoin(notes, "; ");
      if (device.cuda) m.exported->To(cuda);
      // After the move: a large batch of a big export probes on the device that runs it.
      RETURN_IF_ERROR(m.exported->CheckBatch(spec.batch));
      m.runner = std::make_unique<ExportInferModel>(m.exported.get());
      return m;
    }
    ASSIGN_OR_RETURN(auto loaded, LoadModel(spec.model.weights, spec.model.size, 0,
                                            spec.model.weights_searched));
    m.yolo9 = std::move(loaded);
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

// `profile infer` as the pipeline's stages (job/pipeline.h).
class InferKind final : public JobKindOf<InferJobSpec> {
 public:
  explicit InferKind(const InferJobSpec& spec) : JobKindOf(spec) {}

  const char* what() const override { return "inference"; }

  absl::Status Prepare(const StageContext& ctx) override {
    RETURN_IF_ERROR(ParseJobDevice());
    if (spec_.postprocess != "auto" && spec_.postprocess != "none") {
      return absl::InvalidArgumentError(absl::StrCat(
          "--postprocess: '", spec_.postprocess, "' is not auto or none"));
    }
    threads_ = ConfigureThreads(spec_.model.threads);
    ASSIGN_OR_RETURN(auto source, ResolveInferenceSource(spec_.source));
    source_ = std::move(source);
    // What LibTorch's caching allocator already held on the device when the job began (a
    // long-lived daemon keeps earlier jobs' blocks cached): the profile records it.
    if (device_.cuda) {
      ASSIGN_OR_RETURN(auto stats, ReadCudaAllocator(device_.index));
      at_start_ = stats;
    }
    ctx.Report("loading model", 0, 1);
    ASSIGN_OR_RETURN(auto loaded, LoadInferModel(spec_, device_));
    model_ = std::move(loaded);
    if (spec_.postprocess == "none") {
      auto forward_only = std::make_unique<ForwardOnlyModel>(std::move(model_->runner));
      forward_only_ = forward_only.get();
      model_->runner = std::move(forward_only);
    }
    if (!model_->notice.empty()) ctx.Report("loading model", 1, 1, model_->notice);
    iteration_.emplace(spec_, *source_, model_->runner.get(), device_);
    // Module scopes for the probes and the recorded window (nothing is recorded with
    // --no-trace); a TorchScript export's modules are one traced graph, which has none of ours.
    if (spec_.trace && spec_.profiler.with_modules && model_->yolo9) {
      module_scopes_.emplace(*model_->yolo9->model);
    }
    // The iterations the trace records (--profiled-runs, at most --runs); none without a trace.
    recorded_runs_ = spec_.trace ? std::max<int64_t>(1, std::min(spec_.profiled_runs, spec_.runs))
                                 : 0;
    return absl::OkStatus();
  }

  absl::Status Warmup(const StageContext& ctx) override {
    for (int64_t i = 0; i < spec_.warmup; ++i) {
      if (ctx.Cancelled()) return absl::CancelledError("cancelled during warmup");
      RETURN_IF_ERROR(iteration_->Run(i, false).status());
      ctx.Report("warmup", i + 1, spec_.warmup);
    }
    return absl::OkStatus();
  }

  // The measured window runs without the profiler: these are the numbers users see. The first
  // half times whole iterations; the second half syncs per stage for the composition. Each
  // trial's measurements (repeat_trials.h): the headline is their mean.
  absl::Status Measure(const StageContext& ctx) override {
    std::optional<CudaEventTimer> timer;
    if (device_.cuda) {
      ASSIGN_OR_RETURN(auto created, CudaEventTimer::Create(device_.index));
      timer.emplace(std::move(created));
    }
    for (int64_t trial = 0; trial < spec_.repeat; ++trial) {
      TrialMeasurement m;
      StageTimes stage_sum;
      int64_t stage_n = 0;
      for (int64_t i = 0; i < spec_.runs; ++i) {
        if (ctx.Cancelled()) return absl::CancelledError("cancelled while measuring");
        const bool per_stage = i >= spec_.runs / 2;
        const auto t0 = Clock::now();
        if (timer) timer->Start();
        ASSIGN_OR_RETURN(auto t, iteration_->Run(spec_.warmup + i, per_stage));
        if (timer) {
          ASSIGN_OR_RETURN(auto gpu_ms, timer->StopMs());
          m.cuda_event_ms.push_back(gpu_ms);
        }
        if (device_.cuda) torch::cuda::synchronize(device_.index);
        m.latency_samples_ms.push_back(Ms(Clock::now() - t0));
        if (per_stage || !device_.cuda) {
          stage_sum.pre += t.pre;
          stage_sum.fwd += t.fwd;
          stage_sum.post += t.post;
          ++stage_n;
        }
        ctx.Report("measuring", trial * spec_.runs + i + 1, spec_.repeat * spec_.runs);
      }
      m.step_ms = ComputeLatencyStats(m.latency_samples_ms).mean_ms;
      const double k = stage_n > 0 ? 1.0 / static_cast<double>(stage_n) : 0.0;
      m.stages = Stages{stage_sum.pre * k, stage_sum.fwd * k, stage_sum.post * k};
      if (!model_->runner->NoPostprocess().empty()) m.stages->postprocess.reset();
      trials_.push_back(std::move(m));
    }
    files_ = JobFilesFor(spec_.project, kInferOutputFolder, spec_.output, -1, spec_.repeat);
    return CreateJobDir(files_);
  }

  // The overhead budget's probe (overhead_budget.h): each round times kProbePairs
  // single-iteration windows under the profiler, each between two without it (unprofiled,
  // profiled, ..., unprofiled), whole iterations synced as the measured window times them. One
  // session a round, paused through the unprofiled windows and resumed before a profiled
  // window's clock starts (ProfilingSession::Pause), with the job's collectors; its events are
  // dropped when the round ends. With CUDA activity a profiled window starts its own session.
  SwitchQuestion AskSwitches(const StageContext& ctx) override {
    SwitchQuestion q;
    if (!spec_.trace) {
      q.skip_reason = "--no-trace: nothing is profiled";
      return q;
    }
    q.probe = [this, &ctx](const ResolvedSwitches& sw) { return ProbeRound(ctx, sw); };
    // The probes' share: at most the job's own iterations (measured and recorded).
    q.job_windows = spec_.repeat * (spec_.warmup + spec_.runs) + recorded_runs_;
    return q;
  }

  // The recorded window: the job's CPU collector, with CUPTI for GPU activity on CUDA; with
  // --kineto-trace, as many iterations again under LibTorch's profiler alone.
  absl::Status Record(const StageContext& ctx, const SwitchDecision& decision) override {
    if (!spec_.trace) return absl::OkStatus();
    export_options_.pid = static_cast<int64_t>(::getpid());
    if (device_.cuda) {
      // The window's memory starts from what the allocator holds now; its peaks are the
      // window's own.
      RETURN_IF_ERROR(ResetCudaAllocatorPeaks(device_.index));
      ASSIGN_OR_RETURN(auto now, ReadCudaAllocator(device_.index));
      export_options_.device_allocated_at_start = now.allocated;
      export_options_.device_reserved_at_start = now.reserved;
    }
    ASSIGN_OR_RETURN(auto profiler, ProfilingSession::Start(Options(decision.budget.switches)));
    RETURN_IF_ERROR(ProfiledIterations(ctx, true));
    ASSIGN_OR_RETURN(auto collected, profiler->Stop());
    collected_ = std::move(collected);
    recorded_ = RecordedKindsOf(collected_->events);
    gpu_collector_ = profiler->gpu_collector();
    cpu_collector_ = profiler->cpu_collector();
    collector_notes_ = collected_->notes;
    modules_recorded_ = HoldsModuleScopes(collected_->events);
    if (device_.cuda) {
      ASSIGN_OR_RETURN(auto peaks, ReadCudaAllocator(device_.index));
      window_peaks_ = peaks;
    }
    if (!spec_.kineto_trace_path.empty()) {
      // The cross-check: CUDA activity through Kineto's own CUPTI subscriber, saved by
      // LibTorch itself.
      TorchProfilerOptions ko = Options(decision.budget.switches);
      ko.cuda = device_.cuda;  // TorchProfiler: LibTorch's profiler whatever the job's collector
      ko.kineto_trace_path = spec_.kineto_trace_path;
      ASSIGN_OR_RETURN(auto kineto, TorchProfiler::Start(ko));
      RETURN_IF_ERROR(ProfiledIterations(ctx, false));
      RETURN_IF_ERROR(kineto->Stop().status());
    }
    return absl::OkStatus();
  }

  absl::StatusOr<Profile> Analyse(const StageContext& ctx) override {
    if (!collected_) return Profile{};
    ctx.Report("analysing", 0, 1);
    ASSIGN_OR_RETURN(auto analysed, WriteAndAnalyseTrace(*collected_, files_.trace, export_options_,
                                                         spec_.output, &post_window_));
    collected_.reset();
    analysed_ = std::move(analysed);
    Profile p = std::move(analysed_->profile);
    p.trace = files_.trace;
    if (window_peaks_) {
      // The allocator's own peaks over the window: the [memory] events' running totals reach
      // the same values when profile_memory is on, and these exist when it is off.
      p.peak_vram_mb = static_cast<double>(window_peaks_->peak_allocated) / 1e6;
      p.peak_reserved_mb = static_cast<double>(window_peaks_->peak_reserved) / 1e6;
    }
    return p;
  }

  // The headline numbers come from the unprofiled trials.
  absl::Status Apply(const StageContext&, const SwitchDecision& decision, Profile* p) override {
    p->mode = "inference";
    p->model = model_->label;
    p->batch = spec_.batch;
    p->config_json = ConfigJson();
    p->profiler_json = ProfilerJson(decision);
    // Step, throughput, latency, stages and the residual host overhead: means over the trials
    // (the residual uses the same unprofiled step as the headline); GPU utilisation stays a
    // ratio within the profiled window.
    ApplyMeasuredTrials(*p, spec_.batch, trials_);
    return absl::OkStatus();
  }

  JobOutputs Outputs() const override {
    JobOutputs out;
    out.files = &files_;
    out.window = analysed_ ? &*analysed_ : nullptr;
    out.repeat = spec_.repeat > 1;
    out.trials = &trials_;
    out.trial_batch = spec_.batch;
    out.trace_path = spec_.trace ? files_.trace : "";
    out.post_window = post_window_;
    return out;
  }

 private:
  TorchProfilerOptions Options(const ResolvedSwitches& sw) const {
    return SessionOptions(sw, spec_.profiler.collector, device_.cuda && spec_.profiler.cuda);
  }

  // One window of the probe: one iteration, `po` set for a profiled one (recorded by `round`,
  // resumed for it, or by its own session).
  absl::Status ProbeWindow(const StageContext& ctx, std::vector<double>& ms, int64_t i,
                           const TorchProfilerOptions* po, ProfilingSession* round) {
    if (ctx.Cancelled()) return absl::CancelledError("cancelled while probing");
    std::unique_ptr<ProfilingSession> own;
    if (po != nullptr && round != nullptr) {
      RETURN_IF_ERROR(round->Resume());
    } else if (po != nullptr) {
      ASSIGN_OR_RETURN(auto started, ProfilingSession::Start(*po));
      own = std::move(started);
    }
    const auto t0 = Clock::now();
    {
      ScopedRange step(absl::StrCat("ProfilerStep#", i + 1));
      RETURN_IF_ERROR(iteration_->Run(spec_.warmup + spec_.runs + i, false).status());
      if (device_.cuda) torch::cuda::synchronize(device_.index);
    }
    ms.push_back(Ms(Clock::now() - t0));
    if (po != nullptr && round != nullptr) {
      RETURN_IF_ERROR(round->Pause());
    }
    ctx.Report("probing", ++probed_, round_end_);
    return absl::OkStatus();  // `own` stops here, its events dropped
  }

  absl::StatusOr<ProbeTimings> ProbeRound(const StageContext& ctx, const ResolvedSwitches& sw) {
    round_end_ = probed_ + kProbeRoundWindows;
    const TorchProfilerOptions po = Options(sw);
    std::unique_ptr<ProfilingSession> round;  // stops (events dropped) as the round ends
    if (!po.cuda) {
      ASSIGN_OR_RETURN(auto started, ProfilingSession::Start(po));
      round = std::move(started);
      RETURN_IF_ERROR(round->Pause());
    }
    ProbeTimings t;
    for (int64_t i = 0; i < kProbePairs; ++i) {
      RETURN_IF_ERROR(ProbeWindow(ctx, t.unprofiled_ms, 2 * i, nullptr, round.get()));
      RETURN_IF_ERROR(ProbeWindow(ctx, t.profiled_ms, 2 * i + 1, &po, round.get()));
    }
    RETURN_IF_ERROR(ProbeWindow(ctx, t.unprofiled_ms, 2 * kProbePairs, nullptr, round.get()));
    return t;
  }

  // The recorded iterations as the profiler records them: one ProfilerStep#N range each, synced.
  absl::Status ProfiledIterations(const StageContext& ctx, bool progress_events) {
    for (int64_t i = 0; i < recorded_runs_; ++i) {
      if (ctx.Cancelled()) return absl::CancelledError("cancelled while profiling");
      ScopedRange step(absl::StrCat("ProfilerStep#", i + 1));
      RETURN_IF_ERROR(iteration_->Run(spec_.warmup + spec_.runs + i, false).status());
      if (device_.cuda) torch::cuda::synchronize(device_.index);
      if (progress_events) ctx.Report("profiling", i + 1, recorded_runs_);
    }
    return absl::OkStatus();
  }

  std::string ConfigJson() const {
    JsonWriter config(/*pretty=*/false);
    config.BeginObject()
        .Field("model", model_->label)
        .Field("size", model_->size)
        .Field("weights", model_->weights_label);
    if (model_->yolo9 && !model_->yolo9->weights_searched.empty()) {
      config.Key("weights_searched").BeginArray();
      for (const std::string& place : model_->yolo9->weights_searched) config.String(place);
      config.EndArray();
    }
    if (model_->exported) {
      const ExportMetadata& meta = model_->exported->metadata();
      config.Field("format", "torchscript")
          .Field("model_family", std::string(meta.family_name))
          .Field("num_classes", meta.num_classes)
          .Field("export_precision", model_->exported->FloatType())
          .Field("task", meta.task);
      if (!meta.task_settings.no_postprocess.empty()) {
        config.Field("postprocess_skipped", meta.task_settings.no_postprocess);
      }
      if (!meta.libreyolo_version.empty()) {
        config.Field("exported_by_libreyolo", meta.libreyolo_version);
      }
    } else {
      config.Field("format", "checkpoint").Field("model_family", "yolo9");
    }
    config.Field("batch", spec_.batch).Field("imgsz", model_->height);
    if (model_->height != model_->width) {
      config.Field("imgsz_h", model_->height).Field("imgsz_w", model_->width);
    }
    config.Field("half", spec_.half)
        .Field("amp_dtype", spec_.amp_dtype)
        .Field("device", device_.Label())
        .Field("conf", spec_.conf)
        .Field("iou", spec_.iou)
        .Field("max_det", spec_.max_det)
        .Field("postprocess", spec_.postprocess);
    if (forward_only_ != nullptr && !forward_only_->OwnReason()) {
      config.Field("postprocess_skipped", ForwardOnlyModel::kReason);
    }
    config.Field("warmup", spec_.warmup)
        .Field("runs", spec_.runs)
        .Field("repeat", spec_.repeat)
        .Field("mode", "inference");
    WriteThreadFields(config, threads_);
    if (device_.cuda) WriteCudaFields(config, device_.index, at_start_);
    config.Field("source", source_->sample ? "sample" : files_.Recorded(spec_.source)).EndObject();
    return Finish(config);
  }

  std::string ProfilerJson(const SwitchDecision& decision) const {
    JsonWriter prof(/*pretty=*/false);
    prof.BeginObject().Field("activities",
                             device_.cuda && spec_.profiler.cuda ? "cpu,cuda" : "cpu");
    WriteSwitchFields(prof, decision.budget, recorded_, modules_recorded_,
                      spec_.profiler.overhead_budget_pct);
    prof.Field("profiled_iterations", recorded_runs_);
    WriteOverheadFields(prof, decision.budget);
    WriteDecisionFields(prof, decision, spec_.profiler);
    prof.Field("cpu_collector", cpu_collector_).Field("gpu_collector", gpu_collector_);
    std::vector<std::string> notes = collector_notes_;
    if (model_->exported && spec_.trace && spec_.profiler.with_modules) {
      notes.push_back(
          "module scopes n/a: a TorchScript export is one traced graph, without LibreYOLO9's "
          "modules (ops and kernels are recorded as usual)");
    }
    if (!notes.empty()) {
      prof.Key("notes").BeginArray();
      for (const std::string& n : notes) prof.String(n);
      prof.EndArray();
    }
    return Finish(prof.EndObject());
  }

  // prepare
  ThreadSettings threads_;
  std::optional<InferenceSource> source_;
  std::optional<CudaAllocatorStats> at_start_;
  std::optional<JobModel> model_;
  ForwardOnlyModel* forward_only_ = nullptr;  // model_'s runner with --postprocess none
  std::optional<InferIteration> iteration_;
  std::optional<ModuleScopes> module_scopes_;
  int64_t recorded_runs_ = 0;
  // measure
  std::vector<TrialMeasurement> trials_;
  JobFiles files_;
  // decide (the probe's progress)
  int64_t probed_ = 0, round_end_ = 0;
  // record
  std::optional<CollectedTrace> collected_;
  TraceExportOptions export_options_;
  RecordedKinds recorded_;  // what the trace holds (nothing with --no-trace)
  std::string gpu_collector_ = "none";
  std::string cpu_collector_ = "none";
  std::vector<std::string> collector_notes_;
  bool modules_recorded_ = false;  // the trace holds module scopes: the profile says so
  std::optional<CudaAllocatorStats> window_peaks_;
  // analyse
  std::optional<AnalysedTrace> analysed_;
  PostWindowTimes post_window_;
};

}  // namespace

absl::StatusOr<JobResult> RunInferJob(const InferJobSpec& spec, const ProgressFn& progress,
                                      const CancelToken* cancel) {
  InferKind kind(spec);
  return RunJobPipeline(kind, progress, cancel);
}

}  // namespace libreyolo::engine
