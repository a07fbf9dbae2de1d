// Checks, for the job tests, that a profile's `profiler` object records the overhead budget
// consistently (server/engine/overhead_budget.h), whatever the probes measured on this machine.
#ifndef LIBREYOLO_TESTS_ENGINE_BUDGET_RECORD_CHECK_H_
#define LIBREYOLO_TESTS_ENGINE_BUDGET_RECORD_CHECK_H_

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "server/engine/overhead_budget.h"

namespace libreyolo::engine {

inline std::vector<std::string> Strings(const rapidjson::Value& array) {
  std::vector<std::string> out;
  for (const auto& v : array.GetArray()) out.emplace_back(v.GetString());
  return out;
}

// `expected_auto`: the switches the spec left unset, in kDisableOrder. `probed`: whether the job
// was expected to probe (it had auto switches and something to profile).
inline void ExpectConsistentBudgetRecord(const std::string& profiler_json, double budget_pct,
                                         const std::vector<std::string>& expected_auto,
                                         bool probed) {
  rapidjson::Document d;
  ASSERT_FALSE(d.Parse(profiler_json.c_str()).HasParseError()) << profiler_json;
  for (const char* key : {"record_shapes", "profile_memory", "with_flops", "with_stack",
                          "with_modules",
                          "auto_switches", "auto_disabled", "overhead_budget_pct",
                          "probe_overhead_pct", "probe_iterations", "overhead_pct"}) {
    ASSERT_TRUE(d.HasMember(key)) << key << " missing: " << profiler_json;
  }
  EXPECT_DOUBLE_EQ(d["overhead_budget_pct"].GetDouble(), budget_pct);
  const std::vector<std::string> autos = Strings(d["auto_switches"]);
  const std::vector<std::string> disabled = Strings(d["auto_disabled"]);
  EXPECT_EQ(autos, expected_auto) << profiler_json;
  // Auto switches go off in kDisableOrder: the disabled ones are a prefix of the auto ones.
  ASSERT_LE(disabled.size(), autos.size());
  EXPECT_TRUE(std::equal(disabled.begin(), disabled.end(), autos.begin())) << profiler_json;
  for (const std::string& s : autos) {
    const bool off = std::find(disabled.begin(), disabled.end(), s) != disabled.end();
    // with_flops is recorded as what the profile holds: off whenever record_shapes is off.
    const bool recorded_off =
        s == "with_flops" && d.HasMember("with_flops_note") && !d["record_shapes"].GetBool();
    EXPECT_EQ(d[s.c_str()].GetBool(), !off && !recorded_off) << s << ": " << profiler_json;
  }
  std::vector<double> probes;
  for (const auto& v : d["probe_overhead_pct"].GetArray()) probes.push_back(v.GetDouble());
  if (!probed) {
    EXPECT_TRUE(probes.empty()) << profiler_json;
    EXPECT_TRUE(disabled.empty()) << profiler_json;
    return;
  }
  EXPECT_GT(d["probe_iterations"].GetInt64(), 0);
  // One probe per decision: each over-budget probe disabled one switch; a last within-budget
  // probe accepted, unless every auto switch went off (that configuration is not probed).
  if (disabled.size() == autos.size()) {
    EXPECT_EQ(probes.size(), disabled.size()) << profiler_json;
  } else {
    ASSERT_EQ(probes.size(), disabled.size() + 1) << profiler_json;
    EXPECT_LE(probes.back(), budget_pct) << profiler_json;
  }
  for (size_t i = 0; i < disabled.size(); ++i) EXPECT_GT(probes[i], budget_pct) << profiler_json;
  ASSERT_EQ(d["probe_median_ms"].Size(), probes.size());
  ASSERT_EQ(d["probe_baseline_ms"].Size(), probes.size());
  for (size_t i = 0; i < probes.size(); ++i) {
    const double base = d["probe_baseline_ms"][static_cast<rapidjson::SizeType>(i)].GetDouble();
    const double prof = d["probe_median_ms"][static_cast<rapidjson::SizeType>(i)].GetDouble();
    EXPECT_GT(base, 0);
    EXPECT_NEAR(probes[i], 100.0 * (prof - base) / base, 1e-6 * std::max(1.0, std::abs(probes[i])));
  }
  EXPECT_TRUE(d["overhead_pct"].IsNumber()) << profiler_json;
}

}  // namespace libreyolo::engine

#endif  // LIBREYOLO_TESTS_ENGINE_BUDGET_RECORD_CHECK_H_
