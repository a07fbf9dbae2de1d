#include "common/analysis/profile_json_write.h"

#include "absl/strings/str_cat.h"
#include "common/analysis/kernel_classify.h"
#include "common/analysis/metric_list.h"
#include "common/analysis/trust.h"
#include "common/json/json_read.h"
#include "common/json/json_writer.h"
#include "common/profile/metric_id.h"
#include "common/profile/metric_table.h"
#include "rapidjson/document.h"

namespace libreyolo {
namespace {

void WriteKernelRow(JsonWriter& w, const KernelRow& k) {
  w.BeginObject()
      .Field("kernel", k.kernel)
      .Field("raw_name", CutName(k.raw_name))
      .Field("category", k.category)
      .Field("tensorcore", k.tensorcore)
      .Field("ms_per_step", k.ms_per_step)
      .Field("pct_of_gpu", k.pct_of_gpu)
      .Field("count_per_step", CountFromDouble(k.count_per_step))
      .EndObject();
}

void WriteKernelRows(JsonWriter& w, const std::vector<KernelRow>& rows, size_t limit) {
  w.BeginArray();
  for (size_t i = 0; i < rows.size() && i < limit; ++i) WriteKernelRow(w, rows[i]);
  w.EndArray();
}

void WriteOpRows(JsonWriter& w, const std::vector<OpRow>& rows) {
  // pct_of_self_cpu: the row's self CPU time over the list's (sums to 100); pct_of_cpu_ops
  // keeps the Python tool's meaning (share of summed CPU totals), docs/metrics.md.
  double list_self = 0;
  bool have_self = !rows.empty();
  for (const OpRow& o : rows) {
    have_self = have_self && o.self_cpu_ms_per_step.has_value();
    list_self += o.self_cpu_ms_per_step.value_or(0);
  }
  w.BeginArray();
  for (const OpRow& o : rows) {
    w.BeginObject().Field("op", o.op);
    if (!o.input_shapes.empty()) w.Field("input_shapes", o.input_shapes);
    w.Field("count_per_step", CountFromDouble(o.count_per_step))
        .Field("ms_per_step", o.ms_per_step)
        .Field("self_cpu_ms_per_step", o.self_cpu_ms_per_step)
        .Field("pct_of_cpu_ops", o.pct_of_cpu_ops)
        .Field("pct_of_self_cpu", have_self && list_self > 0
                                      ? OptDouble(100.0 * *o.self_cpu_ms_per_step / list_self)
                                      : std::nullopt)
        .Field("self_cpu_mem_bytes", o.self_cpu_mem_bytes)
        .Field("cpu_mem_bytes", o.cpu_mem_bytes)
        .Field("self_device_mem_bytes", o.self_device_mem_bytes)
        .Field("device_mem_bytes", o.device_mem_bytes)
        .Field("flops", o.flops)
        .Field("device_ms_per_step", o.device_ms_per_step)
        .Field("self_device_ms_per_step", o.self_device_ms_per_step)
        .EndObject();
  }
  w.EndArray();
}

void WriteObjectCells(JsonWriter& w, std::string_view object, const Profile& p) {
  for (const MetricDef& d : MetricTable()) {
    if (d.object == object && !d.field.empty()) {
      WriteMetricCell(w.Key(d.field), MetricValueOf(d, p));
    }
  }
}

void WritePhases(JsonWriter& w, const std::vector<PhaseRow>& phases) {
  w.BeginArray();
  for (const PhaseRow& r : phases) {
    w.BeginObject()
        .Field("phase", r.phase)
        .Field("gpu_ms_per_step", r.gpu_ms_per_step)
        .Field("wall_ms_per_step", r.wall_ms_per_step);
    if (r.cpu_ms_per_step) w.Field("cpu_ms_per_step", r.cpu_ms_per_step);
    w.Field("kernels_per_step", CountFromDouble(r.kernels_per_step))
        .Field("ops_per_step", CountFromDouble(r.ops_per_step))
        .Field("unique_kernels", r.unique_kernels)
        .EndObject();
  }
  w.EndArray();
}

// trust.h's assessment: the trace's checks, the load check and the confidence; absent when the
// profile carries no checks and none applies.
void WriteTrust(JsonWriter& w, const Profile& p) {
  const TrustAssessment t = AssessTrust(p);
  if (!t.checked) return;
  w.Key("trust").BeginObject().Field("confidence", t.confidence).Key("reasons").BeginArray();
  for (const std::string& r : t.reasons) w.String(r);
  w.EndArray().Key("checks").BeginArray();
  for (const TrustCheck& c : t.checks) {
    w.BeginObject().Field("name", c.name).Field("outcome", c.outcome)
        .Field("evidence", c.evidence).EndObject();
  }
  w.EndArray().EndObject();
}

// WriteProfileJson's stages, in the order of the file's keys: what the job was, the scalar
// metrics (top level, memory, window, metrics), the tables, latency and stages, a repeat's
// aggregation, the provenance (device, tool, profiler, ranks, time), the parse stats; then the
// trust assessment (WriteTrust).

// What the job was: schema, trace, model, config, mode and the verdict's reason.
void WriteIdentity(JsonWriter& w, const Profile& p) {
  w.Field("schema", std::string_view(kProfileSchema))
      .Field("trace", p.trace)
      .Field("model", p.model)
      .Key("config")
      .Raw(p.config_json);
  if (p.mode.has_value()) w.Field("mode", *p.mode);
  w.Field("bound_why", p.bound_why);
}

// The scalar metrics at their places, and the metrics object of every flat metric.
void WriteScalarMetrics(JsonWriter& w, const Profile& p) {
  // Every scalar metric at its place (metric_table.h): top level first, then the memory and
  // window objects (memory.peak_allocated_mb repeats peak_vram_mb, as the Python tool's does).
  for (const MetricDef& d : MetricTable()) {
    if (d.object.empty() && !d.field.empty()) {
      WriteMetricCell(w.Key(d.field), MetricValueOf(d, p));
    }
  }
  w.Key("memory").BeginObject();
  WriteMetricCell(w.Key("peak_allocated_mb"), MetricValueOf(MetricDefOf(MetricId::kPeakVramMb), p));
  WriteObjectCells(w, "memory", p);
  w.EndObject();
  w.Key("window").BeginObject();
  WriteObjectCells(w, "window", p);
  w.EndObject();
  w.Key("metrics").BeginObject();
  for (const MetricValue& m : FlatMetrics(p)) {
    w.Key(m.name);
    WriteMetricValue(w, m);
  }
  w.EndObject();
}

// The tables: categories, phases, kernels and ops (by phase, top, all, by input shape).
void WriteTables(JsonWriter& w, const Profile& p) {
  w.Key("categories").BeginArray();
  for (const CategoryRow& c : p.categories) {
    w.BeginObject().Field("name", c.name).Field("pct", c.pct)
        .Field("ms_per_step", c.ms_per_step).EndObject();
  }
  w.EndArray();
  w.Key("phases");
  WritePhases(w, p.phases);
  w.Key("kernels_by_phase").BeginObject();
  for (const auto& [phase, rows] : p.kernels_by_phase) {
    w.Key(phase);
    WriteKernelRows(w, rows, 40);
  }
  w.EndObject();
  w.Key("ops_by_phase").BeginObject();
  for (const auto& [phase, rows] : p.ops_by_phase) {
    w.Key(phase);
    WriteOpRows(w, rows);
  }
  w.EndObject();
  w.Key("top_kernels");
  WriteKernelRows(w, p.kernels, 8);
  w.Key("kernels");
  WriteKernelRows(w, p.kernels, p.kernels.size());
  w.Key("ops");
  WriteOpRows(w, p.ops);
  w.Field("has_input_shapes", p.has_input_shapes);
  if (!p.flops_uncounted_ops.empty()) {
    w.Key("flops_uncounted_ops").BeginArray();
    for (const std::string& op : p.flops_uncounted_ops) w.String(op);
    w.EndArray();
  }
  if (!p.ops_by_input_shape.empty()) {
    w.Key("ops_by_input_shape");
    WriteOpRows(w, p.ops_by_input_shape);
  }
}

// An inference profile's latency and its stages.
void WriteLatencyAndStages(JsonWriter& w, const Profile& p) {
  if (p.latency.has_value()) {
    const Latency& l = *p.latency;
    w.Key("latency").BeginObject().Field("p50_ms", l.p50_ms).Field("p90_ms", l.p90_ms)
        .Field("p99_ms", l.p99_ms).Field("mean_ms", l.mean_ms).Field("min_ms", l.min_ms)
        .Field("max_ms", l.max_ms).Field("n", l.n);
    if (l.cuda_event_p50_ms) w.Field("cuda_event_p50_ms", l.cuda_event_p50_ms);
    if (l.cuda_event_mean_ms) w.Field("cuda_event_mean_ms", l.cuda_event_mean_ms);
    if (!l.samples_ms.empty()) {
      w.Key("samples_ms").BeginArray();
      for (double v : l.samples_ms) w.Double(v);
      w.EndArray();
    }
    w.EndObject();
  }
  if (p.stages_ms.has_value()) {
    w.Key("stages_ms").BeginObject().Field("preprocess", p.stages_ms->preprocess)
        .Field("forward", p.stages_ms->forward).Field("postprocess", p.stages_ms->postprocess)
        .EndObject();
  }
}

// A repeat profile's trials and aggregation.
void WriteRepeat(JsonWriter& w, const Profile& p) {
  if (p.repeat.img_per_s_n.has_value()) {
    w.Field("img_per_s_std", p.repeat.img_per_s_std).Field("img_per_s_n", p.repeat.img_per_s_n);
    w.Key("img_per_s_trials").BeginArray();
    for (double v : p.repeat.img_per_s_trials) w.Double(v);
    w.EndArray();
  }
  if (!p.repeat.metrics.empty()) {
    // Every scalar the trials measured: mean (= the field's value), population std, n, trials.
    w.Key("aggregation").BeginObject()
        .Field("n", p.repeat.metrics.begin()->second.n)
        .Field("std", p.repeat.population_std ? "population" : "sample")
        .Field("note", "scalar metrics: mean over trials, with their population standard "
                       "deviation; kernel and operator lists: the profiled window");
    if (!p.repeat.profiles.empty()) {
      w.Key("profiles").BeginArray();
      for (const std::string& f : p.repeat.profiles) w.String(f);
      w.EndArray().Field("representative_profile", p.repeat.profiles.back());
    }
    w.Key("metrics").BeginObject();
    for (const auto& [name, stat] : p.repeat.metrics) {
      w.Key(name).BeginObject().Field("mean", stat.mean).Field("std", stat.std)
          .Field("n", stat.n).Key("trials").BeginArray();
      for (double v : stat.trials) w.Double(v);
      w.EndArray().EndObject();
    }
    w.EndObject().EndObject();
  }
}

// Where the profile came from: device, tool, the profiler's record, the ranks, the time.
void WriteProvenance(JsonWriter& w, const Profile& p) {
  if (p.device.has_value()) {
    w.Key("device").BeginObject().Field("type", p.device->type).Field("name", p.device->name)
        .Field("index", p.device->index).Field("sm_count", p.device->sm_count)
        .Field("memory_mb", p.device->memory_mb).EndObject();
  }
  w.Key("tool").BeginObject()
      .Field("name", p.tool_name.empty() ? std::string("libreyolo-profiler") : p.tool_name)
      .Field("version", p.tool_version.empty() ? std::string(LIBREYOLO_VERSION) : p.tool_version);
  if (!p.libtorch_version.empty()) w.Field("libtorch", p.libtorch_version);
  w.EndObject();
  if (!p.profiler_json.empty()) w.Key("profiler").Raw(p.profiler_json);
  if (!p.ranks_json.empty()) w.Key("ranks").Raw(p.ranks_json);
  if (p.created_at.has_value()) w.Field("created_at", *p.created_at);
}

void WriteParseStats(JsonWriter& w, const ParseStats& s) {
  w.Key("parse_stats").BeginObject().Field("events", s.events)
      .Field("complete_events", s.complete_events).Field("skipped_events", s.skipped_events)
      .Field("non_numeric_ids", s.non_numeric_ids).Field("duplicate_steps", s.duplicate_steps)
      .Field("unattributed_kernels", s.unattributed_kernels).EndObject();
}

}  // namespace

std::string WriteProfileJson(const Profile& p) {
  JsonWriter w;
  w.BeginObject();
  WriteIdentity(w, p);
  WriteScalarMetrics(w, p);
  WriteTables(w, p);
  WriteLatencyAndStages(w, p);
  WriteRepeat(w, p);
  WriteProvenance(w, p);
  WriteParseStats(w, p.parse_stats);
  WriteTrust(w, p);
  w.EndObject();
  return w.Take();
}

absl::StatusOr<std::string> AddProfileMember(std::string text, std::string_view key,
                                             std::string_view json) {
  const rapidjson::Document doc = JsonOrNull(text);
  if (!doc.IsObject()) {
    return absl::InvalidArgumentError("the profile is not a JSON object");
  }
  const std::string name(key);
  if (doc.HasMember(name.c_str())) {
    return absl::InvalidArgumentError(absl::StrCat("the profile already has `", name, "`"));
  }
  rapidjson::Document value;
  if (ParseJson(json, &value).IsError()) {
    return absl::InvalidArgumentError(absl::StrCat("`", name, "` is not JSON"));
  }
  const size_t close = text.rfind('}');  // the object's own: only blanks follow it
  const bool empty = doc.MemberCount() == 0;
  text.insert(close, absl::StrCat(empty ? "" : ",", "\"", name, "\":", std::string(json)));
  return text;
}

}  // namespace libreyolo
