#include "common/readers/compare_view.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/json/json_writer.h"
#include "common/render/text_table.h"

namespace libreyolo {
namespace {

std::string Verdict(const CompareDelta& d) {
  const OptDouble delta = d.delta();
  if (!delta || *delta == 0 || !d.directional) return "";
  const bool better = d.higher_is_better ? *delta > 0 : *delta < 0;
  return better ? "better" : "worse";
}

// {"before": x, "after": y}
void BeforeAfter(JsonWriter& w, std::string_view key, const OptDouble (&v)[2]) {
  w.Key(key).BeginObject().Field("before", v[0]).Field("after", v[1]).EndObject();
}

// The Python LibreYOLO's blocks, keys and values as its compare --json prints them.
void WritePythonBlocks(JsonWriter& w, const PythonCompareBlocks& py) {
  w.Key("img_per_s").BeginObject().Field("before", py.img_per_s[0]).Field("after", py.img_per_s[1]);
  w.Key("std").BeginArray();
  for (const OptDouble& s : py.img_per_s_std) {
    if (s) {
      w.Double(*s);
    } else {
      w.Null();
    }
  }
  w.EndArray().Key("n").BeginArray().Int(py.img_per_s_n[0]).Int(py.img_per_s_n[1]).EndArray();
  w.Field("significant", py.significant).Field("significance", py.significance).EndObject();
  BeforeAfter(w, "ms_per_image", py.ms_per_image);
  BeforeAfter(w, "gpu_util", py.gpu_util);
  BeforeAfter(w, "host_overhead_ms_per_step", py.host_overhead_ms_per_step);
  BeforeAfter(w, "launches_per_step", py.launches_per_step);
}

}  // namespace

std::string RenderCompareText(const CompareResult& r) {
  // The call first: the gate's verdict (--fail-if-slower), significance, then every setting the
  // two runs do not share.
  std::string out;
  if (r.gate) {
    absl::StrAppend(&out, "gate: ", GateVerdictName(r.gate->verdict), " (exit ",
                    GateExitCode(r.gate->verdict), "): ", r.gate->reason, "\n");
  }
  absl::StrAppend(&out, "significance: ", r.significance.text, "\n");
  for (const std::string& w : r.warnings) absl::StrAppend(&out, "warning: ", w, "\n");
  if (r.trust_doubt) {
    absl::StrAppend(&out, "trust: before ", r.trust_before.empty() ? "not checked" : r.trust_before,
                    "; after ", r.trust_after.empty() ? "not checked" : r.trust_after, "\n");
  }
  absl::StrAppend(&out, "\nbefore: ", r.before_label, "\nafter:  ", r.after_label, "\n\n");
  TextTable t({{"metric", TextTable::Align::kLeft},
               {"before"},
               {"after"},
               {"delta"},
               {"change"},
               {"", TextTable::Align::kLeft}});
  for (const CompareDelta& d : r.deltas) {
    if (!d.before && !d.after) continue;
    const OptDouble pct = d.pct();
    t.AddRow({d.metric, Fmt(d.before, 3), Fmt(d.after, 3), Fmt(d.delta(), 3),
              pct ? absl::StrFormat("%+.1f %%", *pct) : "n/a", Verdict(d)});
  }
  t.AddRow({"bound", r.bound_before.empty() ? "n/a" : r.bound_before,
            r.bound_after.empty() ? "n/a" : r.bound_after, "", "",
            r.bound_before == r.bound_after ? "" : "changed"});
  out += t.Render(0);
  return out;
}

std::string RenderCompareJson(const CompareResult& r) {
  JsonWriter w;
  w.BeginObject().Field("before", r.before_label).Field("after", r.after_label);
  w.Key("warnings").BeginArray();
  for (const std::string& m : r.warnings) w.String(m);
  w.EndArray();
  w.Key("deltas").BeginArray();
  for (const CompareDelta& d : r.deltas) {
    w.BeginObject()
        .Field("metric", d.metric)
        .Field("unit", d.unit)
        .Field("before", d.before)
        .Field("after", d.after)
        .Field("delta", d.delta())
        .Field("pct", d.pct())
        .Key("higher_is_better");
    if (d.directional) {
      w.Bool(d.higher_is_better);
    } else {
      w.Null();
    }
    w.EndObject();
  }
  w.EndArray();
  w.Key("trust").BeginObject()
      .Field("before", r.trust_before.empty() ? std::optional<std::string>() : r.trust_before)
      .Field("after", r.trust_after.empty() ? std::optional<std::string>() : r.trust_after)
      .Field("doubt", r.trust_doubt)
      .EndObject();
  w.Key("bound")
      .BeginObject()
      .Field("before", r.bound_before)
      .Field("after", r.bound_after)
      .EndObject();
  if (r.python) WritePythonBlocks(w, *r.python);
  const Significance& s = r.significance;
  w.Key("img_per_s_significance").BeginObject().Field("available", s.available);
  if (s.available) {
    w.Field("significant", s.significant).Field("abs_diff", s.abs_diff).Field("two_se", s.two_se);
  } else {
    w.Key("significant").Null();
  }
  w.Field("n_before", s.n_before)
      .Field("n_after", s.n_after)
      .Field("significance", s.text)
      .EndObject();
  if (r.gate) {
    const CompareGate& g = *r.gate;
    w.Key("gate")
        .BeginObject()
        .Field("verdict", GateVerdictName(g.verdict))
        .Field("exit_code", static_cast<int64_t>(GateExitCode(g.verdict)))
        .Field("fail_if_slower_pct", g.fail_if_slower_pct)
        .Field("job_drift_pct", g.job_drift_pct)
        .Field("pair_drift_pct", g.pair_drift_pct)
        .Field("img_per_s_change_pct", g.change_pct)
        .Field("interval_low_pct", g.low_pct)
        .Field("interval_high_pct", g.high_pct)
        .Field("n_before", g.n_before)
        .Field("n_after", g.n_after)
        .Field("reason", g.reason)
        .EndObject();
  }
  w.EndObject();
  return w.Take();
}

}  // namespace libreyolo
