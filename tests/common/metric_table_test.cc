// The metric table (common/profile/metric_table.h) is the one definition of every scalar
// metric: docs/metrics.md's table is generated from it, every row round-trips through
// profile.json at its place and type, and the views that print a metric agree with it.
#include "common/analysis/profile_json_write.h"
#include "common/profile/metric_table.h"

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "common/analysis/compare.h"
#include "common/analysis/metric_list.h"
#include "common/profile/metric_id.h"
#include "common/profile/profile_json.h"
#include "common/readers/get_view.h"
#include "common/readers/summary_view.h"
#include "common/report/report_sections.h"

namespace libreyolo {
namespace {

constexpr char kBegin[] = "<!-- metric-table:begin -->\n";
constexpr char kEnd[] = "<!-- metric-table:end -->";

TEST(MetricTable, DocsTableIsGeneratedFromIt) {
  const std::string path = std::string(LIBREYOLO_SOURCE_DIR) + "/docs/metrics.md";
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  std::stringstream ss;
  ss << in.rdbuf();
  std::string doc = ss.str();
  const size_t b = doc.find(kBegin), e = doc.find(kEnd);
  ASSERT_NE(b, std::string::npos) << "docs/metrics.md lacks " << kBegin;
  ASSERT_NE(e, std::string::npos) << "docs/metrics.md lacks " << kEnd;
  const size_t from = b + sizeof(kBegin) - 1;
  const std::string want = MetricTableMarkdown();
  if (doc.substr(from, e - from) != want && std::getenv("LIBREYOLO_UPDATE_DOCS") != nullptr) {
    doc.replace(from, e - from, want);
    std::ofstream(path) << doc;
    GTEST_SKIP() << "rewrote the table in " << path;
  }
  EXPECT_EQ(doc.substr(from, e - from), want)
      << "docs/metrics.md's metric table is out of date: run "
         "LIBREYOLO_UPDATE_DOCS=1 build/tests/common/common_metric_table_test";
}

TEST(MetricTable, NamesAndPlacesAreUnique) {
  std::set<std::string> names, places;
  for (const MetricDef& d : MetricTable()) {
    EXPECT_TRUE(names.insert(std::string(d.name)).second) << d.name;
    if (!d.field.empty()) {
      EXPECT_TRUE(places.insert(std::string(d.object) + "." + std::string(d.field)).second)
          << d.name;
      EXPECT_NE(d.set, nullptr) << d.name << " is stored but cannot be read back";
    }
    EXPECT_FALSE(d.definition.empty()) << d.name;
    EXPECT_EQ(FindMetric(d.name), &d);
  }
  EXPECT_EQ(FindMetric("no_such_metric"), nullptr);
}

// A GPU profile with every scalar set: written, read back, each row holds its value and
// counts are JSON integers.
Profile FullGpuProfile() {
  Profile p;
  p.device = DeviceInfo{"cuda", "H200", 0, 132, 141000.0};
  for (const MetricDef& d : MetricTable()) {
    if (d.set == nullptr) continue;
    switch (d.kind) {
      case MetricKind::kNumber: d.set(p, MetricCell::Number(1.25)); break;
      case MetricKind::kCount: d.set(p, MetricCell::Count(227)); break;
      case MetricKind::kFlag: d.set(p, MetricCell::Flag(true)); break;
      case MetricKind::kText: d.set(p, MetricCell::Text("measured")); break;
    }
  }
  return p;
}

TEST(MetricTable, EveryRowRoundTripsThroughProfileJsonAtItsPlaceAndType) {
  const Profile p = FullGpuProfile();
  const std::string json = WriteProfileJson(p);
  rapidjson::Document doc;
  doc.Parse(json.c_str());
  ASSERT_FALSE(doc.HasParseError());
  auto back = ReadProfileJson(json, "x");
  ASSERT_TRUE(back.ok()) << back.status();
  for (const MetricDef& d : MetricTable()) {
    if (d.field.empty()) continue;
    const rapidjson::Value& holder =
        d.object.empty() ? doc : doc[std::string(d.object).c_str()];
    ASSERT_TRUE(holder.HasMember(std::string(d.field).c_str())) << d.name;
    const rapidjson::Value& v = holder[std::string(d.field).c_str()];
    if (d.kind == MetricKind::kCount) {
      EXPECT_TRUE(v.IsInt64()) << d.name << " must be a JSON integer";
    }
    const MetricCell a = MetricValueOf(d, p), b = MetricValueOf(d, *back);
    EXPECT_EQ(a.AsDouble(), b.AsDouble()) << d.name;
    EXPECT_EQ(a.text, b.text) << d.name;
    EXPECT_EQ(a.flag, b.flag) << d.name;
    // The "metrics" object carries the same value under the `get` name.
    ASSERT_TRUE(doc["metrics"].HasMember(std::string(d.name).c_str())) << d.name;
  }
}

// Issue 22: a CPU job's text said "n/a (cpu job)" while get, --json, the report and compare
// showed 0.0 % GPU utilisation and a host overhead equal to the whole step ("worse").
TEST(MetricTable, ACpuJobsGpuMetricsAreNullInEveryView) {
  Profile cpu = FullGpuProfile();
  cpu.device = DeviceInfo{"cpu", "cpu", std::nullopt, std::nullopt, std::nullopt};
  cpu.gpu_util = 0.0;                   // what an older file, or the Python tool, wrote
  cpu.host_overhead_ms_per_step = 36.8;  // the whole step, as the residual gave it
  Profile cpu_after = cpu;
  cpu_after.host_overhead_ms_per_step = 40.0;

  auto read = ReadProfileJson(WriteProfileJson(cpu), "cpu");
  ASSERT_TRUE(read.ok()) << read.status();
  rapidjson::Document file, summary;
  file.Parse(WriteProfileJson(cpu).c_str());
  summary.Parse(RenderSummaryJson(BuildSummary(*read, "cpu")).c_str());
  auto get = BuildGet(*read, std::string("gpu_util"), "cpu");
  ASSERT_TRUE(get.ok());
  EXPECT_EQ(RenderGetText(*get), "n/a\n");
  const CompareResult cmp = Compare(cpu, cpu_after, "a", "b");
  for (const MetricDef& d : MetricTable()) {
    if (d.applies != MetricApplies::kGpu) continue;
    const std::string key(d.object.empty() && !d.field.empty() ? d.field : d.name);
    EXPECT_TRUE(MetricValueOf(d, *read).is_null()) << d.name;
    if (d.object.empty() && !d.field.empty()) {
      EXPECT_TRUE(file[key.c_str()].IsNull()) << "profile.json " << key;
    }
    EXPECT_TRUE(file["metrics"][std::string(d.name).c_str()].IsNull()) << "metrics." << d.name;
    ASSERT_TRUE(summary.HasMember(key.c_str())) << "summary --json " << key;
    EXPECT_TRUE(summary[key.c_str()].IsNull()) << "summary --json " << key;
    for (const CompareDelta& delta : cmp.deltas) {
      EXPECT_NE(delta.metric, key) << "compare judged " << key << " of a CPU job";
    }
  }
  for (const Metric& m : HeadlineMetrics(BuildSummary(*read, "cpu"))) {
    const MetricDef* d = FindMetric(m.key);
    if (d == nullptr || d->applies != MetricApplies::kGpu) continue;
    EXPECT_FALSE(m.value.has_value()) << "report " << m.key;
    EXPECT_EQ(m.text, "n/a") << "report " << m.key;
  }
  EXPECT_TRUE(summary["cpu_job"].GetBool());
}

TEST(MetricTable, SummaryJsonBatchIsAnInteger) {
  Profile p;
  p.config_json = R"({"batch": 16, "batch_rule": "largest power of two that fits"})";
  p.batch = 16;
  rapidjson::Document d;
  d.Parse(RenderSummaryJson(BuildSummary(p, "x")).c_str());
  ASSERT_TRUE(d["batch"].IsInt64()) << "issue 22: summary --json had \"batch\": \"1\"";
  EXPECT_EQ(d["batch"].GetInt64(), 16);
  EXPECT_STREQ(d["batch_rule"].GetString(), "largest power of two that fits");
}

// Code names a metric by its id (issue 39 §3); each id is its row, in the table's order, and
// the ids code uses name the metrics they spell.
TEST(MetricTable, EachIdIsItsRow) {
  ASSERT_EQ(MetricTable().size(), kMetricCount);
  for (size_t i = 0; i < kMetricCount; ++i) {
    const MetricId id = static_cast<MetricId>(i);
    EXPECT_EQ(&MetricDefOf(id), &MetricTable()[i]);
    EXPECT_EQ(MetricName(id), MetricTable()[i].name);
    EXPECT_EQ(FindMetric(MetricName(id)), &MetricDefOf(id));
  }
  EXPECT_EQ(MetricName(MetricId::kImgPerS), "img_per_s");
  EXPECT_EQ(MetricName(MetricId::kStepMs), "step_ms");
  EXPECT_EQ(MetricName(MetricId::kDataloadMs), "dataload_ms");
  EXPECT_EQ(MetricName(MetricId::kDataloadFrac), "dataload_frac");
  EXPECT_EQ(MetricName(MetricId::kGpuUtil), "gpu_util");
  EXPECT_EQ(MetricName(MetricId::kHostOverheadMs), "host_overhead_ms");
  EXPECT_EQ(MetricName(MetricId::kHostOverheadResidualMs), "host_overhead_residual_ms");
  EXPECT_EQ(MetricName(MetricId::kLaunchesPerStep), "launches_per_step");
  EXPECT_EQ(MetricName(MetricId::kAchievedTflops), "achieved_tflops");
  EXPECT_EQ(MetricName(MetricId::kWindowWallMs), "window_wall_ms");
}

TEST(MetricTable, PerStepCountsFollowThePythonToolsRule) {
  EXPECT_EQ(PerStepCount(9, 2), 4);
  EXPECT_EQ(PerStepCount(1, 3), 0);
  EXPECT_EQ(PerStepCount(1, 3, /*row_min_one=*/true), 1);
  EXPECT_EQ(PerStepCount(0, 3, true), 0);
  EXPECT_EQ(PerStepCount(7, 0), 7);  // no steps: one
}

// gpu_idle_ms (the profiled step less the GPU's busy time) is the golden traces' oracle value
// (fixture_metrics_test); here its edges: never below 0, n/a without a window or a busy time.
TEST(MetricTable, GpuIdleIsTheProfiledStepLessBusyAndNeverNegative) {
  Profile p = FullGpuProfile();
  p.window_wall_ms = 30.0;
  p.real_steps = 3;
  p.gpu_busy_ms_per_step = 4.0;
  EXPECT_EQ(MetricValueOf(MetricDefOf(MetricId::kGpuIdleMs), p).number, 6.0);
  p.gpu_busy_ms_per_step = 12.0;  // a busy time past the step (clock skew): idle is 0, not -2
  EXPECT_EQ(MetricValueOf(MetricDefOf(MetricId::kGpuIdleMs), p).number, 0.0);
  p.real_steps = 0;
  EXPECT_TRUE(MetricValueOf(MetricDefOf(MetricId::kGpuIdleMs), p).is_null());
  p.real_steps = 3;
  p.gpu_busy_ms_per_step.reset();
  EXPECT_TRUE(MetricValueOf(MetricDefOf(MetricId::kGpuIdleMs), p).is_null());
}

}  // namespace
}  // namespace libreyolo
