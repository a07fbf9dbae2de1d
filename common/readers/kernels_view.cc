#include "common/readers/kernels_view.h"

#include <algorithm>
#include <regex>
#include <tuple>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/analysis/kernel_classify.h"
#include "common/json/json_writer.h"
#include "common/readers/phases_view.h"
#include "common/render/terminal_text.h"
#include "common/render/text_table.h"

namespace libreyolo {

absl::StatusOr<KernelsView> BuildKernels(const Profile& p, const KernelsOptions& o,
                                         const std::string& source) {
  KernelsView v;
  v.source = source;
  v.trace = p.trace;
  v.no_gpu_kernels = p.kernels.empty() && p.kernels_per_step.value_or(0) == 0;
  v.cpu_job = IsCpuJob(p);
  v.options = o;
  if (o.sort != "time" && o.sort != "count" && o.sort != "name") {
    return absl::InvalidArgumentError(absl::StrCat("unknown --sort '", Excerpt(o.sort),
                                                   "' for kernels: use time, count or name"));
  }
  const std::vector<KernelRow>* rows = &p.kernels;
  if (o.phase.has_value()) {
    static const auto* const kNone = new std::vector<KernelRow>();
    auto it = p.kernels_by_phase.find(*o.phase);
    if (it != p.kernels_by_phase.end()) {
      rows = &it->second;
    } else if (ProfileHasPhase(p, *o.phase)) {
      rows = kNone;  // a listed phase with no rows (e.g. a profile made without a trace)
    } else {
      return absl::NotFoundError(absl::StrCat("unknown phase '", Excerpt(*o.phase),
                                              "'; this profile has: ", PhaseNamesForMessage(p)));
    }
  }
  std::optional<std::regex> grep;
  if (o.grep.has_value()) {
    try {
      grep.emplace(*o.grep, std::regex::ECMAScript | std::regex::icase);
    } catch (const std::regex_error& e) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--grep '", Excerpt(*o.grep), "' is not a valid regular expression: ", e.what()));
    }
  }
  for (const KernelRow& k : *rows) {
    if (o.category && !absl::StrContains(k.category, *o.category)) continue;
    if (o.tensorcore_only && !k.tensorcore) continue;
    if (grep && !std::regex_search(k.raw_name, *grep) && !std::regex_search(k.kernel, *grep)) {
      continue;
    }
    v.rows.push_back(k);
    v.matched_ms_per_step += k.ms_per_step;
  }
  if (o.sort == "count") {
    std::stable_sort(v.rows.begin(), v.rows.end(), [](const KernelRow& a, const KernelRow& b) {
      return a.count_per_step > b.count_per_step;
    });
  } else if (o.sort == "name") {
    std::stable_sort(v.rows.begin(), v.rows.end(), [](const KernelRow& a, const KernelRow& b) {
      return std::tie(a.kernel, a.raw_name) < std::tie(b.kernel, b.raw_name);
    });
  } else {
    std::stable_sort(v.rows.begin(), v.rows.end(), [](const KernelRow& a, const KernelRow& b) {
      return a.ms_per_step > b.ms_per_step;
    });
  }
  v.matched = v.rows.size();
  if (o.top > 0 && v.rows.size() > static_cast<size_t>(o.top)) {
    v.rows.resize(static_cast<size_t>(o.top));
  }
  return v;
}

std::string RenderKernelsText(const KernelsView& v) {
  if (v.rows.empty() && v.no_gpu_kernels) {
    return absl::StrCat("no GPU kernels in this profile (", v.source,
                        v.cpu_job ? ": a cpu job" : "",
                        "): see `libreyolo profile ops` for the CPU side\n");
  }
  if (v.rows.empty()) {
    return absl::StrCat("no kernels match in ", v.source,
                        v.options.phase ? absl::StrCat(" (phase ", *v.options.phase, ")") : "",
                        "\n");
  }
  TextTable t({{"#"}, {"% GPU"}, {"ms/step"}, {"calls/step"}, {"TC", TextTable::Align::kLeft},
               {"category", TextTable::Align::kLeft}, {"kernel", TextTable::Align::kLeft, 90}});
  int rank = 0;
  for (const KernelRow& k : v.rows) {
    t.AddRow({absl::StrCat(++rank), Fmt(k.pct_of_gpu, 1), Fmt(k.ms_per_step, 4),
              Fmt(k.count_per_step, 1), k.tensorcore ? "yes" : "", k.category,
              k.kernel == k.raw_name ? k.raw_name : absl::StrCat(k.kernel, ": ", k.raw_name)});
  }
  return absl::StrCat(t.Render(0), "showing ", v.rows.size(), " of ", v.matched,
                      " matching kernels (", Fmt(v.matched_ms_per_step, 3), " ms/step)\n");
}

std::string RenderKernelsJson(const KernelsView& v) {
  JsonWriter w;
  // matched: the rows shown, as the Python tool counts them; matched_all: before the --top cut.
  w.BeginObject().Field("source", v.source).Field("trace", v.trace)
      .Field("phase", v.options.phase).Field("sort", v.options.sort)
      .Field("matched", static_cast<int64_t>(v.rows.size()))
      .Field("matched_all", static_cast<int64_t>(v.matched))
      .Field("matched_ms_per_step", v.matched_ms_per_step);
  w.Key("kernels").BeginArray();
  for (const KernelRow& k : v.rows) {
    w.BeginObject().Field("kernel", k.kernel).Field("raw_name", CutName(k.raw_name))
        .Field("category", k.category).Field("tensorcore", k.tensorcore)
        .Field("ms_per_step", k.ms_per_step).Field("pct_of_gpu", k.pct_of_gpu)
        .Field("count_per_step", k.count_per_step).EndObject();
  }
  w.EndArray().EndObject();
  return w.Take();
}

}  // namespace libreyolo
