#include "server/worker/engine_spec.h"

#include <algorithm>

namespace libreyolo::worker {
namespace {

engine::ModelSpec ToModel(const v1::ModelOptions& m, const std::string& device) {
  engine::ModelSpec out;
  if (!m.weights().empty()) out.weights = m.weights();
  if (!m.size().empty()) out.size = m.size();
  out.device = device == "cpu" ? "cpu" : device.substr(device.find(':') + 1);  // "cuda:N" -> "N"
  if (m.threads() > 0) out.threads = m.threads();
  return out;
}

void ToSwitches(const v1::ProfilerOptions& p, engine::ProfilerSwitches* s) {
  if (p.has_record_shapes()) s->record_shapes = p.record_shapes();
  if (p.has_profile_memory()) s->profile_memory = p.profile_memory();
  if (p.has_with_flops()) s->with_flops = p.with_flops();
  if (p.has_with_modules()) {
    s->with_modules = p.with_modules();
  } else if (p.with_stack()) {
    s->with_modules = true;  // the deprecated alias
  }
  if (p.has_overhead_budget_pct()) s->overhead_budget_pct = p.overhead_budget_pct();
  if (p.activities_size() > 0) {
    s->cuda =
        std::find(p.activities().begin(), p.activities().end(), "cuda") != p.activities().end();
  }
}

}  // namespace

engine::InferJobSpec ToEngineInferSpec(const v1::InferSpec& r, const std::string& device,
                                       const std::string& project) {
  engine::InferJobSpec s;
  s.model = ToModel(r.model(), device);
  s.source = r.source();  // empty: the sample image
  if (r.batch() > 0) s.batch = r.batch();
  if (r.imgsz() > 0) s.imgsz = r.imgsz();
  s.half = r.half();
  if (!r.amp_dtype().empty()) s.amp_dtype = r.amp_dtype();
  if (r.has_warmup()) s.warmup = r.warmup();
  if (r.has_runs()) s.runs = r.runs();
  if (r.repeat() > 0) s.repeat = r.repeat();
  if (r.has_conf()) s.conf = r.conf();
  if (r.has_iou()) s.iou = r.iou();
  if (r.max_det() > 0) s.max_det = r.max_det();
  if (r.has_trace()) s.trace = r.trace();
  ToSwitches(r.profiler(), &s.profiler);
  s.project = project;
  return s;
}

engine::TrainJobSpec ToEngineTrainSpec(const v1::RunSpec& r, const std::string& device,
                                       const std::string& project) {
  engine::TrainJobSpec s;
  s.model = ToModel(r.model(), device);
  s.data = r.data();
  if (r.batch() != 0) s.batch = r.batch();
  if (r.imgsz() > 0) s.imgsz = r.imgsz();
  if (r.has_workers()) s.workers = r.workers();
  if (r.has_amp()) s.amp = r.amp();
  if (r.steps() > 0) s.steps = r.steps();
  if (r.has_warmup()) s.warmup = r.warmup();
  if (r.repeat() > 0) s.repeat = r.repeat();
  s.skip_first = r.skip_first();
  s.wait = r.wait();
  if (r.cycles() > 0) s.cycles = r.cycles();
  ToSwitches(r.profiler(), &s.profiler);
  s.project = project;
  return s;
}

}  // namespace libreyolo::worker
