// The CI gate of `compare --fail-if-slower PCT` (common/analysis/compare_gate.h): verdicts
// worked out by hand from the interval d +/- 2*SE against -PCT % of the before mean. The first
// tests hold the trials' part alone (no drift between jobs: D = 0); the drift tests add it.
#include "common/analysis/compare_gate.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cmath>
#include <set>
#include <string>

#include "common/analysis/compare.h"
#include "common/load/load_profile.h"
#include "common/readers/compare_view.h"
#include "common/status/exit_code.h"

namespace libreyolo {
namespace {

using ::testing::HasSubstr;

ThroughputTrials Trials(double mean, double sd, int64_t n) { return {mean, sd, n}; }

constexpr double kNoDrift = 0;

// before 100 img/s (sd 2, n 4), after with sd 2, n 4: SE = sqrt(4/4 + 4/4) = sqrt(2),
// 2*SE = 2.828 img/s = 2.83 % of 100.
TEST(CompareGate, FailWhenTheWholeIntervalIsSlowerThanTheThreshold) {
  // d = -10: interval [-12.83, -7.17] %, all below -5 %.
  const CompareGate g = EvaluateGate(Trials(100, 2, 4), Trials(90, 2, 4), 5, kNoDrift);
  EXPECT_EQ(g.verdict, GateVerdict::kFail);
  EXPECT_NEAR(*g.change_pct, -10, 1e-9);
  EXPECT_NEAR(*g.low_pct, -10 - 2 * std::sqrt(2.0), 1e-9);
  EXPECT_NEAR(*g.high_pct, -10 + 2 * std::sqrt(2.0), 1e-9);
  EXPECT_THAT(g.reason, HasSubstr("slower than the threshold beyond doubt"));
  EXPECT_EQ(GateExitCode(g.verdict), kExitCompareFail);
}

TEST(CompareGate, PassWhenTheWholeIntervalIsWithinTheThreshold) {
  // d = -1: interval [-3.83, +1.83] %, all above -5 %.
  const CompareGate g = EvaluateGate(Trials(100, 2, 4), Trials(99, 2, 4), 5, kNoDrift);
  EXPECT_EQ(g.verdict, GateVerdict::kPass);
  EXPECT_EQ(GateExitCode(g.verdict), kExitOk);
  // Faster is a pass too.
  EXPECT_EQ(EvaluateGate(Trials(100, 2, 4), Trials(130, 2, 4), 5, kNoDrift).verdict,
            GateVerdict::kPass);
}

TEST(CompareGate, InconclusiveWhenTheIntervalStraddlesTheThreshold) {
  // d = -5: interval [-7.83, -2.17] % contains -5 %.
  const CompareGate g = EvaluateGate(Trials(100, 2, 4), Trials(95, 2, 4), 5, kNoDrift);
  EXPECT_EQ(g.verdict, GateVerdict::kInconclusive);
  EXPECT_THAT(g.reason, HasSubstr("straddles the threshold"));
  EXPECT_EQ(GateExitCode(g.verdict), kExitCompareInconclusive);
}

TEST(CompareGate, BoundaryIsExact) {
  // sd 0: the interval is the point d. d = -5 % exactly is not slower than 5 %: PASS.
  EXPECT_EQ(EvaluateGate(Trials(100, 0, 2), Trials(95, 0, 2), 5, kNoDrift).verdict,
            GateVerdict::kPass);
  EXPECT_EQ(EvaluateGate(Trials(100, 0, 2), Trials(94.9, 0, 2), 5, kNoDrift).verdict,
            GateVerdict::kFail);
  // Threshold 0: any slowdown beyond doubt fails, no change at all passes.
  EXPECT_EQ(EvaluateGate(Trials(100, 0, 2), Trials(100, 0, 2), 0, kNoDrift).verdict,
            GateVerdict::kPass);
  EXPECT_EQ(EvaluateGate(Trials(100, 1, 3), Trials(100, 1, 3), 0, kNoDrift).verdict,
            GateVerdict::kInconclusive);
}

TEST(CompareGate, SingleRunIsInconclusiveWithTheSeedsWording) {
  for (const auto& [before, after] : {std::pair{Trials(100, 0, 1), Trials(50, 2, 4)},
                                      std::pair{Trials(100, 2, 4), Trials(50, 0, 1)},
                                      std::pair{Trials(100, 0, 1), Trials(50, 0, 1)}}) {
    const CompareGate g = EvaluateGate(before, after, 5, kNoDrift);
    EXPECT_EQ(g.verdict, GateVerdict::kInconclusive);
    EXPECT_THAT(g.reason, HasSubstr("a single run cannot support a significance call"));
    EXPECT_THAT(g.reason, HasSubstr("--repeat N"));
    EXPECT_FALSE(g.low_pct.has_value());
    EXPECT_NEAR(*g.change_pct, -50, 1e-9);  // the change is still reported
  }
}

TEST(CompareGate, MissingThroughputIsInconclusive) {
  const CompareGate g = EvaluateGate({std::nullopt, 0, 4}, Trials(50, 1, 4), 5, kNoDrift);
  EXPECT_EQ(g.verdict, GateVerdict::kInconclusive);
  EXPECT_THAT(g.reason, HasSubstr("no img/s on the before side"));
  EXPECT_EQ(EvaluateGate(Trials(0, 0, 4), Trials(50, 1, 4), 5, kNoDrift).verdict,
            GateVerdict::kInconclusive);
  EXPECT_FALSE(
      EvaluateGate(Trials(10, 0, 4), {std::nullopt, 0, 4}, 5, kNoDrift).change_pct.has_value());
}

TEST(CompareGate, ExitCodesAreDistinctFromTheOthers) {
  const std::set<int> codes = {kExitOk,        kExitAnalysisFailed, kExitUsage,
                               kExitNoProfile, kExitCompareFail,    kExitCompareInconclusive};
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
  r.gate = EvaluateGate(ImgPerSTrials(a), ImgPerSTrials(b), 5, kNoDrift);
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

// Issue 36 §5: the drift between jobs. before 100 (sd 2, n 4), after 90 (sd 2, n 4), D = 5 %:
// SE² = 4/4 + 4/4 + 0.05² · (100² + 90²) = 2 + 45.25, 2*SE = 13.748: interval
// [-23.75, +3.75] %, straddles -5 % where the trials alone (+/- 2.83) said FAIL.
TEST(CompareGate, DriftBetweenJobsWidensTheInterval) {
  const CompareGate g = EvaluateGate(Trials(100, 2, 4), Trials(90, 2, 4), 5, 5);
  EXPECT_EQ(g.verdict, GateVerdict::kInconclusive);
  const double two_se = 2 * std::sqrt(2 + 0.0025 * (100.0 * 100 + 90.0 * 90));
  EXPECT_NEAR(*g.low_pct, -10 - two_se, 1e-9);
  EXPECT_NEAR(*g.high_pct, -10 + two_se, 1e-9);
  EXPECT_DOUBLE_EQ(g.job_drift_pct, 5);
  EXPECT_THAT(g.reason, HasSubstr("5.0 % drift between jobs"));
  // Most of the width is the drift: more trials cannot narrow it, and the reason says so.
  EXPECT_THAT(g.reason, HasSubstr("mostly from the drift between jobs"));
  EXPECT_THAT(g.reason, HasSubstr("--job-drift-pct"));
  // A slowdown larger than the drift still fails: -40 % +/- 2*sqrt(2 + 0.0025*(10000+3600)).
  EXPECT_EQ(EvaluateGate(Trials(100, 2, 4), Trials(60, 2, 4), 5, 5).verdict, GateVerdict::kFail);
  // The default is the documented one.
  EXPECT_DOUBLE_EQ(EvaluateGate(Trials(100, 2, 4), Trials(90, 2, 4), 5).job_drift_pct,
                   kDefaultJobDriftPct);
}

// D from A/A pairs: r = (m_b - m_a) / m̄, w² = (s_a²/n_a + s_b²/n_b) / m̄²,
// D = 100 · sqrt(mean(r² - w²) / 2).
TEST(CompareGate, JobDriftFromRecordedPairs) {
  // 100 vs 80, no spread: r = -20/90, D = 100 · |r| / sqrt(2) = 15.713 %.
  const RecordedPair one{Trials(100, 0, 3), Trials(80, 0, 3)};
  EXPECT_NEAR(*JobDriftFromPairs({one}), 100 * (20.0 / 90) / std::sqrt(2.0), 1e-9);
  // With the trials' own spread taken out: sd 3 on both sides of 100 vs 90 (n 3).
  const RecordedPair two{Trials(100, 3, 3), Trials(90, 3, 3)};
  const double r2 = (10.0 / 95) * (10.0 / 95), w2 = (9.0 / 3 + 9.0 / 3) / (95.0 * 95);
  EXPECT_NEAR(*JobDriftFromPairs({two}), 100 * std::sqrt((r2 - w2) / 2), 1e-9);
  // Several pairs: the mean of (r² - w²).
  const double r1 = (20.0 / 90) * (20.0 / 90);
  EXPECT_NEAR(*JobDriftFromPairs({one, two}), 100 * std::sqrt((r1 + r2 - w2) / 2 / 2), 1e-9);
  // Spread larger than the difference: no drift beyond the trials (0, never negative).
  EXPECT_DOUBLE_EQ(*JobDriftFromPairs({{Trials(100, 30, 3), Trials(99, 30, 3)}}), 0);
  // Nothing usable: single runs, no img/s.
  EXPECT_FALSE(JobDriftFromPairs({{Trials(100, 0, 1), Trials(80, 0, 3)}}).has_value());
  EXPECT_FALSE(JobDriftFromPairs({{{std::nullopt, 0, 3}, Trials(80, 0, 3)}}).has_value());
  EXPECT_FALSE(JobDriftFromPairs({}).has_value());
  // The gate reports the D its own pair implies (for A/A calibration runs).
  EXPECT_NEAR(*EvaluateGate(one.a, one.b, 5).pair_drift_pct, *JobDriftFromPairs({one}), 1e-12);
  EXPECT_FALSE(EvaluateGate(Trials(100, 0, 1), Trials(80, 0, 3), 5).pair_drift_pct.has_value());
}

std::string GateFixture(const std::string& name) {
  return std::string(LIBREYOLO_FIXTURES_DIR) + "/gate/" + name + ".json";
}

// The recorded pairs of tests/fixtures/gate (README.md there): the loaded-box case of issue 36
// (identical jobs, the second 27 % slower from the load, the trials tight) and a true
// regression (half the throughput). The files are the Python tool's infer_repeat.json: the
// population sd, read by its definition.
TEST(CompareGate, RecordedLoadedPairIsNotAFailAndARegressionIs) {
  auto lb = LoadProfile(GateFixture("loaded-before"));
  auto la = LoadProfile(GateFixture("loaded-after"));
  auto rb = LoadProfile(GateFixture("regression-before"));
  auto ra = LoadProfile(GateFixture("regression-after"));
  ASSERT_TRUE(lb.ok() && la.ok() && rb.ok() && ra.ok());
  ASSERT_FALSE(GateNotLikeForLike(*lb, *la).has_value());
  ASSERT_FALSE(GateNotLikeForLike(*rb, *ra).has_value());
  // The trials alone (the gate before issue 36 §5): the loaded pair FAILs at -27 %.
  const CompareGate within = EvaluateGate(ImgPerSTrials(*lb), ImgPerSTrials(*la), 5, kNoDrift);
  EXPECT_EQ(within.verdict, GateVerdict::kFail) << within.reason;
  EXPECT_NEAR(*within.change_pct, -27.1, 0.1);
  // With the drift between jobs: not a FAIL.
  const CompareGate loaded = EvaluateGate(ImgPerSTrials(*lb), ImgPerSTrials(*la), 5);
  EXPECT_NE(loaded.verdict, GateVerdict::kFail) << loaded.reason;
  EXPECT_GE(*loaded.high_pct, -5) << loaded.reason;
  // The regression FAILs either way.
  const CompareGate regression = EvaluateGate(ImgPerSTrials(*rb), ImgPerSTrials(*ra), 5);
  EXPECT_EQ(regression.verdict, GateVerdict::kFail) << regression.reason;
  EXPECT_NEAR(*regression.change_pct, -50.1, 0.1);
}

// Like for like: another mode, model, size, imgsz or device has no gate answer; the model is
// its weights' file name; batch and precision are levers compared per image.
TEST(CompareGate, OnlyLikeForLike) {
  auto base = LoadProfile(GateFixture("loaded-before"));
  ASSERT_TRUE(base.ok());
  auto with = [&](const std::string& key, const std::string& json_value) {
    Profile p = *base;
    rapidjson::Document d;
    d.Parse(p.config_json.c_str());
    rapidjson::Document v;
    v.Parse(json_value.c_str());
    d.RemoveMember(key.c_str());
    d.AddMember(rapidjson::Value(key.c_str(), d.GetAllocator()),
                rapidjson::Value(v, d.GetAllocator()), d.GetAllocator());
    rapidjson::StringBuffer buf;
    rapidjson::Writer<rapidjson::StringBuffer> w(buf);
    d.Accept(w);
    p.config_json = buf.GetString();
    return p;
  };
  EXPECT_FALSE(GateNotLikeForLike(*base, *base).has_value());
  const auto imgsz = GateNotLikeForLike(*base, with("imgsz", "320"));
  ASSERT_TRUE(imgsz.has_value());
  EXPECT_THAT(*imgsz, HasSubstr("imgsz 160 before, 320 after"));
  EXPECT_THAT(*imgsz, HasSubstr("like-for-like"));
  EXPECT_THAT(*GateNotLikeForLike(*base, with("device", "\"cuda:0\"")),
              HasSubstr("device cpu before, cuda:0 after"));
  EXPECT_THAT(*GateNotLikeForLike(with("size", "\"t\""), with("size", "\"s\"")),
              HasSubstr("size t before, s after"));
  Profile train = with("mode", "\"train\"");
  train.mode.reset();
  EXPECT_THAT(*GateNotLikeForLike(*base, train),
              HasSubstr("mode inference before, training after"));
  Profile other = *base;
  other.model = "weights/LibreYOLO9s.pt";
  EXPECT_THAT(*GateNotLikeForLike(*base, other),
              HasSubstr("model LibreYOLO9t before, LibreYOLO9s after"));
  // The same checkpoint in another worktree is the same model.
  Profile moved = *base;
  moved.model = "/ci/base/weights/LibreYOLO9t.pt";
  EXPECT_FALSE(GateNotLikeForLike(*base, moved).has_value());
  // Several differences: one message naming each.
  Profile both = with("imgsz", "320");
  both.model = "LibreYOLO9s.pt";
  const std::string two = *GateNotLikeForLike(*base, both);
  EXPECT_THAT(two, HasSubstr("model LibreYOLO9t before, LibreYOLO9s after; imgsz 160 before"));
  // Levers: answered, and said once, per image.
  const Profile batch4 = with("batch", "4");
  EXPECT_FALSE(GateNotLikeForLike(*base, batch4).has_value());
  EXPECT_FALSE(GateNotLikeForLike(*base, with("half", "true")).has_value());
  const std::vector<std::string> w = CompareMismatches(*base, batch4);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_THAT(w[0], HasSubstr("different batch: 1 before, 4 after; a lever: compare the "
                              "per-image figures (img_per_s, ms_per_image)"));
  EXPECT_THAT(w[0], ::testing::Not(HasSubstr("not like for like")));
}

}  // namespace
}  // namespace libreyolo
