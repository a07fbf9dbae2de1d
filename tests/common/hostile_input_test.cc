// Inputs the fuzzers found (tests/fuzz): each once crashed the sanitised build or broke the
// profile.json round trip. They must now analyse (or fail) cleanly.
#include <gtest/gtest.h>

#include <gmock/gmock.h>

#include <string>

#include "common/analysis/profile_json_write.h"
#include "common/profile/profile_json.h"
#include "tests/common/trace_builder.h"

namespace libreyolo::testing {
namespace {

using ::testing::HasSubstr;

Profile Analyse(const std::string& json) {
  auto t = ReadTraceText(json);
  EXPECT_TRUE(t.ok()) << t.status();
  return AnalyseTrace(std::move(*t));
}

TEST(HostileInput, HugeTsAndDurAreSkippedNotOverflowed) {
  // Each alone once passed the range check; ts + dur overflowed int64 nanoseconds.
  const Profile p =
      Analyse(R"([{"ph":"X","ts":8999999999999999,"dur":8999999999999999},
                  {"ph":"X","cat":"cpu_op","name":"a","ts":10,"dur":5}])");
  EXPECT_EQ(p.parse_stats.skipped_events, 1);
  EXPECT_NEAR(*p.step_ms, 0.005, 1e-12);
}

TEST(HostileInput, FarApartTimestampsDoNotOverflowTheWindow) {
  const Profile p = Analyse(R"([{"ph":"X","cat":"cpu_op","ts":8999999999999999,"dur":0},
                                {"ph":"X","cat":"cpu_op","ts":-8999999999999999,"dur":0},
                                {"ph":"X","cat":"cpu_op","ts":3999999999999999,"dur":0},
                                {"ph":"X","cat":"cpu_op","ts":-999999999999999,"dur":0}])");
  EXPECT_EQ(p.parse_stats.skipped_events, 2);
  EXPECT_NEAR(*p.window_wall_ms, 4999999999999998.0 / 1000.0, 1.0);
}

TEST(HostileInput, OutOfRangeNumbersInArgsAndDevicePropertiesAreIgnored) {
  Profile p = Analyse(R"({"deviceProperties":[{"name":"x","numSms":1e300,"id":-5}],
                          "traceEvents":[{"ph":"i","name":"[memory]","ts":1,
                                          "args":{"Bytes":1e300,"Device Type":1,
                                                  "Total Allocated":1e300}}]})");
  ASSERT_TRUE(p.device.has_value());
  EXPECT_FALSE(p.device->sm_count.has_value());
  EXPECT_FALSE(p.device->index.has_value());
  EXPECT_FALSE(p.peak_vram_mb.has_value());
}

TEST(HostileInput, SumsSaturateInsteadOfOverflowing) {
  std::string events;
  for (int i = 0; i < 3; ++i) {
    absl::StrAppend(&events, i ? "," : "",
                    Kernel("k", 0, 4000000000000000), ",",
                    Op("op", 0, 4000000000000000), ",",
                    R"({"ph":"i","name":"[memory]","ts":1,"pid":1,"tid":1,)"
                    R"("args":{"Bytes":9007199254740992,"Device Type":0}})");
  }
  const Profile p = Analyse("[" + events + "]");
  EXPECT_GT(*p.gpu_kernel_ms_per_step, 0);  // saturated, finite, positive
  ASSERT_FALSE(p.ops.empty());
  EXPECT_GT(p.ops[0].ms_per_step, 0);
}

TEST(HostileInput, DeepNestingIsRejected) {
  const std::string deep = "{\"traceEvents\": [" + std::string(100000, '[') +
                           std::string(100000, ']') + "]}";
  auto t = ReadTraceText(deep);
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(std::string(t.status().message()), HasSubstr("nested deeper than"));
  auto p = ReadProfileJson(
      R"({"schema":"libreyolo.profile.analysis/v1","config":)" + std::string(100000, '[') +
          std::string(100000, ']') + "}",
      "deep.json");
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(std::string(p.status().message()), HasSubstr("nested deeper than"));
}

TEST(HostileInput, NanInConfigSurvivesTheRoundTrip) {
  auto p = ReadProfileJson(R"({"schema":"libreyolo.profile.analysis","config":{"x":NaN}})",
                           "nan.json");
  ASSERT_TRUE(p.ok()) << p.status();
  auto again = ReadProfileJson(WriteProfileJson(*p), "again.json");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->config_json, p->config_json);
}

}  // namespace
}  // namespace libreyolo::testing
