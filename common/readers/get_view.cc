#include "common/readers/get_view.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/json/json_writer.h"
#include "common/render/terminal_text.h"
#include "common/render/text_table.h"

namespace libreyolo {
namespace {

std::string ValueText(const MetricValue& m) {
  if (m.text) return *m.text;
  if (m.flag) return *m.flag ? "true" : "false";
  if (m.raw_json) return *m.raw_json;
  if (m.count) return absl::StrCat(*m.count);
  if (m.number) {
    // Shortest text that round-trips, so scripts get the stored value exactly.
    std::string s = absl::StrFormat("%.10g", *m.number);
    return s;
  }
  return "n/a";
}

}  // namespace

absl::StatusOr<GetView> BuildGet(const Profile& p, const std::optional<std::string>& field,
                                 const std::string& source) {
  GetView v;
  std::vector<MetricValue> all = FlatMetrics(p);
  if (!field.has_value()) {
    v.metrics = std::move(all);
    return v;
  }
  for (MetricValue& m : all) {
    if (m.name == *field) {
      v.single = true;
      v.metrics.push_back(std::move(m));
      return v;
    }
  }
  return absl::NotFoundError(absl::StrCat("unknown metric '", Excerpt(*field),
                                          "'. run 'libreyolo profile get ", source,
                                          "' to list metrics."));
}

std::string RenderGetText(const GetView& v) {
  if (v.single) return ValueText(v.metrics.front()) + "\n";
  TextTable t({{"metric", TextTable::Align::kLeft}, {"value"}, {"unit", TextTable::Align::kLeft}});
  for (const MetricValue& m : v.metrics) t.AddRow({m.name, ValueText(m), m.unit});
  return t.Render(0);
}

std::string RenderGetJson(const GetView& v) {
  JsonWriter w;
  if (v.single) {
    const MetricValue& m = v.metrics.front();
    // {name: value} first, as the Python tool prints it; then ours (a metric named like one of
    // ours, which no table metric is, is not written twice).
    w.BeginObject();
    if (m.name != "metric" && m.name != "value" && m.name != "unit") {
      w.Key(m.name);
      WriteMetricValue(w, m);
    }
    w.Field("metric", m.name).Key("value");
    WriteMetricValue(w, m);
    w.Field("unit", m.unit).EndObject();
    return w.Take();
  }
  w.BeginObject().Key("metrics").BeginObject();
  for (const MetricValue& m : v.metrics) {
    w.Key(m.name);
    WriteMetricValue(w, m);
  }
  w.EndObject().EndObject();
  return w.Take();
}

}  // namespace libreyolo
