// The CI gate of `compare --fail-if-slower PCT` (common/analysis/compare_gate.h): verdicts
// worked out by hand from the interval d +/- 2*SE against -PCT % of the before mean.
#include "common/analysis/compare_gate.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <cmath>
#include <set>

#include "common/analysis/compare.h"
#include "common/readers/compare_view.h"
#include "common/status/exit_code.h"

namespace libreyolo {
namespace {

using ::testing::HasSubstr;

ThroughputTrials Trials(double mean, double sd, int64_t n) { return {mean, sd, n}; }

// before 100 img/s (sd 2, n 4), after with sd 2, n 4: SE = sqrt(4/4 + 4/4) = sqrt(2),
// 2*SE = 2.828 img/s = 2.83 % of 100.
TEST(CompareGate, FailWhenTheWholeIntervalIsSlowerThanTheThreshold) {
  // d = -10: interval [-12.83, -7.17] %, all below -5 %.
  const CompareGate g = EvaluateGate(Trials(100, 2, 4), Trials(90, 2, 4), 5);
  EXPECT_EQ(g.verdict, GateVerdict::kFail);
  EXPECT_NEAR(*g.change_pct, -10, 1e-9);
  EXPECT_NEAR(*g.low_pct, -10 - 2 * std::sqrt(2.0), 1e-9);
  EXPECT_NEAR(*g.high_pct, -10 + 2 * std::sqrt(2.0), 1e-9);
  EXPECT_THAT(g.reason, HasSubstr("slower than the threshold beyond doubt"));
  EXPECT_EQ(GateExitCode(g.verdict), kExitCompareFail);
}

TEST(CompareGate, PassWhenTheWholeIntervalIsWithinTheThreshold) {
  // d = -1: interval [-3.83, +1.83] %, all above -5 %.
  const CompareGate g = EvaluateGate(Trials(100, 2, 4), Trials(99, 2, 4), 5);
  EXPECT_EQ(g.verdict, GateVerdict::kPass);
  EXPECT_EQ(GateExitCode(g.verdict), kExitOk);
  // Faster is a pass too.
  EXPECT_EQ(EvaluateGate(Trials(100, 2, 4), Trials(130, 2, 4), 5).verdict, GateVerdict::kPass);
}

TEST(CompareGate, InconclusiveWhenTheIntervalStraddlesTheThreshold) {
  // d = -5: interval [-7.83, -2.17] % contains -5 %.
  const CompareGate g = EvaluateGate(Trials(100, 2, 4), Trials(95, 2, 4), 5);
  EXPECT_EQ(g.verdict, GateVerdict::kInconclusive);
  EXPECT_THAT(g.reason, HasSubstr("straddles the threshold"));
  EXPECT_EQ(GateExitCode(g.verdict), kExitCompareInconclusive);
}

TEST(CompareGate, BoundaryIsExact) {
  // sd 0: the interval is the point d. d = -5 % exactly is not slower than 5 %: PASS.
  EXPECT_EQ(EvaluateGate(Trials(100, 0, 2), Trials(95, 0, 2), 5).verdict, GateVerdict::kPass);
  EXPECT_EQ(EvaluateGate(Trials(100, 0, 2), Trials(94.9, 0, 2), 5).verdict, GateVerdict::kFail);
  // Threshold 0: any slowdown beyond doubt fails, no change at all passes.
  EXPECT_EQ(EvaluateGate(Trials(100, 0, 2), Trials(100, 0, 2), 0).verdict, GateVerdict::kPass);
  EXPECT_EQ(EvaluateGate(Trials(100, 1, 3), Trials(100, 1, 3), 0).verdict,
            GateVerdict::kInconclusive);
}

TEST(CompareGate, SingleRunIsInconclusiveWithTheSeedsWording) {
  for (const auto& [before, after] :
       {std::pair{Trials(100, 0, 1), Trials(50, 2, 4)}, std::pair{Trials(100, 2, 4), Trials(50, 0, 1)},
        std::pair{Trials(100, 0, 1), Trials(50, 0, 1)}}) {
    const CompareGate g = EvaluateGate(before, after, 5);
    EXPECT_EQ(g.verdict, GateVerdict::kInconclusive);
    EXPECT_THAT(g.reason, HasSubstr("a single run cannot support a significance call"));
    EXPECT_THAT(g.reason, HasSubstr("--repeat N"));
    EXPECT_FALSE(g.low_pct.has_value());
    EXPECT_NEAR(*g.change_pct, -50, 1e-9);  // the change is still reported
  }
}

TEST(CompareGate, MissingThroughputIsInconclusive) {
  const CompareGate g = EvaluateGate({std::nullopt, 0, 4}, Trials(50, 1, 4), 5);
  EXPECT_EQ(g.verdict, GateVerdict::kInconclusive);
  EXPECT_THAT(g.reason, HasSubstr("no img/s on the before side"));
  EXPECT_EQ(EvaluateGate(Trials(0, 0, 4), Trials(50, 1, 4), 5).verdict,
            GateVerdict::kInconclusive);
  EXPECT_FALSE(EvaluateGate(Trials(10, 0, 4), {std::nullopt, 0, 4}, 5).change_pct.has_value());
}

TEST(CompareGate, ExitCodesAreDistinctFromTheOthers) {
  const std::set<int> codes = {kExitOk, kExitAnalysisFailed, kExitUsage, kExitNoProfile,
                               kExitCompareFail, kExitCompareInconclusive};
  EXPECT_EQ(codes.size(), 6u);
  EXPECT_STREQ(GateVerdictName(GateVerdict::kPass), "PASS");
  EXPECT_STREQ(GateVerdictName(GateVerdict::kFail), "FAIL");
  EXPECT_STREQ(GateVerdictName(GateVerdict::kInconclusive), "INCONCLUSIVE");
}

TEST(CompareGate, ProfileTrialsAndTheRenderedVerdict) {
  Profile a, b;
  a.img_per_s = 100;
  a.repeat.img_per_s_std = 2;
  a.repeat.img_per_s_n = 4;
  b.img_per_s = 90;
  b.repeat.img_per_s_std = 2;
  b.repeat.img_per_s_n = 4;
  EXPECT_EQ(ImgPerSTrials(Profile{}).n, 1);  // no trials: a single run
  CompareResult r = Compare(a, b, "a.json", "b.json");
  r.gate = EvaluateGate(ImgPerSTrials(a), ImgPerSTrials(b), 5);
  EXPECT_EQ(RenderCompareText(r).rfind("gate: FAIL (exit 4): img/s -10.00 %", 0), 0u)
      << RenderCompareText(r);
  rapidjson::Document d;
  const std::string json = RenderCompareJson(r);
  d.Parse(json.c_str());
  ASSERT_TRUE(d.IsObject() && d.HasMember("gate")) << json;
  EXPECT_STREQ(d["gate"]["verdict"].GetString(), "FAIL");
  EXPECT_EQ(d["gate"]["exit_code"].GetInt(), 4);
  EXPECT_DOUBLE_EQ(d["gate"]["fail_if_slower_pct"].GetDouble(), 5);
  EXPECT_EQ(d["gate"]["n_before"].GetInt(), 4);
  // Without --fail-if-slower there is no gate field.
  const std::string plain = RenderCompareJson(Compare(a, b, "a", "b"));
  d.Parse(plain.c_str());
  EXPECT_FALSE(d.HasMember("gate"));
}

}  // namespace
}  // namespace libreyolo
