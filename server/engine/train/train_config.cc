#include "server/engine/train/train_config.h"

#include <algorithm>
#include <numeric>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/analysis/latency_stats.h"
#include "common/json/json_writer.h"
#include "server/engine/train/optim.h"

namespace libreyolo::engine {
namespace {

// JsonWriter ends a document with a newline; the profile embeds the object verbatim.
std::string Finish(JsonWriter& w) {
  std::string s = w.Take();
  while (!s.empty() && absl::ascii_isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  return s;
}

// What LoadModel did to a checkpoint trained on other classes (model_loader.h: HeadReinit).
void WriteHeadReinit(JsonWriter& w, const HeadReinit& h) {
  auto shapes = [&](const char* key, const std::vector<TensorShape>& list) {
    w.Key(key).BeginArray();
    for (const TensorShape& t : list) {
      w.BeginObject().Field("name", t.name).Key("shape").BeginArray();
      for (int64_t d : t.shape) w.Int(d);
      w.EndArray().EndObject();
    }
    w.EndArray();
  };
  w.Key("head_reinitialised")
      .BeginObject()
      .Field("from_classes", h.from_classes)
      .Field("to_classes", h.to_classes)
      .Field("class_tower_width", h.class_hidden)
      .Field("seed", static_cast<int64_t>(h.seed))
      .Field("init", absl::StrCat("as the Python LibreYOLO's train(seed=", h.seed,
                                  "): each class tower's final 1x1 conv as a fresh nn.Conv2d, "
                                  "then DDetect._init_bias (class bias -10, box bias 1.0)"));
  shapes("reinitialised", h.reinitialised);
  shapes("reset", h.reset);
  w.Field("kept", h.kept).EndObject();
}

// A rank's place in its data-parallel run and what DDP did for it (docs/profile-json.md).
void WriteDataParallel(JsonWriter& w, const DataParallelFacts& d, int64_t batch) {
  w.Key("data_parallel")
      .BeginObject()
      .Field("backend", d.backend)
      .Field("rank", d.rank)
      .Field("world_size", d.world_size)
      .Field("global_batch", batch * d.world_size)
      .Field("bucket_cap_mb", d.bucket_cap_mb)
      .Field("buckets", d.buckets)
      .Field("gradient_bytes", d.gradient_bytes)
      .Field("parameters", d.parameters)
      .Field("gradient_as_bucket_view", d.gradient_as_bucket_view)
      .Field("broadcast_buffers", d.broadcast_buffers)
      .Key("replica_divergence");
  if (d.replica_divergence) {
    w.Double(*d.replica_divergence);
  } else {
    w.Null();
  }
  w.Field("sampler", "the loader's seeded shuffle, sharded as DistributedSampler (drop_last=False)")
      .EndObject();
}

}  // namespace

std::string TrainConfigJson(const TrainConfigFacts& f) {
  const TrainJobSpec& s = *f.spec;
  JsonWriter w(/*pretty=*/false);
  w.BeginObject()
      .Field("model", f.model_label)
      .Field("size", s.model.size)
      .Field("weights", f.weights_label);
  if (f.weights_searched != nullptr && !f.weights_searched->empty()) {
    w.Key("weights_searched").BeginArray();
    for (const std::string& place : *f.weights_searched) w.String(place);
    w.EndArray();
  }
  if (f.head_reinit != nullptr) WriteHeadReinit(w, *f.head_reinit);
  w.Field("data", s.data)
      .Field("dataset", f.dataset)
      .Field("dataset_images", f.dataset_images)
      .Field("batch", f.batch);
  if (f.batch_requested > 0 && f.batch_requested != f.batch) {
    w.Field("batch_requested", f.batch_requested);
  }
  if (!f.batch_note.empty()) w.Field("batch_note", f.batch_note);
  if (!f.batch_rule.empty()) w.Field("batch_rule", f.batch_rule);
  w.Field("imgsz", s.imgsz)
      .Field("workers", s.workers)
      .Field("amp", s.amp)
      .Field("amp_effective", f.amp_effective);
  if (f.amp_effective) {
    w.Field("amp_dtype", "float16").Field("amp_skipped_steps", f.skipped_steps);
  } else if (s.amp) {
    // Autocast here is the CUDA path of the reference; on the CPU training stays float32.
    w.Field("amp_note", "--amp has no effect on the CPU: training ran in float32");
  }
  // Python's YOLO9Config.aux_weight: the PGI auxiliary branch trained beside the main head.
  w.Field("aux_weight", s.aux_weight);
  if (s.aux_weight > 0) {
    w.Field("aux_branch",
            f.aux_tensors_loaded == f.aux_tensors
                ? absl::StrCat("PGI auxiliary branch (aux, aux_head): its ", f.aux_tensors,
                               " tensors from the checkpoint")
                : absl::StrCat("PGI auxiliary branch (aux, aux_head): ", f.aux_tensors_loaded,
                               " of its ", f.aux_tensors, " tensors from the checkpoint, the ",
                               "rest a fresh init (seed ", f.aux_init_seed,
                               ") as the Python LibreYOLO's enable_aux draws it"));
  } else {
    w.Field("aux_branch", "off (aux_weight 0): the main head only");
  }
  w.Field("device", f.device_label);
  if (f.data_parallel != nullptr) WriteDataParallel(w, *f.data_parallel, f.batch);
  if (s.inject_dataload_delay_ms > 0) {
    w.Field("injected_dataload_delay_ms", s.inject_dataload_delay_ms);
  }
  w.Field("steps", s.steps)
      .Field("warmup", s.warmup)
      .Field("repeat", s.repeat)
      .Field("skip_first", s.skip_first)
      .Field("wait", s.wait)
      .Field("cycles", s.cycles);
  WriteThreadFields(w, f.threads);
  if (f.cuda_index) WriteCudaFields(w, *f.cuda_index, f.cuda_at_start);
  w.Field("optimizer", f.optimizer)
      .Field("ema_decay", EmaSettings{}.decay)
      .Field("metrics", f.metrics_file)
      .Field("loss_first", f.loss_first)
      .Field("loss_last", f.loss_last);
  if (!f.loader_note.empty()) w.Field("loader_note", f.loader_note);
  // The synchronised steps' composition, without the profiler (the phases table has the
  // profiled window's).
  w.Key("measured_phases_ms")
      .BeginObject()
      .Field("dataload", f.phases.dataload)
      .Field("to_device", f.phases.to_device)
      .Field("forward", f.phases.forward)
      .Field("backward", f.phases.backward)
      .Field("optimizer", f.phases.optimizer)
      .Field("ema", f.phases.ema)
      .EndObject();
  w.Field("loss_in", "forward").Field("mode", "train").EndObject();
  return Finish(w);
}

std::string TrainProfilerJson(const TrainJobSpec& spec, bool cuda_activity,
                              const SwitchDecision& decision, const ProfiledWindow& window) {
  const BudgetOutcome& budget = decision.budget;
  JsonWriter w(/*pretty=*/false);
  w.BeginObject().Field("activities", cuda_activity ? "cpu,cuda" : "cpu");
  WriteSwitchFields(w, budget, window.recorded, window.module_scopes,
                    spec.profiler.overhead_budget_pct);
  w.Key("schedule")
      .BeginObject()
      .Field("skip_first", spec.skip_first)
      .Field("wait", spec.wait)
      .Field("warmup", spec.warmup)
      .Field("active", spec.steps)
      .Field("repeat", spec.cycles)
      .EndObject()
      .Key("traces")
      .BeginArray();
  for (const std::string& t : window.cycle_traces) w.String(t);
  w.EndArray().Field("profiled_iterations", window.recorded_steps);
  WriteOverheadFields(w, budget);
  WriteDecisionFields(w, decision, spec.profiler);
  w.Field("cpu_collector", window.cpu_collector).Field("gpu_collector", window.gpu_collector);
  if (!window.notes.empty()) {
    w.Key("notes").BeginArray();
    for (const std::string& n : window.notes) w.String(n);
    w.EndArray();
  }
  w.EndObject();
  return Finish(w);
}

}  // namespace libreyolo::engine
