#include "common/readers/modules_view.h"

#include <algorithm>
#include <functional>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/json/json_writer.h"
#include "common/render/terminal_text.h"
#include "common/render/text_table.h"

namespace libreyolo {
namespace {

constexpr int kMaxDepth = 64;

bool Known(const std::string& key) {
  const auto& keys = ModuleSortKeys();
  return std::find(keys.begin(), keys.end(), key) != keys.end();
}

}  // namespace

absl::Status CheckModuleDepth(int64_t depth) {
  if (depth >= 1 && depth <= kMaxModuleDepth) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("depth: ", depth, " is outside 1..", kMaxModuleDepth));
}

const std::vector<std::string>& ModuleSortKeys() {
  static const auto* keys = new std::vector<std::string>{
      "order", "cpu_total", "self_cpu", "gpu_total", "self_gpu", "calls", "flops", "name"};
  return *keys;
}

absl::StatusOr<ModulesView> BuildModules(const TraceData& trace, const ModulesOptions& o,
                                         const std::string& source, const std::string& trace_path) {
  if (o.format != "table" && o.format != "folded") {
    return absl::InvalidArgumentError(absl::StrCat("unknown --format '", Excerpt(o.format),
                                                   "' for modules: use table or folded"));
  }
  if (!Known(o.sort)) {
    return absl::InvalidArgumentError(absl::StrCat("unknown --sort '", Excerpt(o.sort),
                                                   "' for modules: use ",
                                                   absl::StrJoin(ModuleSortKeys(), ", ")));
  }
  if (o.depth < 0 || o.depth > kMaxDepth) {
    return absl::InvalidArgumentError(
        absl::StrCat("--depth must be 1..", kMaxDepth,
                     " (path components, e.g. 2 for backbone.conv0), not ", o.depth));
  }
  ModulesView v;
  v.source = source;
  v.trace = trace_path;
  v.options = o;
  v.table = BuildModuleTable(trace, o.depth);
  if (v.table.rows.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "no module scopes in this trace (", trace_path,
        "); run with --with-modules (on by default for `libreyolo profile run` and `infer`)"));
  }
  if ((o.sort == "gpu_total" || o.sort == "self_gpu") && !v.table.has_gpu) {
    return absl::InvalidArgumentError(
        absl::StrCat("--sort ", o.sort,
                     ": this trace has no GPU kernels (a cpu job); sort by cpu_total, "
                     "self_cpu, calls, flops, name or order"));
  }
  if (o.sort == "flops" && !v.table.has_flops) {
    return absl::InvalidArgumentError(
        "--sort flops: this trace has no FLOPs (recorded without --with-flops, which is off by "
        "default)");
  }
  if (o.format == "folded") v.folded = FoldedStacks(trace);
  using Row = ModuleRow;
  std::function<bool(const Row&, const Row&)> less;
  if (o.sort == "cpu_total") {
    less = [](const Row& a, const Row& b) { return a.cpu_ms_per_step > b.cpu_ms_per_step; };
  } else if (o.sort == "self_cpu") {
    less = [](const Row& a, const Row& b) {
      return a.self_cpu_ms_per_step > b.self_cpu_ms_per_step;
    };
  } else if (o.sort == "gpu_total") {
    less = [](const Row& a, const Row& b) { return a.gpu_ms_per_step > b.gpu_ms_per_step; };
  } else if (o.sort == "self_gpu") {
    less = [](const Row& a, const Row& b) {
      return a.self_gpu_ms_per_step > b.self_gpu_ms_per_step;
    };
  } else if (o.sort == "calls") {
    less = [](const Row& a, const Row& b) { return a.calls_per_step > b.calls_per_step; };
  } else if (o.sort == "flops") {
    less = [](const Row& a, const Row& b) {
      return a.flops_per_step.value_or(0) > b.flops_per_step.value_or(0);
    };
  } else if (o.sort == "name") {
    less = [](const Row& a, const Row& b) { return a.path < b.path; };
  }
  if (less) std::stable_sort(v.table.rows.begin(), v.table.rows.end(), less);
  return v;
}

std::string RenderModulesText(const ModulesView& v) {
  if (v.options.format == "folded") return v.folded;
  const ModuleTable& t = v.table;
  const bool nested = v.options.sort == "order";
  std::vector<TextTable::Column> cols = {
      {"module", TextTable::Align::kLeft, 60}, {"calls"}, {"CPU ms"}, {"self CPU ms"}};
  if (t.has_gpu) {
    cols.push_back({"GPU ms"});
    cols.push_back({"self GPU ms"});
    cols.push_back({"kernels"});
  }
  if (t.has_flops) cols.push_back({"FLOPs"});
  cols.push_back({"% step"});
  TextTable table(std::move(cols));
  double self_sum = 0, self_gpu_sum = 0;
  for (const ModuleRow& r : t.rows) {
    self_sum += r.self_cpu_ms_per_step;
    self_gpu_sum += r.self_gpu_ms_per_step;
    std::vector<std::string> cells = {
        nested ? std::string(2 * static_cast<size_t>(std::min(r.depth, 12)), ' ') + r.path : r.path,
        Fmt(r.calls_per_step, 1), Fmt(r.cpu_ms_per_step, 3), Fmt(r.self_cpu_ms_per_step, 3)};
    if (t.has_gpu) {
      cells.push_back(Fmt(r.gpu_ms_per_step, 3));
      cells.push_back(Fmt(r.self_gpu_ms_per_step, 3));
      cells.push_back(Fmt(r.kernels_per_step, 1));
    }
    if (t.has_flops) cells.push_back(FmtFlops(r.flops_per_step));
    cells.push_back(Fmt(r.pct_of_step, 1));
    table.AddRow(std::move(cells));
  }
  std::string out =
      absl::StrCat("modules of ", v.trace, ": per step over ", t.steps, " profiled step",
                   t.steps == 1 ? "" : "s", " (profiled step ", Fmt(t.step_ms, 2), " ms); ",
                   v.options.depth > 0 ? absl::StrCat("depth ", v.options.depth, ", ") : "",
                   "sorted by ", v.options.sort, "\n");
  absl::StrAppend(&out, table.Render(0));
  absl::StrAppend(&out, t.rows.size(), " module paths; their self CPU time adds up to ",
                  Fmt(self_sum, 3), " ms/step, ",
                  Fmt(t.step_ms > 0 ? 100.0 * self_sum / t.step_ms : 0.0, 1),
                  " % of the profiled step");
  if (t.has_gpu) absl::StrAppend(&out, "; self GPU time to ", Fmt(self_gpu_sum, 3), " ms/step");
  absl::StrAppend(&out, "\n");
  if (!t.has_gpu) absl::StrAppend(&out, "no GPU kernels in this trace: GPU columns n/a\n");
  return out;
}

std::string RenderModulesJson(const ModulesView& v) {
  const ModuleTable& t = v.table;
  JsonWriter w;
  w.BeginObject()
      .Field("source", v.source)
      .Field("trace", v.trace)
      .Field("format", v.options.format)
      .Field("steps", t.steps)
      .Field("profiled_step_ms", t.step_ms)
      .Key("depth");
  if (v.options.depth > 0) {
    w.Int(v.options.depth);
  } else {
    w.Null();
  }
  w.Field("sort", v.options.sort).Field("has_gpu", t.has_gpu).Field("has_flops", t.has_flops);
  if (v.options.format == "folded") {
    w.Key("folded").BeginArray();
    const std::vector<std::string> lines = absl::StrSplit(v.folded, '\n', absl::SkipEmpty());
    for (const std::string& line : lines) {
      const size_t sp = line.rfind(' ');
      int64_t us = 0;
      if (sp == std::string::npos || !absl::SimpleAtoi(line.substr(sp + 1), &us)) continue;
      w.BeginObject().Field("stack", line.substr(0, sp)).Field("us", us).EndObject();
    }
    w.EndArray();
  }
  w.Key("modules").BeginArray();
  for (const ModuleRow& r : t.rows) {
    w.BeginObject()
        .Field("module", r.path)
        .Field("depth", static_cast<int64_t>(r.depth))
        .Field("calls_per_step", r.calls_per_step)
        .Field("cpu_ms_per_step", r.cpu_ms_per_step)
        .Field("self_cpu_ms_per_step", r.self_cpu_ms_per_step);
    if (t.has_gpu) {
      w.Field("gpu_ms_per_step", r.gpu_ms_per_step)
          .Field("self_gpu_ms_per_step", r.self_gpu_ms_per_step)
          .Field("kernels_per_step", r.kernels_per_step);
    } else {
      w.Key("gpu_ms_per_step").Null().Key("self_gpu_ms_per_step").Null();
      w.Key("kernels_per_step").Null();
    }
    w.Field("flops_per_step", r.flops_per_step).Field("pct_of_step", r.pct_of_step).EndObject();
  }
  w.EndArray().EndObject();
  return w.Take();
}

}  // namespace libreyolo
