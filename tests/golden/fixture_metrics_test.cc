// Diff tests: every real trace in tests/fixtures/traces against the numbers the independent
// oracle (tests/oracle/trace_oracle.py, Python standard library only) computed for it.
#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "common/load/load_profile.h"
#include "common/profile/metric_table.h"
#include "common/profile/profile.h"

namespace libreyolo {
namespace {

namespace fs = std::filesystem;
constexpr double kRelTol = 1e-6;

std::string Slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void ExpectClose(const rapidjson::Value& expected, const char* key, std::optional<double> got,
                 const std::string& ctx) {
  ASSERT_TRUE(expected.HasMember(key)) << ctx << key;
  const rapidjson::Value& e = expected[key];
  if (e.IsNull()) {
    EXPECT_FALSE(got.has_value()) << ctx << key << " should be n/a";
    return;
  }
  ASSERT_TRUE(got.has_value()) << ctx << key << " missing";
  const double want = e.GetDouble();
  EXPECT_NEAR(*got, want, std::max(1e-9, kRelTol * std::fabs(want))) << ctx << key;
}

class FixtureMetrics : public ::testing::TestWithParam<std::string> {};

TEST_P(FixtureMetrics, MatchesOracle) {
  const fs::path root = LIBREYOLO_FIXTURES_DIR;
  fs::path trace = root / "traces" / (GetParam() + ".json.gz");
  if (!fs::exists(trace)) trace = root / "traces" / (GetParam() + ".json");  // hand-made ones
  const fs::path expected_path = root / "expected" / (GetParam() + ".expected.json");
  rapidjson::Document e;
  e.Parse(Slurp(expected_path).c_str());
  ASSERT_FALSE(e.HasParseError()) << expected_path;

  auto loaded = LoadProfile(trace.string());
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  const Profile& p = *loaded;
  const std::string ctx = GetParam() + ": ";

  // Every scalar of the metric table the oracle computes, by its summary --json key, as the
  // table gives it (n/a rule applied): numbers within 1e-6, integers, flags and text exactly.
  int compared = 0;
  for (const MetricDef& d : MetricTable()) {
    const std::string key(d.object.empty() && !d.field.empty() ? d.field : d.name);
    if (!e.HasMember(key.c_str()) || key == "flops_per_step") continue;
    ++compared;
    const rapidjson::Value& want = e[key.c_str()];
    const MetricCell got = MetricValueOf(d, p);
    const std::string c = ctx + key;
    if (want.IsNull()) {
      EXPECT_TRUE(got.is_null()) << c << " should be n/a";
    } else if (d.kind == MetricKind::kText) {
      EXPECT_EQ(got.text.value_or("<null>"), want.GetString()) << c;
    } else if (d.kind == MetricKind::kFlag) {
      EXPECT_EQ(got.flag, std::optional<bool>(want.GetBool())) << c;
    } else if (d.kind == MetricKind::kCount) {
      ASSERT_TRUE(want.IsInt64()) << c << ": the oracle's count is not an integer";
      EXPECT_EQ(got.count, std::optional<int64_t>(want.GetInt64())) << c;
    } else {
      ExpectClose(e, key.c_str(), got.number, ctx);
    }
  }
  EXPECT_GE(compared, 30) << ctx << "the oracle's keys no longer meet the metric table's";
  EXPECT_NEAR(p.flops_per_step.value_or(0), e["flops_per_step"].GetDouble(), 1e-9) << ctx;
  EXPECT_EQ(p.bound, e["bound"].GetString()) << ctx;

  // Categories, in order.
  const auto& cats = e["categories"].GetArray();
  ASSERT_EQ(p.categories.size(), cats.Size()) << ctx;
  for (rapidjson::SizeType i = 0; i < cats.Size(); ++i) {
    const std::string c = ctx + "categories[" + std::to_string(i) + "].";
    EXPECT_EQ(p.categories[i].name, cats[i]["name"].GetString()) << c;
    ExpectClose(cats[i], "pct", p.categories[i].pct, c);
    ExpectClose(cats[i], "ms_per_step", p.categories[i].ms_per_step, c);
  }

  // Phases, in order.
  const auto& phases = e["phases"].GetArray();
  ASSERT_EQ(p.phases.size(), phases.Size()) << ctx;
  for (rapidjson::SizeType i = 0; i < phases.Size(); ++i) {
    const PhaseRow& r = p.phases[i];
    const std::string c = ctx + "phase " + r.phase + ".";
    EXPECT_EQ(r.phase, phases[i]["phase"].GetString()) << c;
    ExpectClose(phases[i], "gpu_ms_per_step", r.gpu_ms_per_step, c);
    ExpectClose(phases[i], "wall_ms_per_step", r.wall_ms_per_step, c);
    ExpectClose(phases[i], "kernels_per_step", r.kernels_per_step, c);
    ExpectClose(phases[i], "ops_per_step", r.ops_per_step, c);
    ExpectClose(phases[i], "unique_kernels", static_cast<double>(r.unique_kernels), c);
    ExpectClose(phases[i], "cpu_ms_per_step", r.cpu_ms_per_step, c);
  }

  // Every kernel row, in order.
  const auto& kernels = e["kernels"].GetArray();
  ASSERT_EQ(p.kernels.size(), kernels.Size()) << ctx;
  for (rapidjson::SizeType i = 0; i < kernels.Size(); ++i) {
    const KernelRow& k = p.kernels[i];
    const std::string c = ctx + "kernels[" + std::to_string(i) + "].";
    EXPECT_EQ(k.raw_name, kernels[i]["raw_name"].GetString()) << c;
    EXPECT_EQ(k.category, kernels[i]["category"].GetString()) << c << k.raw_name;
    EXPECT_EQ(k.tensorcore, kernels[i]["tensorcore"].GetBool()) << c << k.raw_name;
    ExpectClose(kernels[i], "ms_per_step", k.ms_per_step, c);
    ExpectClose(kernels[i], "count_per_step", k.count_per_step, c);
    ExpectClose(kernels[i], "pct_of_gpu", k.pct_of_gpu, c);
  }

  // Every op row (rows with equal CPU totals may come in either order: match by name).
  const auto& ops = e["ops"].GetArray();
  ASSERT_EQ(p.ops.size(), ops.Size()) << ctx;
  std::map<std::string, const OpRow*> by_name;
  for (const OpRow& r : p.ops) by_name[r.op] = &r;
  for (const auto& o : ops) {
    const std::string name = o["op"].GetString();
    ASSERT_TRUE(by_name.contains(name)) << ctx << "missing op " << name;
    const OpRow& r = *by_name[name];
    const std::string c = ctx + "op " + name + ".";
    ExpectClose(o, "count_per_step", r.count_per_step, c);
    ExpectClose(o, "ms_per_step", r.ms_per_step, c);
    ExpectClose(o, "self_cpu_ms_per_step", r.self_cpu_ms_per_step, c);
    ExpectClose(o, "self_device_ms_per_step", r.self_device_ms_per_step, c);
    ExpectClose(o, "device_ms_per_step", r.device_ms_per_step, c);
    ExpectClose(o, "cpu_mem_bytes", r.cpu_mem_bytes, c);
    ExpectClose(o, "self_cpu_mem_bytes", r.self_cpu_mem_bytes, c);
  }
}

INSTANTIATE_TEST_SUITE_P(RealTraces, FixtureMetrics,
                         ::testing::Values("alexnet", "amd_trace", "cpu_only", "cupti_profiler",
                                           "simple_add", "synthetic_async", "trace_filter",
                                           "libreyolo_train_cpu"));

}  // namespace
}  // namespace libreyolo
