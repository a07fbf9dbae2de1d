#include "server/worker/engine_spec.h"

#include <algorithm>

#include "proto/job_spec/job_spec.h"

namespace libreyolo::worker {
namespace {

// After jobspec::ApplyDefaults: every field holds the job's value.
engine::ModelSpec ToModel(const v1::ModelOptions& m, const std::string& device) {
  engine::ModelSpec out;
  out.weights = m.weights();
  out.size = m.size();
  out.device = device == "cpu" ? "cpu" : device.substr(device.find(':') + 1);  // "cuda:N" -> "N"
  out.threads = m.threads();
  return out;
}

engine::ProfilerSwitches ToSwitches(const v1::ProfilerOptions& p) {
  engine::ProfilerSwitches s;
  if (p.has_record_shapes()) s.record_shapes = p.record_shapes();
  if (p.has_profile_memory()) s.profile_memory = p.profile_memory();
  if (p.has_with_flops()) s.with_flops = p.with_flops();
  s.with_modules = p.with_modules();
  s.overhead_budget_pct = p.overhead_budget_pct();
  // Empty: cpu plus the job's device.
  s.cuda = p.activities().empty() ||
           std::find(p.activities().begin(), p.activities().end(), "cuda") != p.activities().end();
  return s;
}

}  // namespace

engine::InferJobSpec ToEngineInferSpec(const v1::InferSpec& request, const std::string& device,
                                       const std::string& project) {
  v1::InferSpec r = request;
  r.clear_images();  // the daemon wrote them out (job_inputs.h); source names their directory
  jobspec::ApplyDefaults(&r);
  engine::InferJobSpec s;
  s.model = ToModel(r.model(), device);
  s.source = r.source();  // empty: the sample image
  s.batch = r.batch();
  s.imgsz = r.imgsz();
  s.half = r.half();
  s.amp_dtype = r.amp_dtype();
  s.warmup = r.warmup();
  s.runs = r.runs();
  s.repeat = r.repeat();
  s.conf = r.conf();
  s.iou = r.iou();
  s.max_det = r.max_det();
  s.trace = r.trace();
  s.profiler = ToSwitches(r.profiler());
  s.project = project;
  return s;
}

engine::TrainJobSpec ToEngineTrainSpec(const v1::RunSpec& request, const std::string& device,
                                       const std::string& project) {
  v1::RunSpec r = request;
  jobspec::ApplyDefaults(&r);
  engine::TrainJobSpec s;
  s.model = ToModel(r.model(), device);
  s.data = r.data();
  s.batch = r.batch();
  s.imgsz = r.imgsz();
  s.workers = r.workers();
  s.amp = r.amp();
  s.steps = r.steps();
  s.warmup = r.warmup();
  s.repeat = r.repeat();
  s.skip_first = r.skip_first();
  s.wait = r.wait();
  s.cycles = r.cycles();
  s.profiler = ToSwitches(r.profiler());
  s.project = project;
  return s;
}

}  // namespace libreyolo::worker
