// Checks, for the job tests, that a profile's `profiler` object records the overhead budget
// consistently (server/engine/job/overhead_budget.h), whatever the probes measured on this machine.
#ifndef LIBREYOLO_TESTS_ENGINE_BUDGET_RECORD_CHECK_H_
#define LIBREYOLO_TESTS_ENGINE_BUDGET_RECORD_CHECK_H_

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "common/io/file_reader.h"
#include "server/engine/job/overhead_budget.h"

namespace libreyolo::engine {

inline std::vector<std::string> Strings(const rapidjson::Value& array) {
  std::vector<std::string> out;
  for (const auto& v : array.GetArray()) out.emplace_back(v.GetString());
  return out;
}

inline double At(const rapidjson::Value& array, size_t i) {
  return array[static_cast<rapidjson::SizeType>(i)].GetDouble();
}

// `expected_auto`: the switches the spec left unset, in kDisableOrder. `probed`: whether the job
// was expected to run decision probes (it had auto switches). A traced job always measures its
// overhead (overhead_pct with its interval).
inline void ExpectConsistentBudgetRecord(const std::string& profiler_json, double budget_pct,
                                         const std::vector<std::string>& expected_auto,
                                         bool probed) {
  rapidjson::Document d;
  ASSERT_FALSE(d.Parse(profiler_json.c_str()).HasParseError()) << profiler_json;
  for (const char* key :
       {"record_shapes", "profile_memory", "with_flops", "with_stack", "with_modules",
        "auto_switches", "auto_disabled", "overhead_budget_pct", "probe_overhead_pct",
        "probe_ci_low_pct", "probe_ci_high_pct", "probe_ci_level", "probe_pairs",
        "probe_median_ms", "probe_baseline_ms", "probe_iterations", "overhead_pct",
        "overhead_ci_pct", "overhead_ci_level", "overhead_pairs", "overhead_source"}) {
    ASSERT_TRUE(d.HasMember(key)) << key << " missing: " << profiler_json;
  }
  EXPECT_DOUBLE_EQ(d["overhead_budget_pct"].GetDouble(), budget_pct);
  const std::vector<std::string> autos = Strings(d["auto_switches"]);
  const std::vector<std::string> disabled = Strings(d["auto_disabled"]);
  EXPECT_EQ(autos, expected_auto) << profiler_json;
  // Auto switches go off in kDisableOrder: the disabled ones are a prefix of the auto ones.
  ASSERT_LE(disabled.size(), autos.size());
  EXPECT_TRUE(std::equal(disabled.begin(), disabled.end(), autos.begin())) << profiler_json;
  for (const std::string& s : disabled) {
    EXPECT_FALSE(d[s.c_str()].GetBool()) << s << ": " << profiler_json;
  }
  const rapidjson::Value& median = d["probe_overhead_pct"];
  const rapidjson::Value& low = d["probe_ci_low_pct"];
  const rapidjson::Value& high = d["probe_ci_high_pct"];
  const size_t probes = median.Size();
  for (const char* key : {"probe_ci_low_pct", "probe_ci_high_pct", "probe_ci_level",
                          "probe_pairs", "probe_median_ms", "probe_baseline_ms"}) {
    ASSERT_EQ(d[key].Size(), probes) << key << ": " << profiler_json;
  }
  // A traced job's overhead is always measured, with its interval.
  ASSERT_TRUE(d["overhead_pct"].IsNumber()) << profiler_json;
  ASSERT_EQ(d["overhead_ci_pct"].Size(), 2u);
  EXPECT_LE(d["overhead_ci_pct"][0].GetDouble(), d["overhead_pct"].GetDouble());
  EXPECT_GE(d["overhead_ci_pct"][1].GetDouble(), d["overhead_pct"].GetDouble());
  EXPECT_GE(d["overhead_pairs"].GetInt64(), kProbePairs);
  EXPECT_GE(d["overhead_ci_level"].GetDouble(), kProbeConfidence);
  if (!probed) {
    EXPECT_EQ(probes, 0u) << profiler_json;
    EXPECT_TRUE(disabled.empty()) << profiler_json;
    EXPECT_STREQ(d["overhead_source"].GetString(), "measured");
    return;
  }
  EXPECT_EQ(d["probe_iterations"].GetInt64(), 2 * kProbePairs + 1);
  // The probes' share of the job: never more rounds than its allowance.
  if (d.HasMember("probe_round_limit") && d["probe_round_limit"].IsInt64()) {
    EXPECT_LE(d["probe_rounds"].GetInt64(), d["probe_round_limit"].GetInt64()) << profiler_json;
  }
  EXPECT_EQ(d["probe_windows"].GetInt64(), d["probe_rounds"].GetInt64() * (2 * kProbePairs + 1));
  // One probe per decision: each over-budget probe (its interval's lower bound over the budget)
  // disabled one switch; a last probe accepted (its lower bound within), unless every auto
  // switch went off (then what is left was measured).
  if (disabled.size() == autos.size()) {
    EXPECT_EQ(probes, disabled.size()) << profiler_json;
    EXPECT_STREQ(d["overhead_source"].GetString(), "measured");
  } else {
    ASSERT_EQ(probes, disabled.size() + 1) << profiler_json;
    // The accepting probe is within the budget, unless the job's probe allowance left no round
    // to measure without the switch it found over (overhead_budget.h ProbeRoundLimit): then the
    // switch stays on, measured, and probe_limit_note says so.
    const bool kept = d.HasMember("probe_limit_note") &&
                      std::string(d["probe_limit_note"].GetString()).find("stays on") !=
                          std::string::npos;
    if (kept) {
      EXPECT_GT(At(low, probes - 1), budget_pct) << profiler_json;
      EXPECT_EQ(d["probe_rounds"].GetInt64(), d["probe_round_limit"].GetInt64()) << profiler_json;
    } else {
      EXPECT_LE(At(low, probes - 1), budget_pct) << profiler_json;
    }
    // The accepting probe is the profile's overhead.
    EXPECT_STREQ(d["overhead_source"].GetString(), "probe");
    EXPECT_DOUBLE_EQ(d["overhead_pct"].GetDouble(), At(median, probes - 1));
  }
  for (size_t i = 0; i < disabled.size(); ++i) EXPECT_GT(At(low, i), budget_pct) << profiler_json;
  for (size_t i = 0; i < probes; ++i) {
    EXPECT_LE(At(low, i), At(median, i)) << profiler_json;
    EXPECT_GE(At(high, i), At(median, i)) << profiler_json;
    const int64_t pairs = d["probe_pairs"][static_cast<rapidjson::SizeType>(i)].GetInt64();
    EXPECT_EQ(pairs % kProbePairs, 0) << profiler_json;
    EXPECT_GE(pairs, kProbePairs);
    EXPECT_LE(pairs, kMaxProbeRounds * kProbePairs);
    EXPECT_GT(At(d["probe_baseline_ms"], i), 0);
    EXPECT_GT(At(d["probe_median_ms"], i), 0);
  }
}

// A switch recorded on produced its data in the written trace, and one recorded off did not
// (a CPU job: its trace holds only what LibTorch's profiler recorded).
inline void ExpectSwitchRecordMatchesTrace(const std::string& profiler_json,
                                           const std::string& trace_path) {
  rapidjson::Document d;
  ASSERT_FALSE(d.Parse(profiler_json.c_str()).HasParseError()) << profiler_json;
  auto read = ReadWholeFile(trace_path);
  ASSERT_TRUE(read.ok()) << read.status();
  const std::string& trace = *read;
  const bool shapes = trace.find("\"Input Dims\"") != std::string::npos;
  const bool flops = trace.find("\"flops\"") != std::string::npos;
  const bool memory = trace.find("\"[memory]\"") != std::string::npos;
  EXPECT_EQ(d["record_shapes"].GetBool(), shapes) << profiler_json;
  EXPECT_EQ(d["with_flops"].GetBool(), flops) << profiler_json;
  EXPECT_EQ(d["profile_memory"].GetBool(), memory) << profiler_json;
}

}  // namespace libreyolo::engine

#endif  // LIBREYOLO_TESTS_ENGINE_BUDGET_RECORD_CHECK_H_
