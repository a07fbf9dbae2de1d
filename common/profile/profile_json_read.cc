#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/json/json_read.h"
#include "common/profile/metric_table.h"
#include "common/profile/profile_json.h"
#include "common/status/status_macros.h"

namespace libreyolo {
namespace {

using rapidjson::Value;

// Values are written back as read: NaN and Infinity (which Python's json writes and we accept)
// stay as they are instead of cutting the output short.
std::string ToJson(const Value& v) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer, rapidjson::UTF8<>, rapidjson::UTF8<>,
                    rapidjson::CrtAllocator, rapidjson::kWriteNanAndInfFlag>
      w(buf);
  v.Accept(w);
  return std::string(buf.GetString(), buf.GetSize());
}

// Reads typed fields out of a JSON object; the first wrong-typed field becomes the error.
class FieldReader {
 public:
  FieldReader(const std::string& what, absl::Status* status) : what_(what), status_(status) {}

  const Value* Find(const Value& obj, const char* key) const {
    if (!obj.IsObject()) return nullptr;
    auto it = obj.FindMember(key);
    if (it == obj.MemberEnd() || it->value.IsNull()) return nullptr;
    return &it->value;
  }

  void Fail(const std::string& path, const char* expected) {
    if (status_->ok()) {
      *status_ = absl::InvalidArgumentError(
          absl::StrCat(what_, ": key \"", path, "\" should be ", expected,
                       "; the profile is damaged: re-run `libreyolo profile` to write it again"));
    }
  }

  OptDouble Double(const Value& obj, const char* key, const std::string& ctx = "") {
    const Value* v = Find(obj, key);
    if (v == nullptr) return std::nullopt;
    if (v->IsBool()) return v->GetBool() ? 1.0 : 0.0;  // Python writes True/False as numbers too
    if (!v->IsNumber()) {
      Fail(ctx + key, "a number");
      return std::nullopt;
    }
    return v->GetDouble();
  }
  double DoubleOr(const Value& obj, const char* key, double def, const std::string& ctx = "") {
    return Double(obj, key, ctx).value_or(def);
  }
  std::optional<int64_t> Int(const Value& obj, const char* key, const std::string& ctx = "") {
    const OptDouble d = Double(obj, key, ctx);
    if (!d.has_value()) return std::nullopt;
    return CountFromDouble(std::round(*d));
  }
  std::optional<bool> Bool(const Value& obj, const char* key, const std::string& ctx = "") {
    const Value* v = Find(obj, key);
    if (v == nullptr) return std::nullopt;
    if (v->IsBool()) return v->GetBool();
    if (v->IsNumber()) return v->GetDouble() != 0;
    Fail(ctx + key, "true or false");
    return std::nullopt;
  }
  std::optional<std::string> String(const Value& obj, const char* key,
                                    const std::string& ctx = "") {
    const Value* v = Find(obj, key);
    if (v == nullptr) return std::nullopt;
    if (!v->IsString()) {
      Fail(ctx + key, "a string");
      return std::nullopt;
    }
    return std::string(v->GetString(), v->GetStringLength());
  }
  const Value* Array(const Value& obj, const char* key, const std::string& ctx = "") {
    const Value* v = Find(obj, key);
    if (v == nullptr) return nullptr;
    if (!v->IsArray()) {
      Fail(ctx + key, "a list");
      return nullptr;
    }
    return v;
  }
  // A list of numbers, each element checked: one that is not a number (or that `admits`
  // refuses) fails the read, naming its index, rather than being dropped, since readers print
  // an element's index as the file's (`latency`'s slowest iterations).
  std::vector<double> Numbers(const Value& obj, const char* key, const std::string& ctx = "",
                              bool (*admits)(double) = nullptr,
                              const char* expected = "a number") {
    std::vector<double> out;
    const Value* list = Array(obj, key, ctx);
    if (list == nullptr) return out;
    for (const Value& v : list->GetArray()) {
      if (!v.IsNumber() || (admits != nullptr && !admits(v.GetDouble()))) {
        Fail(absl::StrCat(ctx, key, "[", out.size(), "]"), expected);
        return {};
      }
      out.push_back(v.GetDouble());
    }
    return out;
  }
  const Value* Object(const Value& obj, const char* key) {
    const Value* v = Find(obj, key);
    if (v == nullptr) return nullptr;
    if (!v->IsObject()) {
      Fail(key, "an object");
      return nullptr;
    }
    return v;
  }

 private:
  std::string what_;
  absl::Status* status_;
};

// One metric's value, read as its kind says (a count also from an older file's 227.0).
MetricCell ReadCell(FieldReader& r, const Value& obj, const MetricDef& d, const std::string& ctx) {
  const std::string key(d.field);
  switch (d.kind) {
    case MetricKind::kNumber:
      return MetricCell::Number(r.Double(obj, key.c_str(), ctx));
    case MetricKind::kCount: {
      const OptDouble v = r.Double(obj, key.c_str(), ctx);
      if (!v || !std::isfinite(*v)) return {};
      return MetricCell::Count(CountFromDouble(*v));
    }
    case MetricKind::kFlag:
      return MetricCell::Flag(r.Bool(obj, key.c_str(), ctx));
    case MetricKind::kText:
      return MetricCell::Text(r.String(obj, key.c_str(), ctx));
  }
  return {};
}

KernelRow ReadKernelRow(FieldReader& r, const Value& v, const std::string& ctx) {
  KernelRow k;
  k.raw_name = r.String(v, "raw_name", ctx).value_or("");
  k.kernel = r.String(v, "kernel", ctx).value_or(k.raw_name);
  if (k.raw_name.empty()) k.raw_name = k.kernel;
  k.category = r.String(v, "category", ctx).value_or("other");
  k.tensorcore = r.Bool(v, "tensorcore", ctx).value_or(false);
  k.ms_per_step = r.DoubleOr(v, "ms_per_step", 0, ctx);
  k.pct_of_gpu = r.DoubleOr(v, "pct_of_gpu", 0, ctx);
  k.count_per_step = std::floor(r.DoubleOr(v, "count_per_step", 0, ctx));
  return k;
}

std::vector<KernelRow> ReadKernelRows(FieldReader& r, const Value* arr, const std::string& ctx) {
  std::vector<KernelRow> rows;
  if (arr == nullptr) return rows;
  for (const Value& v : arr->GetArray()) {
    if (v.IsObject()) rows.push_back(ReadKernelRow(r, v, ctx));
  }
  return rows;
}

std::vector<OpRow> ReadOpRows(FieldReader& r, const Value* arr, const std::string& ctx) {
  std::vector<OpRow> rows;
  if (arr == nullptr) return rows;
  for (const Value& v : arr->GetArray()) {
    if (!v.IsObject()) continue;
    OpRow o;
    o.op = r.String(v, "op", ctx).value_or("");
    o.input_shapes = r.String(v, "input_shapes", ctx).value_or("");
    o.count_per_step = std::floor(r.DoubleOr(v, "count_per_step", 0, ctx));
    o.ms_per_step = r.DoubleOr(v, "ms_per_step", 0, ctx);
    o.self_cpu_ms_per_step = r.Double(v, "self_cpu_ms_per_step", ctx);
    o.pct_of_cpu_ops = r.Double(v, "pct_of_cpu_ops", ctx);
    o.self_cpu_mem_bytes = r.Double(v, "self_cpu_mem_bytes", ctx);
    o.cpu_mem_bytes = r.Double(v, "cpu_mem_bytes", ctx);
    o.self_device_mem_bytes = r.Double(v, "self_device_mem_bytes", ctx);
    o.device_mem_bytes = r.Double(v, "device_mem_bytes", ctx);
    o.flops = r.Double(v, "flops", ctx);
    o.device_ms_per_step = r.Double(v, "device_ms_per_step", ctx);
    o.self_device_ms_per_step = r.Double(v, "self_device_ms_per_step", ctx);
    rows.push_back(std::move(o));
  }
  return rows;
}

// Deepest nesting of objects/arrays outside strings: Value::Accept and our readers recurse, so
// a hostile file must not nest deeper than a real profile ever does.
int MaxNesting(std::string_view text) {
  int depth = 0, max_depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      max_depth = std::max(max_depth, ++depth);
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return max_depth;
}

constexpr int kMaxProfileDepth = 64;

// ReadProfileJson's stages, each reading its keys in the order the file's errors are reported
// (the first wrong-typed key is the error): the document, what the job was, the scalar metrics,
// the trust checks, the extra metrics, the tables, latency and stages, a repeat's aggregation,
// the provenance (device, tool, profiler, ranks).

// The text parsed into `doc`: not nested too deep, valid JSON, an object.
absl::Status ParseProfileDocument(std::string_view text, const std::string& what,
                                  rapidjson::Document& doc) {
  if (MaxNesting(text) > kMaxProfileDepth) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": nested deeper than ", kMaxProfileDepth, " levels; not a libreyolo profile"));
  }
  if (const rapidjson::ParseResult parsed = ParseJson(text, &doc); parsed.IsError()) {
    return absl::InvalidArgumentError(
        absl::StrCat(NotJsonAt(what, parsed), ". Is the file complete?"));
  }
  if (!doc.IsObject()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": a profile must be a JSON object"));
  }
  return absl::OkStatus();
}

// What the job was: its trace, model, config (and batch), mode and the verdict's reason.
void ReadIdentity(FieldReader& r, const Value& doc, Profile& p) {
  p.trace = r.String(doc, "trace");
  p.model = r.String(doc, "model").value_or("");
  if (const Value* cfg = r.Object(doc, "config")) {
    p.config_json = ToJson(*cfg);
    p.batch = r.Int(*cfg, "batch", "config.");
  }
  p.mode = r.String(doc, "mode");
  p.bound_why = r.String(doc, "bound_why").value_or("");
}

// The scalar metrics, then where older files kept peak VRAM and the unattributed kernels.
void ReadScalarMetrics(FieldReader& r, const Value& doc, Profile& p) {
  // Every scalar metric from its place (metric_table.h).
  for (const MetricDef& d : MetricTable()) {
    if (d.field.empty() || d.set == nullptr) continue;
    const Value* holder = &doc;
    if (!d.object.empty()) {
      holder = r.Object(doc, std::string(d.object).c_str());
      if (holder == nullptr) continue;
    }
    d.set(p, ReadCell(r, *holder, d, d.object.empty() ? "" : std::string(d.object) + "."));
  }
  if (!p.peak_vram_mb) {
    if (const Value* mem = r.Object(doc, "memory")) {
      p.peak_vram_mb = r.Double(*mem, "peak_allocated_mb", "memory.");
    }
  }
  if (const Value* stats = r.Object(doc, "parse_stats")) {
    p.parse_stats.unattributed_kernels =
        r.Int(*stats, "unattributed_kernels", "parse_stats.").value_or(0);
  }
}

// The trace's trust checks.
void ReadTrustChecks(FieldReader& r, const Value& doc, Profile& p) {
  if (const Value* trust = r.Object(doc, "trust")) {
    // The trace's checks; load_steady is derived again from the profile's own numbers.
    if (const Value* checks = r.Array(*trust, "checks")) {
      for (const Value& c : checks->GetArray()) {
        if (!c.IsObject()) continue;
        TrustCheck t{r.String(c, "name", "trust.checks.").value_or(""),
                     r.String(c, "outcome", "trust.checks.").value_or(""),
                     r.String(c, "evidence", "trust.checks.").value_or("")};
        if (!t.name.empty() && t.name != "load_steady") p.trust_checks.push_back(std::move(t));
      }
    }
  }
}

// The metrics object, kept as written (and an older file's ops_per_step from it).
void ReadExtraMetrics(FieldReader& r, const Value& doc, Profile& p) {
  if (const Value* metrics = r.Object(doc, "metrics")) {
    for (const auto& m : metrics->GetObject()) {
      p.extra_metrics_json[std::string(m.name.GetString(), m.name.GetStringLength())] =
          ToJson(m.value);
    }
    if (!p.ops_per_step) {
      if (const OptDouble ops = r.Double(*metrics, "ops_per_step", "metrics.")) {
        p.ops_per_step = *ops;  // a mean (issue 40); the Python tool's are whole
      }
    }
  }
}

// The tables: categories, phases, kernels and ops (by phase, by input shape), uncounted ops.
void ReadTables(FieldReader& r, const Value& doc, Profile& p) {
  if (const Value* cats = r.Array(doc, "categories")) {
    for (const Value& c : cats->GetArray()) {
      if (!c.IsObject()) continue;
      p.categories.push_back(CategoryRow{r.String(c, "name", "categories.").value_or(""),
                                         r.DoubleOr(c, "pct", 0, "categories."),
                                         r.DoubleOr(c, "ms_per_step", 0, "categories.")});
    }
  }
  if (const Value* phases = r.Array(doc, "phases")) {
    for (const Value& v : phases->GetArray()) {
      if (!v.IsObject()) continue;
      PhaseRow row;
      row.phase = r.String(v, "phase", "phases.").value_or("");
      row.gpu_ms_per_step = r.DoubleOr(v, "gpu_ms_per_step", 0, "phases.");
      row.wall_ms_per_step = r.Double(v, "wall_ms_per_step", "phases.");
      row.cpu_ms_per_step = r.Double(v, "cpu_ms_per_step", "phases.");
      row.kernels_per_step = std::floor(r.DoubleOr(v, "kernels_per_step", 0, "phases."));
      row.ops_per_step = std::floor(r.DoubleOr(v, "ops_per_step", 0, "phases."));
      row.unique_kernels = r.Int(v, "unique_kernels", "phases.").value_or(0);
      if (!row.phase.empty()) p.phases.push_back(std::move(row));
    }
  }
  if (const Value* kbp = r.Object(doc, "kernels_by_phase")) {
    for (const auto& m : kbp->GetObject()) {
      if (!m.value.IsArray()) continue;
      p.kernels_by_phase[m.name.GetString()] =
          ReadKernelRows(r, &m.value, "kernels_by_phase.");
    }
  }
  if (const Value* obp = r.Object(doc, "ops_by_phase")) {
    for (const auto& m : obp->GetObject()) {
      if (!m.value.IsArray()) continue;
      p.ops_by_phase[m.name.GetString()] = ReadOpRows(r, &m.value, "ops_by_phase.");
    }
  }
  p.kernels = ReadKernelRows(r, r.Array(doc, "kernels"), "kernels.");
  if (p.kernels.empty()) p.kernels = ReadKernelRows(r, r.Array(doc, "top_kernels"), "top_kernels.");
  p.ops = ReadOpRows(r, r.Array(doc, "ops"), "ops.");
  p.ops_by_input_shape = ReadOpRows(r, r.Array(doc, "ops_by_input_shape"), "ops_by_input_shape.");
  p.has_input_shapes = r.Bool(doc, "has_input_shapes").value_or(!p.ops_by_input_shape.empty());
  if (const Value* uncounted = r.Array(doc, "flops_uncounted_ops")) {
    for (const Value& v : uncounted->GetArray()) {
      if (v.IsString()) p.flops_uncounted_ops.emplace_back(v.GetString(), v.GetStringLength());
    }
  }
}

// An inference profile's latency and its stages.
void ReadLatencyAndStages(FieldReader& r, const Value& doc, Profile& p) {
  if (const Value* lat = r.Object(doc, "latency")) {
    Latency l;
    l.p50_ms = r.DoubleOr(*lat, "p50_ms", 0, "latency.");
    l.p90_ms = r.DoubleOr(*lat, "p90_ms", 0, "latency.");
    l.p99_ms = r.DoubleOr(*lat, "p99_ms", 0, "latency.");
    l.mean_ms = r.DoubleOr(*lat, "mean_ms", 0, "latency.");
    l.min_ms = r.DoubleOr(*lat, "min_ms", 0, "latency.");
    l.max_ms = r.DoubleOr(*lat, "max_ms", 0, "latency.");
    l.n = r.Int(*lat, "n", "latency.").value_or(0);
    l.cuda_event_p50_ms = r.Double(*lat, "cuda_event_p50_ms", "latency.");
    l.cuda_event_mean_ms = r.Double(*lat, "cuda_event_mean_ms", "latency.");
    l.samples_ms = r.Numbers(
        *lat, "samples_ms", "latency.", [](double ms) { return std::isfinite(ms) && ms >= 0; },
        "a time in milliseconds (a finite number >= 0)");
    p.latency = l;
  }
  if (const Value* st = r.Object(doc, "stages_ms")) {
    p.stages_ms = Stages{r.Double(*st, "preprocess", "stages_ms."),
                         r.Double(*st, "forward", "stages_ms."),
                         r.Double(*st, "postprocess", "stages_ms.")};
  }
}

// A repeat profile's trials and aggregation.
void ReadRepeat(FieldReader& r, const Value& doc, Profile& p) {
  p.repeat.img_per_s_std = r.Double(doc, "img_per_s_std");
  p.repeat.img_per_s_n = r.Int(doc, "img_per_s_n");
  p.repeat.img_per_s_trials = r.Numbers(doc, "img_per_s_trials");
  if (const Value* agg = r.Object(doc, "aggregation")) {
    // Ours name the definition; ours before that used the sample sd; the Python tool's pstdev.
    const std::optional<std::string> kind = r.String(*agg, "std", "aggregation.");
    p.repeat.population_std = kind ? *kind != "sample" : !agg->HasMember("metrics");
    if (const Value* files = r.Array(*agg, "profiles")) {
      for (const Value& v : files->GetArray()) {
        if (v.IsString()) p.repeat.profiles.emplace_back(v.GetString(), v.GetStringLength());
      }
    }
    if (const Value* metrics = r.Object(*agg, "metrics")) {
      for (const auto& m : metrics->GetObject()) {
        if (!m.value.IsObject()) continue;
        TrialStat t;
        const std::string where = absl::StrCat("aggregation.metrics.", m.name.GetString(), ".");
        t.mean = r.DoubleOr(m.value, "mean", 0, where);
        t.std = r.DoubleOr(m.value, "std", 0, where);
        t.n = r.Int(m.value, "n", where).value_or(0);
        t.trials = r.Numbers(m.value, "trials", where);
        if (t.n >= 2) p.repeat.metrics[m.name.GetString()] = std::move(t);
      }
    }
  }
}

// Where the profile came from: device, tool, time, the profiler's record, the ranks.
void ReadProvenance(FieldReader& r, const Value& doc, Profile& p) {
  if (const Value* dev = r.Object(doc, "device")) {
    DeviceInfo d;
    d.type = r.String(*dev, "type", "device.").value_or("");
    d.name = r.String(*dev, "name", "device.").value_or("");
    d.index = r.Int(*dev, "index", "device.");
    d.sm_count = r.Int(*dev, "sm_count", "device.");
    d.memory_mb = r.Double(*dev, "memory_mb", "device.");
    p.device = d;
  }
  if (const Value* tool = r.Object(doc, "tool")) {
    p.tool_name = r.String(*tool, "name", "tool.").value_or("");
    p.tool_version = r.String(*tool, "version", "tool.").value_or("");
    p.libtorch_version = r.String(*tool, "libtorch", "tool.").value_or("");
  }
  p.created_at = r.String(doc, "created_at");
  if (const Value* prof = r.Object(doc, "profiler")) p.profiler_json = ToJson(*prof);
  if (const Value* ranks = r.Object(doc, "ranks")) p.ranks_json = ToJson(*ranks);
}

}  // namespace

absl::StatusOr<Profile> ReadProfileJson(std::string_view text, const std::string& what) {
  rapidjson::Document doc;
  RETURN_IF_ERROR(ParseProfileDocument(text, what, doc));
  absl::Status status;
  FieldReader r(what, &status);
  Profile p;
  p.source_kind = "profile";
  p.schema = r.String(doc, "schema").value_or("");
  if (!absl::StartsWith(p.schema, kProfileSchemaPrefix)) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": schema \"", p.schema, "\" is not a libreyolo profile (expected \"",
                     kProfileSchema, "\")"));
  }
  ReadIdentity(r, doc, p);
  ReadScalarMetrics(r, doc, p);
  ReadTrustChecks(r, doc, p);
  ReadExtraMetrics(r, doc, p);
  ReadTables(r, doc, p);
  ReadLatencyAndStages(r, doc, p);
  ReadRepeat(r, doc, p);
  ReadProvenance(r, doc, p);
  if (!status.ok()) return status;
  ApplyMetricRules(p);  // a CPU job's GPU metrics are n/a, whatever an older file wrote
  return p;
}

}  // namespace libreyolo
