// The inference scalars' table (common/profile/inference_metrics.h, issue 39 §3): its names are
// the Python LibreYOLO's (its own profile's "metrics" object carries them), `get` lists them in
// the table's order with the table's units, a repeat profile's stats keys are table names, and
// docs/metrics.md names each. A misspelt row fails here and in the golden tests.
#include "common/profile/inference_metrics.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/analysis/metric_list.h"
#include "common/analysis/repeat_trials.h"
#include "common/load/load_profile.h"
#include "common/profile/metric_table.h"
#include "rapidjson/document.h"

namespace libreyolo {
namespace {

const std::string kPythonInfer = LIBREYOLO_FIXTURES_DIR "/profiles/libreyolo-python-infer.json";

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in) << path;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(InferenceMetrics, IdsNameTheirRowsAndNamesAreUnique) {
  ASSERT_EQ(InferenceMetricTable().size(), kInferenceMetricCount);
  std::set<std::string_view> names;
  for (size_t i = 0; i < kInferenceMetricCount; ++i) {
    const auto id = static_cast<InferenceMetricId>(i);
    EXPECT_EQ(&InferenceMetricDefOf(id), &InferenceMetricTable()[i]);
    const std::string_view name = InferenceMetricName(id);
    EXPECT_TRUE(names.insert(name).second) << name << " twice";
    EXPECT_EQ(FindMetric(name), nullptr) << name << " is also a metric table row";
  }
}

// The Python tool's own inference profile lists every row `get` lists under the same name, with
// the value we read from its latency / stages_ms objects; `get` lists them in table order.
TEST(InferenceMetrics, GetListsThePythonToolsNamesInTableOrder) {
  absl::StatusOr<Profile> p = LoadProfile(kPythonInfer);
  ASSERT_TRUE(p.ok()) << p.status();
  rapidjson::Document doc;
  doc.Parse(Slurp(kPythonInfer).c_str());
  ASSERT_TRUE(doc.IsObject() && doc.HasMember("metrics"));
  const auto& theirs = doc["metrics"];

  const std::vector<MetricValue> flat = FlatMetrics(*p);
  std::vector<std::string> listed, want;
  for (const MetricValue& m : flat) {
    for (const InferenceMetricDef& d : InferenceMetricTable()) {
      if (m.name == d.name) listed.push_back(m.name);
    }
  }
  for (const InferenceMetricDef& d : InferenceMetricTable()) {
    if (!d.listed) continue;
    want.push_back(std::string(d.name));
    auto it = std::find_if(flat.begin(), flat.end(),
                           [&](const MetricValue& m) { return m.name == d.name; });
    ASSERT_NE(it, flat.end()) << d.name;
    EXPECT_EQ(it->unit, d.unit) << d.name;
    ASSERT_TRUE(it->number.has_value()) << d.name;
    EXPECT_FALSE(it->raw_json.has_value()) << d.name << " carried through, not derived";
    // latency_mean_ms is ours: the Python tool's metrics have the others.
    if (&d == &InferenceMetricDefOf(InferenceMetricId::kLatencyMeanMs)) {
      EXPECT_NEAR(*it->number, doc["latency"]["mean_ms"].GetDouble(), 1e-9);
      continue;
    }
    ASSERT_TRUE(theirs.HasMember(std::string(d.name).c_str()))
        << d.name << ": not a key of the Python tool's metrics";
    EXPECT_NEAR(*it->number, theirs[std::string(d.name).c_str()].GetDouble(), 1e-9) << d.name;
  }
  EXPECT_EQ(listed, want);
}

// No latency or stages: `get` lists none of them (a training profile).
TEST(InferenceMetrics, AbsentWithoutTheirObjects) {
  Profile p;
  p.img_per_s = 100;
  for (const MetricValue& m : FlatMetrics(p)) {
    for (const InferenceMetricDef& d : InferenceMetricTable()) EXPECT_NE(m.name, d.name);
  }
  p.stages_ms = Stages{1.0, 2.0, std::nullopt};
  std::vector<std::string> names;
  for (const MetricValue& m : FlatMetrics(p)) names.push_back(m.name);
  const auto last3 = std::vector<std::string>(names.end() - 3, names.end());
  EXPECT_EQ(last3, (std::vector<std::string>{
                       std::string(InferenceMetricName(InferenceMetricId::kPreprocessMs)),
                       std::string(InferenceMetricName(InferenceMetricId::kForwardMs)),
                       std::string(InferenceMetricName(InferenceMetricId::kNmsMs))}));
  EXPECT_FALSE(FlatMetrics(p).back().number.has_value());  // postprocess not timed: null
}

// A repeat of a CUDA inference job aggregates every row, and only table names.
TEST(InferenceMetrics, RepeatStatsKeysAreTableNames) {
  Profile p;
  p.mode = "inference";
  std::vector<TrialMeasurement> trials(2);
  trials[0] = {10.0, std::nullopt, {9, 10, 11}, {8, 9, 10}, Stages{1.0, 8.0, 1.0}};
  trials[1] = {12.0, std::nullopt, {11, 12, 13}, {9, 10, 11}, Stages{1.5, 9.0, 1.5}};
  ApplyMeasuredTrials(p, 1, trials);
  std::set<std::string> inference;
  // throughput_img_s is img_per_s, whose spread is the table row's (img_per_s_std).
  const InferenceMetricDef* throughput = &InferenceMetricDefOf(InferenceMetricId::kThroughputImgS);
  for (const InferenceMetricDef& d : InferenceMetricTable()) {
    inference.insert(std::string(d.name));
    if (&d == throughput) continue;
    EXPECT_TRUE(p.repeat.metrics.contains(std::string(d.name))) << d.name << " not aggregated";
  }
  for (const auto& [name, stat] : p.repeat.metrics) {
    EXPECT_TRUE(inference.contains(name) || FindMetric(name) != nullptr)
        << name << ": a stats key that names no metric";
  }
  const std::vector<MetricValue> flat = FlatMetrics(p);
  for (const InferenceMetricDef& d : InferenceMetricTable()) {
    if (&d == throughput) continue;
    const std::string sd = std::string(d.name) + "_std";
    EXPECT_TRUE(std::any_of(flat.begin(), flat.end(), [&](const MetricValue& m) {
      return m.name == sd;
    })) << sd;
  }
}

TEST(InferenceMetrics, DocsNameEveryRow) {
  const std::string doc = Slurp(std::string(LIBREYOLO_SOURCE_DIR) + "/docs/metrics.md");
  for (const InferenceMetricDef& d : InferenceMetricTable()) {
    EXPECT_NE(doc.find("`" + std::string(d.name) + "`"), std::string::npos)
        << "docs/metrics.md does not name `" << d.name << "`";
  }
}

}  // namespace
}  // namespace libreyolo
