#include "common/readers/ops_view.h"

#include <algorithm>
#include <functional>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/json/json_read.h"
#include "common/json/json_writer.h"
#include "common/readers/phases_view.h"
#include "common/render/terminal_text.h"
#include "common/render/text_table.h"
#include "rapidjson/document.h"

namespace libreyolo {
namespace {

using Key = std::function<double(const OpRow&)>;

double Avg(const OpRow& r) { return r.count_per_step > 0 ? r.ms_per_step / r.count_per_step : 0; }

const std::vector<std::pair<std::string, Key>>& SortTable() {
  static const auto* table = new std::vector<std::pair<std::string, Key>>{
      {"cpu_time_total", [](const OpRow& r) { return r.ms_per_step; }},
      {"self_cpu_time_total", [](const OpRow& r) { return r.self_cpu_ms_per_step.value_or(0); }},
      {"cpu_time_avg", Avg},
      {"count", [](const OpRow& r) { return r.count_per_step; }},
      {"self_cpu_memory_usage", [](const OpRow& r) { return r.self_cpu_mem_bytes.value_or(0); }},
      {"cpu_memory_usage", [](const OpRow& r) { return r.cpu_mem_bytes.value_or(0); }},
      {"flops", [](const OpRow& r) { return r.flops.value_or(0); }},
      {"device_time_total", [](const OpRow& r) { return r.device_ms_per_step.value_or(0); }},
      {"self_device_time_total",
       [](const OpRow& r) { return r.self_device_ms_per_step.value_or(0); }},
      {"device_memory_usage", [](const OpRow& r) { return r.device_mem_bytes.value_or(0); }},
      {"self_device_memory_usage",
       [](const OpRow& r) { return r.self_device_mem_bytes.value_or(0); }},
  };
  return *table;
}

bool AnyNonZero(const std::vector<OpRow>& rows, OptDouble OpRow::*field) {
  return std::any_of(rows.begin(), rows.end(),
                     [field](const OpRow& r) { return (r.*field).value_or(0) != 0; });
}

}  // namespace

const std::vector<std::string>& OpSortKeys() {
  static const auto* keys = [] {
    auto* k = new std::vector<std::string>;
    for (const auto& [name, fn] : SortTable()) k->push_back(name);
    return k;
  }();
  return *keys;
}

namespace {

// Why a profile holds no FLOPs, in the words of its own profiler record (issue 22: a job that
// had asked for FLOPs was told it ran without --with-flops).
std::string WhyNoFlops(const std::string& profiler_json) {
  const rapidjson::Document d = JsonOrNull(profiler_json);
  if (!d.IsObject()) return "recorded without --with-flops";
  if (auto it = d.FindMember("with_flops_note"); it != d.MemberEnd() && it->value.IsString()) {
    return it->value.GetString();
  }
  if (auto it = d.FindMember("switch_notes"); it != d.MemberEnd() && it->value.IsArray()) {
    for (const auto& n : it->value.GetArray()) {
      if (n.IsString() && absl::StrContains(n.GetString(), "with_flops")) return n.GetString();
    }
  }
  if (auto it = d.FindMember("auto_disabled"); it != d.MemberEnd() && it->value.IsArray()) {
    for (const auto& n : it->value.GetArray()) {
      if (n.IsString() && std::string(n.GetString()) == "with_flops") {
        return "the overhead budget turned with_flops off (auto_disabled); --with-flops keeps it";
      }
    }
  }
  return "recorded without --with-flops";
}

}  // namespace

absl::StatusOr<OpsView> BuildOps(const Profile& p, const OpsOptions& o, const std::string& source) {
  const Key* key = nullptr;
  for (const auto& [name, fn] : SortTable()) {
    if (name == o.sort) key = &fn;
  }
  if (key == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown --sort '", Excerpt(o.sort),
                     "' for ops; use one of: ", absl::StrJoin(OpSortKeys(), ", ")));
  }
  const std::vector<OpRow>* rows = &p.ops;
  if (o.group_by_input_shape && o.phase.has_value()) {
    return absl::InvalidArgumentError(
        "--group-by-input-shape and --phase cannot be combined; use one of them");
  }
  if (o.group_by_input_shape) {
    if (!p.has_input_shapes || p.ops_by_input_shape.empty()) {
      return absl::FailedPreconditionError(absl::StrCat(
          source, " was recorded without input shapes, so --group-by-input-shape has nothing to "
                  "group by. Record with shapes (libreyolo profile run/infer --record-shapes, or "
                  "torch.profiler.profile(record_shapes=True)) and try again."));
    }
    rows = &p.ops_by_input_shape;
  }
  if (o.phase.has_value()) {
    static const auto* const kNone = new std::vector<OpRow>();
    auto it = p.ops_by_phase.find(*o.phase);
    if (it != p.ops_by_phase.end()) {
      rows = &it->second;
    } else if (ProfileHasPhase(p, *o.phase)) {
      rows = kNone;  // a listed phase with no rows (e.g. a profile made without a trace)
    } else {
      return absl::NotFoundError(absl::StrCat("unknown phase '", Excerpt(*o.phase),
                                              "'; this profile has: ", PhaseNamesForMessage(p)));
    }
  }
  OpsView v;
  v.source = source;
  v.trace = p.trace;
  v.options = o;
  v.rows = *rows;
  v.total_rows = v.rows.size();
  // A sort key the profile has no values for would print "sorted by X" over rows in another
  // order: sort by CPU total instead and say why.
  if (o.sort != "cpu_time_total" && !v.rows.empty() &&
      std::all_of(v.rows.begin(), v.rows.end(), [key](const OpRow& r) { return (*key)(r) == 0; })) {
    const bool flops = o.sort == "flops";
    const bool memory = absl::StrContains(o.sort, "memory");
    const bool device = absl::StrContains(o.sort, "device");
    v.sort_note = absl::StrCat(
        "the profile has no ", o.sort, " values (",
        flops ? WhyNoFlops(p.profiler_json)
        : memory ? "recorded without --profile-memory"
        : device ? "no GPU time: a CPU job, or recorded without cuda activity"
                 : "all zero",
        "), so rows are sorted by cpu_time_total");
    for (const auto& [name, fn] : SortTable()) {
      if (name == "cpu_time_total") key = &fn;
    }
  }
  v.list_self_cpu_ms_per_step = ListSelfCpuMs(v.rows);
  // A Python LibreYOLO profile (no `tool` object) lists its ops in its own CPU-time order: that
  // order is kept for cpu_time_total, so `ops --json` shows the rows its own `ops` shows.
  const bool python_order =
      p.source_kind == "profile" && p.tool_name.empty() && v.sort_note.empty() &&
      o.sort == "cpu_time_total";
  if (!python_order) {
    std::stable_sort(v.rows.begin(), v.rows.end(), [key](const OpRow& a, const OpRow& b) {
      return (*key)(a) > (*key)(b);
    });
  }
  if (o.top > 0 && v.rows.size() > static_cast<size_t>(o.top)) {
    v.rows.resize(static_cast<size_t>(o.top));
  }
  v.show_memory = AnyNonZero(*rows, &OpRow::cpu_mem_bytes) ||
                  AnyNonZero(*rows, &OpRow::self_cpu_mem_bytes);
  v.show_device = AnyNonZero(*rows, &OpRow::device_ms_per_step) ||
                  AnyNonZero(*rows, &OpRow::device_mem_bytes);
  // No device [memory] event in the trace: device memory is unknown (n/a), not 0 B.
  v.device_memory_recorded = AnyNonZero(*rows, &OpRow::device_mem_bytes) ||
                             AnyNonZero(*rows, &OpRow::self_device_mem_bytes);
  v.show_flops = AnyNonZero(*rows, &OpRow::flops);
  v.self_cpu_total_ms_per_step = p.self_cpu_total_ms_per_step;
  v.self_device_total_ms_per_step = p.self_device_total_ms_per_step;
  v.real_steps = p.real_steps;
  v.peak_vram_mb = p.peak_vram_mb;
  v.peak_reserved_mb = p.peak_reserved_mb;
  v.flops_per_step = p.flops_per_step;
  v.achieved_tflops = p.achieved_tflops;
  return v;
}

OptDouble ListSelfCpuMs(const std::vector<OpRow>& rows) {
  double sum = 0;
  for (const OpRow& r : rows) {
    if (!r.self_cpu_ms_per_step.has_value()) return std::nullopt;
    sum += *r.self_cpu_ms_per_step;
  }
  return rows.empty() ? std::nullopt : OptDouble(sum);
}

OptDouble PctOfSelfCpu(const OpRow& r, OptDouble list_self_cpu_ms) {
  if (!r.self_cpu_ms_per_step || !list_self_cpu_ms || *list_self_cpu_ms <= 0) return std::nullopt;
  return 100.0 * *r.self_cpu_ms_per_step / *list_self_cpu_ms;
}

std::string RenderOpsText(const OpsView& v) {
  if (v.rows.empty()) {
    return absl::StrCat("no CPU ops in ", v.source,
                        v.options.phase ? absl::StrCat(" (phase ", *v.options.phase, ")") : "",
                        "\n");
  }
  using A = TextTable::Align;
  std::vector<TextTable::Column> cols = {{"op", A::kLeft, 60}};
  if (v.options.group_by_input_shape) cols.push_back({"input shapes", A::kLeft, 50});
  for (const char* h : {"calls/step", "CPU total ms", "self CPU ms", "CPU avg us", "self CPU %", "% CPU ops"}) {
    cols.push_back({h});
  }
  if (v.show_memory) {
    cols.push_back({"CPU mem"});
    cols.push_back({"self CPU mem"});
  }
  if (v.show_device) {
    cols.push_back({"device total ms"});
    cols.push_back({"self device ms"});
    cols.push_back({"device mem"});
    cols.push_back({"self device mem"});
  }
  if (v.show_flops) cols.push_back({"FLOPs/step"});
  TextTable t(cols);
  for (const OpRow& r : v.rows) {
    std::vector<std::string> cells = {r.op};
    if (v.options.group_by_input_shape) cells.push_back(r.input_shapes);
    cells.push_back(Fmt(r.count_per_step, 1));
    cells.push_back(Fmt(r.ms_per_step, 3));
    cells.push_back(Fmt(r.self_cpu_ms_per_step, 3));
    cells.push_back(Fmt(r.count_per_step > 0 ? OptDouble(1000 * r.ms_per_step / r.count_per_step)
                                             : std::nullopt,
                        1));
    // self CPU % = pct_of_self_cpu (sums to 100); % CPU ops = pct_of_cpu_ops, the Python tool's
    // share of summed CPU totals (nested ops counted at every level, so it can exceed self %).
    cells.push_back(Fmt(PctOfSelfCpu(r, v.list_self_cpu_ms_per_step), 2));
    cells.push_back(Fmt(r.pct_of_cpu_ops, 2));
    if (v.show_memory) {
      cells.push_back(FmtBytes(r.cpu_mem_bytes));
      cells.push_back(FmtBytes(r.self_cpu_mem_bytes));
    }
    if (v.show_device) {
      cells.push_back(Fmt(r.device_ms_per_step, 3));
      cells.push_back(Fmt(r.self_device_ms_per_step, 3));
      cells.push_back(v.device_memory_recorded ? FmtBytes(r.device_mem_bytes) : "n/a");
      cells.push_back(v.device_memory_recorded ? FmtBytes(r.self_device_mem_bytes) : "n/a");
    }
    if (v.show_flops) cells.push_back(FmtFlops(r.flops));
    t.AddRow(std::move(cells));
  }
  std::string out = t.Render(0);
  absl::StrAppend(&out, "showing ", v.rows.size(), " of ", v.total_rows, " ops, sorted by ",
                  v.sort_note.empty() ? v.options.sort : "cpu_time_total",
                  "; all values per step\n");
  if (!v.sort_note.empty()) absl::StrAppend(&out, "note: --sort ", v.options.sort, ": ", v.sort_note, "\n");
  if (v.show_device && !v.device_memory_recorded) {
    out += "note: no device memory events in this trace (recorded without profile_memory): device "
           "memory is n/a\n";
  }
  absl::StrAppend(&out, "Self CPU time total: ", FmtUnit(v.self_cpu_total_ms_per_step, "ms", 3),
                  " per step");
  if (v.real_steps && v.self_cpu_total_ms_per_step) {
    absl::StrAppend(&out, " (", Fmt(*v.self_cpu_total_ms_per_step *
                                        static_cast<double>(*v.real_steps), 3),
                    " ms over ", *v.real_steps, " steps)");
  }
  out += "\n";
  if (!v.rows.front().self_cpu_ms_per_step) {
    out += "note: this profile records no self CPU time (Python LibreYOLO): self CPU columns are "
           "n/a.\n";
  }
  if (v.show_device) {
    absl::StrAppend(&out, "Self device time total: ",
                    FmtUnit(v.self_device_total_ms_per_step, "ms", 3), " per step\n");
  }
  if (v.peak_vram_mb) {
    absl::StrAppend(&out, "Peak device memory: allocated ", FmtUnit(v.peak_vram_mb, "MB", 1),
                    ", reserved ", FmtUnit(v.peak_reserved_mb, "MB", 1), "\n");
  }
  if (v.flops_per_step) {
    absl::StrAppend(&out, "FLOPs: ", FmtFlops(v.flops_per_step), " per step, achieved ",
                    FmtUnit(v.achieved_tflops, "TFLOP/s", 3), "\n");
  }
  return out;
}

std::string RenderOpsJson(const OpsView& v) {
  JsonWriter w;
  w.BeginObject().Field("source", v.source).Field("trace", v.trace)
      .Field("phase", v.options.phase)
      .Field("sort", v.sort_note.empty() ? v.options.sort : std::string("cpu_time_total"))
      .Field("sort_requested", v.options.sort)
      .Field("sort_note", v.sort_note.empty() ? std::optional<std::string>() : v.sort_note)
      .Field("group_by_input_shape", v.options.group_by_input_shape)
      .Field("total_rows", static_cast<int64_t>(v.total_rows))
      .Field("self_cpu_total_ms_per_step", v.self_cpu_total_ms_per_step)
      .Field("self_device_total_ms_per_step", v.self_device_total_ms_per_step)
      .Field("peak_vram_mb", v.peak_vram_mb).Field("peak_reserved_mb", v.peak_reserved_mb)
      .Field("flops_per_step", v.flops_per_step).Field("achieved_tflops", v.achieved_tflops);
  w.Key("ops").BeginArray();
  for (const OpRow& r : v.rows) {
    w.BeginObject().Field("op", r.op);
    if (v.options.group_by_input_shape) w.Field("input_shapes", r.input_shapes);
    w.Field("count_per_step", r.count_per_step).Field("ms_per_step", r.ms_per_step)
        .Field("self_cpu_ms_per_step", r.self_cpu_ms_per_step)
        .Field("pct_of_cpu_ops", r.pct_of_cpu_ops)
        .Field("pct_of_self_cpu", PctOfSelfCpu(r, v.list_self_cpu_ms_per_step))
        .Field("cpu_mem_bytes", r.cpu_mem_bytes).Field("self_cpu_mem_bytes", r.self_cpu_mem_bytes)
        .Field("device_ms_per_step", r.device_ms_per_step)
        .Field("self_device_ms_per_step", r.self_device_ms_per_step)
        .Field("device_mem_bytes", v.device_memory_recorded ? r.device_mem_bytes : std::nullopt)
        .Field("self_device_mem_bytes",
               v.device_memory_recorded ? r.self_device_mem_bytes : std::nullopt).Field("flops", r.flops)
        .EndObject();
  }
  w.EndArray().EndObject();
  return w.Take();
}

}  // namespace libreyolo
