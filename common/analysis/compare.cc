#include "common/analysis/compare.h"

#include <cmath>
#include <optional>
#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/analysis/repeat_trials.h"
#include "common/analysis/trust.h"
#include "common/json/json_read.h"
#include "common/profile/inference_metrics.h"
#include "common/profile/metric_id.h"
#include "common/profile/metric_table.h"
#include "rapidjson/document.h"

namespace libreyolo {
namespace {

OptDouble MsPerImage(const Profile& p) {
  if (!p.step_ms.has_value() || !p.batch.has_value() || *p.batch <= 0) return std::nullopt;
  return *p.step_ms / static_cast<double>(*p.batch);
}

// Python's round(x, 3).
OptDouble Round3(OptDouble x) {
  if (!x) return x;
  return std::nearbyint(*x * 1000.0) / 1000.0;
}

OptDouble Table(MetricId id, const Profile& p) {
  return MetricValueOf(MetricDefOf(id), p).AsDouble();
}

}  // namespace

PythonCompareBlocks PythonCompareOf(const Profile& a, const Profile& b) {
  PythonCompareBlocks r;
  const Profile* side[2] = {&a, &b};
  for (int i = 0; i < 2; ++i) {
    const Profile& p = *side[i];
    r.img_per_s[i] = p.img_per_s;
    r.img_per_s_std[i] = p.repeat.img_per_s_std;
    r.img_per_s_n[i] = p.repeat.img_per_s_n.value_or(1);
    r.ms_per_image[i] = Round3(MsPerImage(p));
    r.gpu_util[i] = Table(MetricId::kGpuUtil, p);
    r.host_overhead_ms_per_step[i] = Table(MetricId::kHostOverheadMs, p);
    r.launches_per_step[i] = Table(MetricId::kLaunchesPerStep, p);
  }
  if (!r.img_per_s[0] || !r.img_per_s[1]) {
    r.significance = "img/s unavailable";
  } else if (r.img_per_s_n[0] < 2 || r.img_per_s_n[1] < 2 || !r.img_per_s_std[0] ||
             !r.img_per_s_std[1]) {
    r.significance = "single run, use 'run --repeat N' for a significance call";
  } else {
    const double se = std::sqrt(
        *r.img_per_s_std[0] * *r.img_per_s_std[0] / static_cast<double>(r.img_per_s_n[0]) +
        *r.img_per_s_std[1] * *r.img_per_s_std[1] / static_cast<double>(r.img_per_s_n[1]));
    const double d = std::fabs(*r.img_per_s[1] - *r.img_per_s[0]);
    r.significant = d > 2 * se;
    r.significance = absl::StrFormat("|d|=%.1f vs 2*SE=%.1f", d, 2 * se);
  }
  return r;
}

OptDouble CompareDelta::delta() const {
  if (!before || !after) return std::nullopt;
  return *after - *before;
}

OptDouble CompareDelta::pct() const {
  if (!before || !after || *before == 0) return std::nullopt;
  return 100.0 * (*after - *before) / std::fabs(*before);
}

Significance SignificanceOf(double mean_a, double sd_a, int64_t n_a, double mean_b, double sd_b,
                            int64_t n_b) {
  Significance s;
  s.n_before = n_a;
  s.n_after = n_b;
  if (n_a < 2 || n_b < 2) {
    s.text = absl::StrFormat(
        "single run (n=%d before, n=%d after): a single run cannot support a significance call; "
        "use 'run --repeat N' or 'infer --repeat N' (N >= 2) on both sides",
        n_a, n_b);
    return s;
  }
  s.available = true;
  const double se =
      std::sqrt(sd_a * sd_a / static_cast<double>(n_a) + sd_b * sd_b / static_cast<double>(n_b));
  s.abs_diff = std::fabs(mean_b - mean_a);
  s.two_se = 2 * se;
  s.significant = s.abs_diff > s.two_se;
  s.text = absl::StrFormat(
      "img_per_s mean %.2f (n=%d, sd %.2f) vs %.2f (n=%d, sd %.2f): |d|=%.2f %s 2*SE=%.2f -> %s",
      mean_a, n_a, sd_a, mean_b, n_b, sd_b, s.abs_diff, s.significant ? ">" : "<=", s.two_se,
      s.significant ? "significant" : "not significant");
  return s;
}

CompareResult Compare(const Profile& a, const Profile& b, const std::string& before_label,
                      const std::string& after_label) {
  CompareResult r;
  r.before_label = before_label;
  r.after_label = after_label;
  const MetricDef& img_per_s = MetricDefOf(MetricId::kImgPerS);
  r.deltas = {{std::string(img_per_s.name), std::string(img_per_s.unit), true, a.img_per_s,
               b.img_per_s},
              {"ms_per_image", "ms", false, MsPerImage(a), MsPerImage(b)}};
  // Every metric the table says compare judges, by its profile.json key; n/a stays n/a (a CPU
  // job's GPU metrics are null on both sides, never "worse").
  for (const MetricDef& d : MetricTable()) {
    if (d.better == MetricBetter::kNone || d.name == img_per_s.name) continue;
    const OptDouble before = MetricValueOf(d, a).AsDouble(), after = MetricValueOf(d, b).AsDouble();
    // Nothing to judge: absent on both sides, or 0 on both (no communication in either run).
    if (!before && !after) continue;
    if (before == 0.0 && after == 0.0) continue;
    const std::string_view key = d.object.empty() && !d.field.empty() ? d.field : d.name;
    r.deltas.push_back(
        {std::string(key), std::string(d.unit), d.better == MetricBetter::kHigher, before, after});
  }
  if (a.latency && b.latency) {
    using Id = InferenceMetricId;
    for (const Id id : {Id::kLatencyP50Ms, Id::kLatencyP99Ms}) {
      const InferenceMetricDef& d = InferenceMetricDefOf(id);
      r.deltas.push_back({std::string(d.name), std::string(d.unit), false, d.get(a), d.get(b)});
    }
  }
  r.bound_before = a.bound;
  r.bound_after = b.bound;
  const TrustAssessment ta = AssessTrust(a), tb = AssessTrust(b);
  r.trust_before = ta.checked ? TrustSummary(ta) : "";
  r.trust_after = tb.checked ? TrustSummary(tb) : "";
  r.trust_doubt = (ta.checked && ta.confidence != kConfidenceHigh) ||
                  (tb.checked && tb.confidence != kConfidenceHigh);
  r.warnings = CompareMismatches(a, b);
  r.python = PythonCompareOf(a, b);
  // The standard error needs each side's sample sd: the files store the population sd (the
  // Python tool's pstdev, and ours), converted here by each file's own definition.
  r.significance =
      SignificanceOf(a.img_per_s.value_or(0), ImgPerSSampleSd(a), a.repeat.img_per_s_n.value_or(1),
                     b.img_per_s.value_or(0), ImgPerSSampleSd(b), b.repeat.img_per_s_n.value_or(1));
  return r;
}

namespace {

struct Setting {
  std::string name;
  std::optional<std::string> value;  // absent: unknown (a raw trace records no config)
};

std::optional<std::string> ConfigText(const rapidjson::Document& d, const char* key) {
  if (!d.IsObject()) return std::nullopt;
  auto it = d.FindMember(key);
  if (it == d.MemberEnd() || it->value.IsNull()) return std::nullopt;
  const rapidjson::Value& v = it->value;
  if (v.IsString()) return std::string(v.GetString(), v.GetStringLength());
  if (v.IsBool()) return std::string(v.GetBool() ? "true" : "false");
  if (v.IsInt64()) return absl::StrCat(v.GetInt64());
  if (v.IsNumber()) return absl::StrCat(v.GetDouble());
  return std::nullopt;
}

// The weights' file name without its directory and a weights extension: the same checkpoint in
// two CI worktrees (base and head) is one model.
std::string ModelName(const std::string& model) {
  std::string name = model.substr(model.find_last_of('/') + 1);
  for (const char* ext : {".pt", ".pth", ".ckpt", ".safetensors"}) {
    const std::string_view e(ext);
    if (name.size() > e.size() && name.compare(name.size() - e.size(), e.size(), e) == 0) {
      name.resize(name.size() - e.size());
      break;
    }
  }
  return name;
}

std::vector<Setting> SettingsOf(const Profile& p) {
  rapidjson::Document d;
  if (ParseJson(p.config_json, &d).IsError()) d.SetObject();
  const bool inference = p.mode == "inference" || ConfigText(d, "mode") == "inference";
  std::vector<Setting> out;
  out.push_back({"mode", p.source_kind == "trace" && !p.mode
                             ? std::nullopt
                             : std::optional<std::string>(inference ? "inference" : "training")});
  out.push_back(
      {"model", p.model.empty() ? std::nullopt : std::optional<std::string>(ModelName(p.model))});
  out.push_back({"size", ConfigText(d, "size")});
  out.push_back({"imgsz", ConfigText(d, "imgsz")});
  std::optional<std::string> batch = ConfigText(d, "batch");
  if (!batch && p.batch) batch = absl::StrCat(*p.batch);
  out.push_back({"batch", batch});
  std::optional<std::string> device = ConfigText(d, "device");
  if (!device && p.device) device = p.device->type;
  out.push_back({"device", device});
  std::optional<std::string> precision;
  if (inference) {
    if (auto half = ConfigText(d, "half")) {
      precision = *half == "true"
                      ? absl::StrCat("half (", ConfigText(d, "amp_dtype").value_or("float16"), ")")
                      : std::string("float32");
    }
  } else if (auto dtype = ConfigText(d, "amp_dtype")) {
    precision = absl::StrCat("amp ", *dtype);
  } else if (auto amp = ConfigText(d, "amp")) {
    precision = *amp == "true" && !ConfigText(d, "amp_note") ? "amp" : "float32";
  }
  out.push_back({"precision", precision});
  return out;
}

}  // namespace

std::vector<SettingMismatch> SettingMismatches(const Profile& before, const Profile& after) {
  const std::vector<Setting> a = SettingsOf(before), b = SettingsOf(after);
  std::vector<SettingMismatch> out;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!a[i].value || !b[i].value || *a[i].value == *b[i].value) continue;
    out.push_back({a[i].name, *a[i].value, *b[i].value});
  }
  return out;
}

bool IsPerImageLever(const std::string& setting) {
  return setting == "batch" || setting == "precision";
}

std::vector<std::string> CompareMismatches(const Profile& before, const Profile& after) {
  std::vector<std::string> out;
  for (const SettingMismatch& m : SettingMismatches(before, after)) {
    std::string line =
        absl::StrCat("different ", m.name, ": ", m.before, " before, ", m.after, " after; ");
    if (m.name == "batch") {
      absl::StrAppend(&line,
                      "a lever: compare the per-image figures (img_per_s, ms_per_image); "
                      "per-step ones (step_ms, latency, launches and host overhead per "
                      "step) grow with the batch");
    } else if (IsPerImageLever(m.name)) {
      absl::StrAppend(&line, "a lever: compare the per-image figures (img_per_s, ms_per_image)");
    } else {
      absl::StrAppend(&line, "the numbers are not like for like");
    }
    out.push_back(std::move(line));
  }
  return out;
}

}  // namespace libreyolo
