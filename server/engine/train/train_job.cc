// `profile run`, a kind of the job pipeline (job/pipeline.h): a short LibreYOLO9 training run
// measured without the profiler, then recorded under torch.profiler's schedule and analysed by
// the common analyser.
#include <torch/cuda.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/analysis/latency_stats.h"
#include "common/analysis/repeat_trials.h"
#include "common/job/names.h"
#include "common/status/status_macros.h"
#include "server/engine/checkpoint/checkpoint.h"
#include "server/engine/collect/profiling_session.h"
#include "server/engine/data/dataset.h"
#include "server/engine/data/dataset_spec.h"
#include "server/engine/data/image_io.h"
#include "server/engine/data/loader.h"
#include "server/engine/engine.h"
#include "server/engine/job/job_files.h"
#include "server/engine/job/model_loader.h"
#include "server/engine/job/overhead_budget.h"
#include "server/engine/job/pipeline.h"
#include "server/engine/model/module_scope.h"
#include "server/engine/model/yolo9.h"
#include "server/engine/runtime/runtime_info.h"
#include "server/engine/train/auto_batch.h"
#include "server/engine/train/data_parallel.h"
#include "server/engine/train/profiled_window.h"
#include "server/engine/train/train_config.h"
#include "server/engine/train/trainer.h"

namespace libreyolo::engine {
namespace {

using Clock = std::chrono::steady_clock;

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

// The PGI auxiliary branch's fresh init, where the checkpoint does not hold it. The Python tool
// draws it from whatever its global generator holds when train() attaches it; a fixed seed here
// keeps ours the same from run to run.
constexpr uint64_t kAuxInitSeed = 0;

// The images one rank reads per epoch: the whole dataset, or a data-parallel rank's shard.
int64_t ImagesPerRank(const TrainJobSpec& s, const DetectionDataset& data) {
  return DataLoader::ShardSize(data.size(), s.data_parallel.world_size);
}

// Exit 3: the one dataset that cannot fill the window, an empty one (any image fills it, across
// epochs as the Python tool's does: LoaderBatchSource). Only ways out that work are offered.
absl::Status EmptyDataset(const TrainJobSpec& s, const DetectionDataset& data) {
  return absl::OutOfRangeError(absl::StrFormat(
      "no profile: the measured window (--warmup %d + --steps %d = %d steps) never fills without "
      "images: %s. No --batch, --steps or --warmup changes that: put images (%s) there (their "
      "YOLO labels in the matching labels/ folder), point the YAML's train: at a folder or .txt "
      "list that holds some, or profile generated images: libreyolo profile run synthetic",
      s.warmup, s.steps, s.warmup + s.steps, data.Describe(), ImageExtensionList()));
}

// Why a step trains on fewer images than the batch: the dataset (a rank's shard) is smaller.
std::string PartialBatchNote(const TrainJobSpec& s, int64_t images, int64_t batch) {
  const int64_t ranks = s.data_parallel.world_size;
  return absl::StrFormat(
      "%d images%s, fewer than the batch of %d: each step trains on all %d, one batch an epoch, "
      "as the Python LibreYOLO's loader does (it drops an epoch's partial batch only when the "
      "epoch holds a full one); img/s counts the %d (the Python tool counts %d)",
      images, ranks > 1 ? absl::StrFormat(" per rank (%d ranks)", ranks) : "", batch, images,
      images, batch);
}

struct MeasuredWindows {
  std::vector<TrialMeasurement> trials;  // each trial's unsynchronised steps
  double step_ms = 0;      // unsynchronised steps, over every trial
  double dataload_ms = 0;  // the loader's share of those steps
  PhaseTimes phases;       // synchronised steps: the composition
  double synced_step_ms = 0;
  double loss_first = 0, loss_last = 0;
};

// `profile run` as the pipeline's stages (job/pipeline.h).
class TrainKind final : public JobKindOf<TrainJobSpec> {
 public:
  explicit TrainKind(const TrainJobSpec& spec) : JobKindOf(spec) {}

  const char* what() const override { return "training"; }
  std::string context() const override {
    const DataParallelSpec& d = spec_.data_parallel;
    return d.distributed() ? absl::StrCat("rank ", d.rank, " of ", d.world_size, ": ") : "";
  }

  absl::Status Prepare(const StageContext& ctx) override {
    RETURN_IF_ERROR(ParseJobDevice());
    if (!std::isfinite(spec_.aux_weight) || spec_.aux_weight < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "aux_weight must be a finite number >= 0, got ", spec_.aux_weight,
          ": the PGI auxiliary branch's loss weight (", job_defaults::kAuxWeight,
          " as the Python LibreYOLO trains LibreYOLO9; 0 trains the main head only)"));
    }
    ASSIGN_OR_RETURN(auto dataset_spec, ResolveDataset(spec_.data));
    ASSIGN_OR_RETURN(auto dataset, OpenDataset(dataset_spec, Split::kTrain, /*allow_empty=*/true,
                                               spec_.max_decoded_pixels));
    dataset_ = std::move(dataset);
    window_ = spec_.warmup + spec_.steps;
    // Fail before loading anything when no image can fill the window.
    const int64_t images = ImagesPerRank(spec_, *dataset_);
    if (images < 1) return EmptyDataset(spec_, *dataset_);
    threads_ = ConfigureThreads(spec_.model.threads);
    amp_ = spec_.amp && device_.cuda;
    if (device_.cuda) {
      ASSIGN_OR_RETURN(auto stats, ReadCudaAllocator(device_.index));
      at_start_ = stats;
    }
    ctx.Report("loading model", 0, 1);
    ASSIGN_OR_RETURN(auto loaded, LoadModel(spec_.model.weights, spec_.model.size,
                                            dataset_->num_classes(), spec_.model.weights_searched));
    loaded_ = std::move(loaded);
    if (!loaded_->notice.empty()) ctx.Report("loading model", 1, 1, loaded_->notice);
    // Before the device, the module scopes, the optimizer, the EMA and data-parallel: they all
    // see the branch's parameters, as Python attaches it before trainer.setup().
    RETURN_IF_ERROR(AttachAuxBranch());
    if (device_.cuda) loaded_->model->to(CudaDevice(device_));
    loaded_->model->train();
    // Module scopes for the probes and the recorded steps (the measured windows record none).
    if (spec_.profiler.with_modules) module_scopes_.emplace(*loaded_->model);

    batch_ = spec_.batch;
    if (batch_ == -1) {
      ctx.Report("auto-batch", 0, 1);
      const AutoBatch a = PickAutoBatch(loaded_->model, device_, amp_, spec_.imgsz);
      batch_ = a.batch;
      batch_rule_ = a.rule;
    }
    images_per_step_ = std::min(batch_, images);
    if (images_per_step_ < batch_) batch_note_ = PartialBatchNote(spec_, images, batch_);
    if (!batch_rule_.empty()) {
      if (!batch_note_.empty()) absl::StrAppend(&batch_rule_, "; ", batch_note_);
      ctx.Report("auto-batch", 1, 1, batch_rule_);
    }
    LoaderOptions lo;
    lo.batch_size = static_cast<int>(batch_);
    lo.image_size = static_cast<int>(spec_.imgsz);
    lo.workers = static_cast<int>(spec_.workers);
    lo.pin_memory = device_.cuda;
    lo.replicas = spec_.data_parallel.world_size;
    lo.rank = spec_.data_parallel.rank;
    ASSIGN_OR_RETURN(auto loader, DataLoader::Create(dataset_, lo));
    loader_ = std::move(loader);
    source_.emplace(loader_.get());
    if (spec_.data_parallel.distributed()) {
      ctx.Report("rendezvous", 0, spec_.data_parallel.world_size,
                 absl::StrCat("rank ", spec_.data_parallel.rank, " of ",
                              spec_.data_parallel.world_size, " at ",
                              spec_.data_parallel.master_addr, ":",
                              spec_.data_parallel.master_port));
      ASSIGN_OR_RETURN(auto joined,
                       DataParallel::Join(spec_.data_parallel, device_, *loaded_->model));
      data_parallel_ = std::move(joined);
      ctx.Report("rendezvous", spec_.data_parallel.world_size, spec_.data_parallel.world_size);
    }
    TrainerOptions to;
    to.device = device_;
    to.amp = amp_;
    to.imgsz = spec_.imgsz;
    to.dataload_delay_ms = spec_.inject_dataload_delay_ms;
    trainer_.emplace(loaded_->model, to);
    trainer_->set_data_parallel(data_parallel_.get());
    return absl::OkStatus();
  }

  // Each measured trial warms up its own steps (Measure): a trial is warmup + steps from one
  // epoch where an epoch holds them, else from an epoch's start on across epochs, as the
  // profiler's cycles are (LoaderBatchSource::Reserve).
  absl::Status Warmup(const StageContext&) override { return absl::OkStatus(); }

  // The measured windows run without the profiler: these are the numbers users see. On CUDA
  // the first half (at least one step) is timed whole, the rest per phase.
  absl::Status Measure(const StageContext& ctx) override {
    double unsynced_ms = 0, unsynced_dataload = 0, synced_ms = 0;
    int64_t unsynced_n = 0, synced_n = 0;
    torch::Tensor first_loss;
    const int64_t timed = device_.cuda ? spec_.steps - spec_.steps / 2 : spec_.steps;
    for (int64_t trial = 0; trial < spec_.repeat; ++trial) {
      RETURN_IF_ERROR(source_->Reserve(window_));
      for (int64_t i = 0; i < spec_.warmup; ++i) {
        if (ctx.Cancelled()) return absl::CancelledError("cancelled during warmup");
        ASSIGN_OR_RETURN(auto t, trainer_->Step(*source_, false));
        LogStep("warmup", trial, t, !device_.cuda);
        ctx.Report("warmup", trial * spec_.warmup + i + 1, spec_.repeat * spec_.warmup);
      }
      double trial_ms = 0, trial_dataload = 0;
      const auto t0 = Clock::now();
      for (int64_t i = 0; i < spec_.steps; ++i) {
        if (ctx.Cancelled()) return absl::CancelledError("cancelled while measuring");
        const bool per_phase = device_.cuda && i >= timed;
        if (i == timed && device_.cuda) {
          torch::cuda::synchronize(device_.index);
          trial_ms = Ms(Clock::now() - t0);
        }
        ASSIGN_OR_RETURN(auto t, trainer_->Step(*source_, per_phase));
        // Kept on the device and read after the window: .item() would sync mid-window.
        if (trial == 0 && i == 0) first_loss = trainer_->last_loss();
        LogStep("measuring", trial, t, per_phase || !device_.cuda);
        if (i < timed) trial_dataload += t.dataload;
        if (per_phase || !device_.cuda) {
          m_.phases += t;
          synced_ms += t.total();
          ++synced_n;
        }
        ctx.Report("measuring", trial * spec_.steps + i + 1, spec_.repeat * spec_.steps);
      }
      if (!device_.cuda || timed == spec_.steps) {
        if (device_.cuda) torch::cuda::synchronize(device_.index);
        trial_ms = Ms(Clock::now() - t0);
      }
      unsynced_ms += trial_ms;
      unsynced_dataload += trial_dataload;
      unsynced_n += timed;
      TrialMeasurement tm;
      tm.step_ms = trial_ms / static_cast<double>(timed);
      tm.dataload_ms = trial_dataload / static_cast<double>(timed);
      m_.trials.push_back(tm);
    }
    m_.loss_first = first_loss.item<double>();
    m_.loss_last = trainer_->last_loss().item<double>();
    m_.step_ms = unsynced_ms / static_cast<double>(unsynced_n);
    m_.dataload_ms = unsynced_dataload / static_cast<double>(unsynced_n);
    m_.phases = m_.phases.Scaled(synced_n > 0 ? 1.0 / static_cast<double>(synced_n) : 0.0);
    m_.synced_step_ms = synced_n > 0 ? synced_ms / static_cast<double>(synced_n) : m_.step_ms;

    files_ = JobFilesFor(spec_.project, kRunOutputFolder, spec_.output,
                         data_parallel_ != nullptr ? data_parallel_->facts().rank : -1,
                         spec_.repeat);
    RETURN_IF_ERROR(CreateJobDir(files_));
    // Written before the profiled window: a job that fails later still leaves its steps.
    return WriteFileAtomically(files_.metrics, step_log_.ToJsonLines());
  }

  // The overhead budget's probe (overhead_budget.h): each round times kProbePairs single-step
  // windows under the profiler, each between two without it, synced as recorded steps are. A
  // window takes its step from one epoch, so any dataset can be probed.
  SwitchQuestion AskSwitches(const StageContext& ctx) override {
    SwitchQuestion q;
    if (data_parallel_ != nullptr) {
      // Every rank must take the same steps (each one's all-reduces meet the others'), and
      // probes timed on one rank would decide its switches apart from the others'.
      q.skip_reason =
          "a data-parallel rank: not probed, so that every rank takes the same steps and "
          "records with the same switches (the switch costs are not measured)";
      return q;
    }
    q.probe = [this, &ctx](const ResolvedSwitches& sw) -> absl::StatusOr<ProbeTimings> {
      round_end_ = probed_ + kProbeRoundWindows;
      auto after_window = [&] { ctx.Report("probing", ++probed_, round_end_); };
      return ProbeRound(*trainer_, *source_, Options(sw), kProbePairs, after_window,
                        ctx.cancel());
    };
    // The probes' share: at most the job's own steps (the measured trials and the profiler's).
    q.job_windows = spec_.repeat * window_ + Schedule().TotalSteps();
    return q;
  }

  absl::Status Record(const StageContext& ctx, const SwitchDecision& decision) override {
    options_ = Options(decision.budget.switches);
    ASSIGN_OR_RETURN(auto profiled,
                     RunProfiledWindow(*trainer_, *source_, Schedule(), options_, files_,
                                       TraceIdentity(), ctx.progress(), ctx.cancel()));
    window_result_ = std::move(profiled);
    if (data_parallel_ != nullptr) data_parallel_->MeasureReplicaDivergence();
    return absl::OkStatus();
  }

  absl::StatusOr<Profile> Analyse(const StageContext& ctx) override {
    ctx.Report("analysing", 0, 1);
    RETURN_IF_ERROR(AnalyseProfiledWindow(&*window_result_, files_, spec_.output, &post_window_));
    Profile p = std::move(window_result_->analysed.profile);
    p.trace = window_result_->trace;
    return p;
  }

  absl::Status Apply(const StageContext&, const SwitchDecision& decision, Profile* p) override {
    // A seeded random init is labelled with the size it was built at (`--size s` with the
    // default weights name is a LibreYOLO9s, not "LibreYOLO9t.pt").
    p->model = loaded_->weights_label == "random-init"
                   ? absl::StrCat("LibreYOLO9", spec_.model.size, " (random init)")
                   : loaded_->weights_label;
    // The images a step trained on: img/s, ms/image and the config count those.
    p->batch = images_per_step_;
    // Means over the trials (repeat_trials.h); gpu_util stays the profiled window's own ratio.
    ApplyMeasuredTrials(*p, images_per_step_, m_.trials);
    TrainConfigFacts facts;
    facts.spec = &spec_;
    facts.batch = images_per_step_;
    facts.batch_requested = batch_;
    facts.weights_searched = &loaded_->weights_searched;
    facts.batch_note = batch_note_;
    facts.batch_rule = batch_rule_;
    facts.amp_effective = amp_;
    facts.aux_tensors = aux_tensors_;
    facts.aux_tensors_loaded = aux_tensors_loaded_;
    facts.aux_init_seed = kAuxInitSeed;
    facts.device_label = device_.Label();
    facts.weights_label = loaded_->weights_label;
    facts.model_label = p->model;
    facts.dataset = dataset_->Describe();
    facts.dataset_images = dataset_->size();
    facts.threads = threads_;
    facts.optimizer = absl::StrCat(trainer_->groups().Describe(SgdSettings{}), "; ",
                                   trainer_->UpdateDescription());
    facts.metrics_file = files_.Recorded(files_.metrics);
    facts.loss_first = m_.loss_first;
    facts.loss_last = m_.loss_last;
    facts.skipped_steps = trainer_->skipped_steps();
    facts.phases = m_.phases;
    facts.loader_note = loader_->note();
    if (loaded_->head_reinitialised) facts.head_reinit = &*loaded_->head_reinitialised;
    if (data_parallel_ != nullptr) facts.data_parallel = &data_parallel_->facts();
    if (device_.cuda) {
      facts.cuda_index = device_.index;
      facts.cuda_at_start = at_start_;
    }
    if (window_result_->memory) {
      // The allocator's own peaks over the recorded steps (see infer_job.cc).
      p->peak_vram_mb = static_cast<double>(window_result_->memory->peak_allocated) / 1e6;
      p->peak_reserved_mb = static_cast<double>(window_result_->memory->peak_reserved) / 1e6;
    }
    p->config_json = TrainConfigJson(facts);
    p->profiler_json = TrainProfilerJson(spec_, options_.cuda, decision, *window_result_);
    return absl::OkStatus();
  }

  JobOutputs Outputs() const override {
    JobOutputs out;
    out.files = &files_;
    out.window = &window_result_->analysed;
    out.repeat = spec_.repeat > 1;
    out.trials = &m_.trials;
    out.trial_batch = images_per_step_;
    out.trace_path = window_result_->trace;
    out.post_window = post_window_;
    return out;
  }

 private:
  // The PGI auxiliary branch as the Python tool's LibreYOLO9.train() attaches it (aux_weight
  // > 0): built fresh (kAuxInitSeed), then the checkpoint's own aux.* / aux_head.* tensors
  // where their names and shapes fit (_reload_aux_from_path). aux_weight 0: none.
  absl::Status AttachAuxBranch() {
    if (spec_.aux_weight == 0) return absl::OkStatus();
    Yolo9& model = loaded_->model;
    torch::manual_seed(kAuxInitSeed);
    model->EnableAux(spec_.aux_weight);
    for (const auto& item : model->named_parameters()) aux_tensors_ += IsAuxKey(item.key());
    for (const auto& item : model->named_buffers()) aux_tensors_ += IsAuxKey(item.key());
    if (loaded_->weights_label == "random-init") return absl::OkStatus();
    ASSIGN_OR_RETURN(auto checkpoint, ReadCheckpoint(loaded_->weights_label));
    std::map<std::string, torch::Tensor> aux;
    for (const auto& [name, tensor] : checkpoint.tensors) {
      if (IsAuxKey(name)) aux.emplace(name, ToTorch(tensor));
    }
    aux_tensors_loaded_ = LoadAuxTensors(model, aux);
    return absl::OkStatus();
  }

  TorchProfilerOptions Options(const ResolvedSwitches& sw) const {
    return SessionOptions(sw, spec_.profiler.collector, device_.cuda && spec_.profiler.cuda);
  }

  // The trace's distributedInfo: a data-parallel rank's place in its run.
  TraceExportOptions TraceIdentity() const {
    TraceExportOptions o;
    if (data_parallel_ != nullptr) {
      o.backend = data_parallel_->facts().backend;
      o.rank = data_parallel_->facts().rank;
      o.world_size = data_parallel_->facts().world_size;
    }
    return o;
  }

  ScheduleSettings Schedule() const {
    ScheduleSettings schedule;
    schedule.skip_first = spec_.skip_first;
    schedule.wait = spec_.wait;
    schedule.warmup = spec_.warmup;
    schedule.active = spec_.steps;
    schedule.cycles = spec_.cycles;
    return schedule;
  }

  void LogStep(const char* stage, int64_t trial, const PhaseTimes& t, bool synced) {
    step_log_.Add(StepRecord{stage, trial + 1, static_cast<int64_t>(step_log_.size()) + 1,
                             trainer_->last_losses(),
                             synced ? std::optional<double>(t.total()) : std::nullopt,
                             trainer_->LearningRates()});
  }

  // prepare
  std::shared_ptr<const DetectionDataset> dataset_;
  int64_t window_ = 0;  // warmup + steps
  ThreadSettings threads_;
  bool amp_ = false;
  std::optional<CudaAllocatorStats> at_start_;
  std::optional<LoadedModel> loaded_;
  int64_t aux_tensors_ = 0, aux_tensors_loaded_ = 0;  // the PGI branch's (AttachAuxBranch)
  std::optional<ModuleScopes> module_scopes_;
  int64_t batch_ = 0;            // the loader's batch: --batch, or --batch -1's choice
  int64_t images_per_step_ = 0;  // the batch, or the whole dataset (a rank's) when smaller
  std::string batch_note_;       // why images_per_step_ is below batch_
  std::string batch_rule_;
  std::unique_ptr<DataLoader> loader_;
  std::optional<LoaderBatchSource> source_;
  std::unique_ptr<DataParallel> data_parallel_;  // a data-parallel rank; before trainer_
  std::optional<Trainer> trainer_;
  // measure
  MeasuredWindows m_;
  StepLog step_log_;
  JobFiles files_;
  // decide (the probe's progress)
  int64_t probed_ = 0, round_end_ = 0;
  // record, analyse
  TorchProfilerOptions options_;
  std::optional<ProfiledWindow> window_result_;
  PostWindowTimes post_window_;
};

}  // namespace

absl::StatusOr<JobResult> RunTrainJob(const TrainJobSpec& spec, const ProgressFn& progress,
                                      const CancelToken* cancel) {
  TrainKind kind(spec);
  return RunJobPipeline(kind, progress, cancel);
}

}  // namespace libreyolo::engine
