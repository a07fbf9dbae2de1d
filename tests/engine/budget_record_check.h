// Checks, for the job tests, that a profile's `profiler` object records the switches and their
// measured costs consistently (server/engine/job/overhead_budget.h), whatever the probes
// measured on this machine.
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

inline double At(const rapidjson::Value& array, size_t i) {
  return array[static_cast<rapidjson::SizeType>(i)].GetDouble();
}

// `requested`: the job's switches as given (unset: the fixed defaults). `probed`: whether the
// job was expected to probe (a traced job with probing on). The switches are those asked or
// their defaults whatever the probes measured (issue 36, section 4); each switch on has its
// cost, and a cost is marked over the budget exactly when its interval's lower bound is over it.
inline void ExpectConsistentBudgetRecord(const std::string& profiler_json, double budget_pct,
                                         const ProfilerSwitches& requested, bool probed) {
  rapidjson::Document d;
  ASSERT_FALSE(d.Parse(profiler_json.c_str()).HasParseError()) << profiler_json;
  for (const char* key :
       {"record_shapes", "profile_memory", "with_flops", "with_stack", "with_modules",
        "switch_source", "switch_costs", "overhead_budget_pct", "probe_configs",
        "probe_overhead_pct", "probe_ci_low_pct", "probe_ci_high_pct", "probe_ci_level",
        "probe_pairs", "probe_median_ms", "probe_baseline_ms", "probe_iterations",
        "probe_rounds", "probe_windows", "probe_rounds_each", "overhead_pct"}) {
    ASSERT_TRUE(d.HasMember(key)) << key << " missing: " << profiler_json;
  }
  EXPECT_FALSE(d.HasMember("auto_disabled")) << profiler_json;
  EXPECT_FALSE(d.HasMember("switch_decision")) << profiler_json;
  EXPECT_DOUBLE_EQ(d["overhead_budget_pct"].GetDouble(), budget_pct);
  const ResolvedSwitches in_force = ResolveSwitches(requested);
  size_t on = 0;
  for (CostlySwitch c : kCostlySwitches) {
    const char* name = SwitchName(c);
    EXPECT_STREQ(d["switch_source"][name].GetString(), SwitchSource(requested, c)) << name;
    on += in_force.Get(c) ? size_t{1} : size_t{0};
    // A switch recorded on was in force (the record is the trace's: it may say off for one in
    // force whose data the trace lacks, with a note).
    if (d[name].GetBool()) {
      EXPECT_TRUE(in_force.Get(c)) << name << ": " << profiler_json;
    }
    const bool costed = d["switch_costs"].HasMember(name);
    EXPECT_EQ(costed, probed && in_force.Get(c)) << name << ": " << profiler_json;
    if (!costed) continue;
    const rapidjson::Value& cost = d["switch_costs"][name];
    ASSERT_EQ(cost["ci_pct"].Size(), 2u);
    EXPECT_LE(cost["ci_pct"][0].GetDouble(), cost["cost_pct"].GetDouble()) << name;
    EXPECT_GE(cost["ci_pct"][1].GetDouble(), cost["cost_pct"].GetDouble()) << name;
    EXPECT_EQ(cost["over_budget"].GetBool(), cost["ci_pct"][0].GetDouble() > budget_pct) << name;
    EXPECT_EQ(std::string(cost["off_flag"].GetString()), SwitchOffFlag(c));
    EXPECT_GE(cost["ci_level"].GetDouble(), kProbeConfidence);
  }
  const size_t probes = d["probe_overhead_pct"].Size();
  for (const char* key : {"probe_configs", "probe_ci_low_pct", "probe_ci_high_pct",
                          "probe_ci_level", "probe_pairs", "probe_median_ms",
                          "probe_baseline_ms"}) {
    ASSERT_EQ(d[key].Size(), probes) << key << ": " << profiler_json;
  }
  if (!probed) {
    EXPECT_EQ(probes, 0u) << profiler_json;
    EXPECT_TRUE(d["overhead_pct"].IsNull()) << profiler_json;
    EXPECT_TRUE(d.HasMember("probe_note")) << profiler_json;
    return;
  }
  // One probe without each switch on, then the switches in force: the profile's overhead.
  ASSERT_EQ(probes, on + 1) << profiler_json;
  EXPECT_STREQ(d["probe_configs"][static_cast<rapidjson::SizeType>(on)].GetString(), "in force");
  ASSERT_TRUE(d["overhead_pct"].IsNumber()) << profiler_json;
  ASSERT_EQ(d["overhead_ci_pct"].Size(), 2u);
  EXPECT_LE(d["overhead_ci_pct"][0].GetDouble(), d["overhead_pct"].GetDouble());
  EXPECT_GE(d["overhead_ci_pct"][1].GetDouble(), d["overhead_pct"].GetDouble());
  EXPECT_GE(d["overhead_pairs"].GetInt64(), kProbePairs);
  EXPECT_GE(d["overhead_ci_level"].GetDouble(), kProbeConfidence);
  EXPECT_STREQ(d["overhead_source"].GetString(), "probe");
  EXPECT_DOUBLE_EQ(d["overhead_pct"].GetDouble(), At(d["probe_overhead_pct"], probes - 1));
  EXPECT_EQ(d["probe_iterations"].GetInt64(), 2 * kProbePairs + 1);
  EXPECT_EQ(d["probe_rounds"].GetInt64(),
            static_cast<int64_t>(probes) * d["probe_rounds_each"].GetInt64());
  EXPECT_EQ(d["probe_windows"].GetInt64(), d["probe_rounds"].GetInt64() * (2 * kProbePairs + 1));
  for (size_t i = 0; i < probes; ++i) {
    EXPECT_LE(At(d["probe_ci_low_pct"], i), At(d["probe_overhead_pct"], i)) << profiler_json;
    EXPECT_GE(At(d["probe_ci_high_pct"], i), At(d["probe_overhead_pct"], i)) << profiler_json;
    EXPECT_EQ(d["probe_pairs"][static_cast<rapidjson::SizeType>(i)].GetInt64(),
              d["probe_rounds_each"].GetInt64() * kProbePairs);
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
