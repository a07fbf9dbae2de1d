#include "common/analysis/metric_list.h"

#include <set>

#include "common/profile/inference_metrics.h"
#include "common/profile/metric_id.h"
#include "common/profile/metric_table.h"

namespace libreyolo {
namespace {

MetricValue Num(std::string name, std::string unit, std::optional<double> v) {
  MetricValue m;
  m.name = std::move(name);
  m.unit = std::move(unit);
  m.number = v;
  return m;
}

MetricValue Count(std::string name, std::optional<int64_t> v) {
  MetricValue m;
  m.name = std::move(name);
  m.count = v;
  return m;
}

}  // namespace

MetricValue MetricValueFromCell(const MetricDef& def, const MetricCell& c) {
  MetricValue m;
  m.name = std::string(def.name);
  m.unit = std::string(def.unit);
  m.number = c.number;
  m.count = c.count;
  m.flag = c.flag;
  m.text = c.text;
  return m;
}

void WriteMetricCell(JsonWriter& w, const MetricCell& c) {
  if (c.text) {
    w.String(*c.text);
  } else if (c.flag) {
    w.Bool(*c.flag);
  } else if (c.count) {
    w.Int(*c.count);
  } else if (c.number) {
    w.Double(*c.number);
  } else {
    w.Null();
  }
}

void WriteMetricValue(JsonWriter& w, const MetricValue& m) {
  if (m.raw_json && !m.text && !m.flag) {
    w.Raw(*m.raw_json);
    return;
  }
  MetricCell c;
  c.number = m.number;
  c.count = m.count;
  c.flag = m.flag;
  c.text = m.text;
  WriteMetricCell(w, c);
}

std::vector<MetricValue> FlatMetrics(const Profile& p) {
  std::vector<MetricValue> out;
  for (const MetricDef& d : MetricTable()) {
    out.push_back(MetricValueFromCell(d, MetricValueOf(d, p)));
  }
  // The per-phase columns, as the Python LibreYOLO names them. A CPU job's phases have no GPU
  // time and no kernels: n/a (null), as every GPU metric of it (metric_table.h, kGpu).
  const bool cpu = IsCpuJob(p);
  for (const PhaseRow& r : p.phases) {
    out.push_back(Num(r.phase + "_gpu_ms", "ms",
                      cpu ? std::nullopt : std::optional<double>(r.gpu_ms_per_step)));
    out.push_back(Num(r.phase + "_wall_ms", "ms", r.wall_ms_per_step));
    out.push_back(Count(r.phase + "_kernels", cpu ? std::nullopt
                                                  : std::optional<int64_t>(
                                                        CountFromDouble(r.kernels_per_step))));
    out.push_back(Count(r.phase + "_ops", CountFromDouble(r.ops_per_step)));
    if (r.cpu_ms_per_step) out.push_back(Num(r.phase + "_cpu_ms", "ms", r.cpu_ms_per_step));
  }
  if (p.repeat.img_per_s_n.has_value()) {
    out.push_back(Num("img_per_s_std", "img/s", p.repeat.img_per_s_std));
    out.push_back(Count("img_per_s_n", p.repeat.img_per_s_n));
  }
  // A repeat profile: every aggregated scalar's sample std over the trials.
  for (const auto& [name, stat] : p.repeat.metrics) {
    if (name == MetricName(MetricId::kImgPerS)) continue;  // img_per_s_std above
    // No spread for a metric that does not apply (a CPU job's GPU metrics).
    if (const MetricDef* d = FindMetric(name); d != nullptr && MetricValueOf(*d, p).is_null()) {
      continue;
    }
    out.push_back(Num(name + "_std", "", stat.std));
  }
  // An inference profile's latency, throughput and stage times (inference_metrics.h), when it
  // has its latency / stages_ms objects.
  for (const InferenceMetricDef& d : InferenceMetricTable()) {
    if (d.listed && InferencePresent(d, p)) {
      out.push_back(Num(std::string(d.name), std::string(d.unit), d.get(p)));
    }
  }
  // Keys the file's own "metrics" object carried that we do not derive (kept, not dropped).
  std::set<std::string> known;
  for (const auto& m : out) known.insert(m.name);
  for (const auto& [name, json] : p.extra_metrics_json) {
    if (known.contains(name)) continue;
    MetricValue m;
    m.name = name;
    if (json != "null") m.raw_json = json;
    out.push_back(m);
  }
  return out;
}

}  // namespace libreyolo
