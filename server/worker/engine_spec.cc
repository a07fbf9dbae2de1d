#include "server/worker/engine_spec.h"

#include <algorithm>
#include <optional>

#include "wire/job_spec/job_spec.h"

namespace libreyolo::worker {
namespace {

// After jobspec::ApplyDefaults: every field holds the job's value.
engine::ModelSpec ToModel(const v1::ModelOptions& m, const std::string& device) {
  engine::ModelSpec out;
  out.weights = m.weights();
  out.size = m.size();
  out.device = device == "cpu" ? "cpu" : device.substr(device.find(':') + 1);  // "cuda:N" -> "N"
  out.threads = m.threads();
  out.weights_searched.assign(m.weights_searched().begin(), m.weights_searched().end());
  return out;
}

// The tri-state switches: set when the job says true or false, auto (nullopt) when unset.
struct TriStateSwitch {
  bool (v1::ProfilerOptions::*present)() const;
  bool (v1::ProfilerOptions::*value)() const;
  std::optional<bool> engine::ProfilerSwitches::*field;
};
constexpr TriStateSwitch kTriStateSwitches[] = {
    {&v1::ProfilerOptions::has_record_shapes, &v1::ProfilerOptions::record_shapes,
     &engine::ProfilerSwitches::record_shapes},
    {&v1::ProfilerOptions::has_profile_memory, &v1::ProfilerOptions::profile_memory,
     &engine::ProfilerSwitches::profile_memory},
    {&v1::ProfilerOptions::has_with_flops, &v1::ProfilerOptions::with_flops,
     &engine::ProfilerSwitches::with_flops},
};

engine::ProfilerSwitches ToSwitches(const v1::ProfilerOptions& p) {
  engine::ProfilerSwitches s;
  for (const TriStateSwitch& t : kTriStateSwitches) {
    if ((p.*t.present)()) s.*t.field = (p.*t.value)();
  }
  s.with_modules = p.with_modules();
  s.collector = p.collector();
  s.overhead_budget_pct = p.overhead_budget_pct();
  s.probe_overhead = p.probe_overhead();
  // Empty: cpu plus the job's device.
  s.cuda = p.activities().empty() ||
           std::find(p.activities().begin(), p.activities().end(), "cuda") != p.activities().end();
  return s;
}

// The fields infer and run share carry the same names in both protos and both engine structs:
// copied once, here, for either kind of job. `r` has had jobspec::ApplyDefaults.
template <typename Request, typename Spec>
void CopySharedFields(const Request& r, const std::string& device, const std::string& project,
                      Spec* s) {
  s->model = ToModel(r.model(), device);
  s->batch = r.batch();
  s->imgsz = r.imgsz();
  s->warmup = r.warmup();
  s->repeat = r.repeat();
  s->profiler = ToSwitches(r.profiler());
  s->project = project;
}

// A daemon's limits.max_decoded_pixels; 0 (the engine tool, a daemon that sent none): the
// engine's own bound.
int64_t DecodedPixelBound(int64_t max_decoded_pixels) {
  return max_decoded_pixels > 0 ? max_decoded_pixels : engine::kMaxDecodedPixels;
}

}  // namespace

engine::InferJobSpec ToEngineInferSpec(const v1::InferSpec& request, const std::string& device,
                                       const std::string& project, int64_t max_decoded_pixels) {
  v1::InferSpec r = request;
  r.clear_images();  // the daemon wrote them out (job_inputs.h); source names their directory
  jobspec::ApplyDefaults(&r);
  engine::InferJobSpec s;
  CopySharedFields(r, device, project, &s);
  s.source = r.source();  // empty: the sample image
  s.max_decoded_pixels = DecodedPixelBound(max_decoded_pixels);
  s.half = r.half();
  s.amp_dtype = r.amp_dtype();
  s.runs = r.runs();
  s.conf = r.conf();
  s.iou = r.iou();
  s.max_det = r.max_det();
  s.postprocess = r.postprocess();
  s.trace = r.trace();
  return s;
}

engine::TrainJobSpec ToEngineTrainSpec(const v1::RunSpec& request, const std::string& device,
                                       const std::string& project,
                                       const RankPlacement& placement,
                                       int64_t max_decoded_pixels) {
  v1::RunSpec r = request;
  jobspec::ApplyDefaults(&r);
  engine::TrainJobSpec s;
  CopySharedFields(r, device, project, &s);
  s.data = r.data();
  s.max_decoded_pixels = DecodedPixelBound(max_decoded_pixels);
  s.workers = r.workers();
  s.amp = r.amp();
  s.steps = r.steps();
  s.skip_first = r.skip_first();
  s.wait = r.wait();
  s.cycles = r.cycles();
  s.aux_weight = r.aux_weight();
  const v1::DataParallelOptions& d = r.data_parallel();
  s.data_parallel.world_size = placement.world_size;
  s.data_parallel.placed = placement.placed;
  s.data_parallel.rank = placement.rank;
  s.data_parallel.master_addr = placement.master_addr;
  s.data_parallel.master_port = placement.master_port;
  s.data_parallel.group = placement.group;
  s.data_parallel.backend = d.backend();
  s.data_parallel.bucket_cap_mb = d.bucket_cap_mb();
  s.data_parallel.gradient_as_bucket_view = d.gradient_as_bucket_view();
  s.data_parallel.broadcast_buffers = d.broadcast_buffers();
  s.data_parallel.timeout_s = d.timeout_s();
  return s;
}

}  // namespace libreyolo::worker
