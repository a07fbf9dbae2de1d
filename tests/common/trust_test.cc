// Issue 40, part B: numbers that carry their own confidence. Hand-made traces for each check's
// edges, and the fixtures tests/fixtures/trust/make_trust_fixtures.py makes from the real traces
// (each reproduces one defect; before the checks every one of them got a confident verdict and
// no word of it: the kernel-less rank "compute: no GPU kernels ... runs on the CPU").
#include "common/analysis/trust.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "common/analysis/compare.h"
#include "common/analysis/verdict.h"
#include "common/load/load_profile.h"
#include "common/profile/profile_json.h"
#include "common/readers/compare_view.h"
#include "common/readers/summary_view.h"
#include "tests/common/trace_builder.h"

namespace libreyolo {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using namespace libreyolo::testing;

const TrustCheck& CheckOf(const TrustAssessment& t, std::string_view name) {
  for (const TrustCheck& c : t.checks) {
    if (c.name == name) return c;
  }
  static const TrustCheck kMissing{"missing", "missing", ""};
  ADD_FAILURE() << "no check " << name;
  return kMissing;
}

std::string Outcome(const Profile& p, std::string_view name) {
  return CheckOf(AssessTrust(p), name).outcome;
}

// One step of 1 ms with two launches, their kernels as given.
std::vector<std::string> TwoLaunches(std::vector<std::string> kernels) {
  std::vector<std::string> ev = {Step(1, 0, 1000), Launch(10, 5, 1), Launch(20, 5, 2)};
  ev.insert(ev.end(), kernels.begin(), kernels.end());
  return ev;
}

TEST(Trust, LaunchesWithoutKernelsMeanCuptiDidNotAttach) {
  const Profile p = AnalyseEvents(TwoLaunches({}));
  const TrustAssessment t = AssessTrust(p);
  EXPECT_EQ(CheckOf(t, kCheckGpuActivity).outcome, kTrustFailed);
  EXPECT_THAT(CheckOf(t, kCheckGpuActivity).evidence, HasSubstr("2 GPU launch calls"));
  EXPECT_THAT(CheckOf(t, kCheckGpuActivity).evidence, HasSubstr("CUPTI did not attach"));
  EXPECT_EQ(t.confidence, kConfidenceNone);
  // The verdict says what it cannot know instead of "runs on the CPU ... use a GPU device".
  EXPECT_EQ(p.bound, kBoundUnknown);
  EXPECT_THAT(p.bound_why, Not(HasSubstr("runs on the CPU")));
  EXPECT_THAT(p.bound_why, Not(HasSubstr("use a GPU device")));
  EXPECT_THAT(p.bound_why, HasSubstr("GPU-side figures are unknown"));
}

TEST(Trust, KernelsBehindTheirLaunchesPass) {
  const Profile p = AnalyseEvents(TwoLaunches({Kernel("k1", 12, 5, 1), Kernel("k2", 30, 5, 2)}));
  const TrustAssessment t = AssessTrust(p);
  EXPECT_EQ(CheckOf(t, kCheckGpuActivity).outcome, kTrustPassed);
  EXPECT_EQ(CheckOf(t, kCheckTimestamps).outcome, kTrustPassed);
  EXPECT_EQ(CheckOf(t, kCheckKinetoBuffers).outcome, kTrustNotApplicable) << "no Kineto log";
  EXPECT_EQ(CheckOf(t, kCheckCudaGraphs).outcome, kTrustNotApplicable);
  EXPECT_EQ(t.confidence, kConfidenceHigh);
  EXPECT_NE(p.bound, kBoundUnknown);
}

TEST(Trust, NoLaunchesIsNotApplicable) {
  const Profile p = AnalyseEvents({Step(1, 0, 1000), Op("aten::add", 10, 100)});
  EXPECT_EQ(Outcome(p, kCheckGpuActivity), kTrustNotApplicable);
  EXPECT_EQ(AssessTrust(p).confidence, kConfidenceHigh);
}

TEST(Trust, AKernelBeforeItsLaunchByMoreThanTheResolution) {
  // Whole microseconds: the resolution is 1 us. 1 us early is within it; 2 us is not.
  EXPECT_EQ(Outcome(AnalyseEvents(TwoLaunches({Kernel("k1", 9, 5, 1), Kernel("k2", 30, 5, 2)})),
                    kCheckTimestamps),
            kTrustPassed);
  const Profile p = AnalyseEvents(TwoLaunches({Kernel("k1", 12, 5, 1), Kernel("k2", 18, 5, 2)}));
  const TrustCheck c = CheckOf(AssessTrust(p), kCheckTimestamps);
  EXPECT_EQ(c.outcome, kTrustFailed);
  EXPECT_THAT(c.evidence, HasSubstr("1 of 2 GPU activities start before their launch call"));
  EXPECT_THAT(c.evidence, HasSubstr("by up to 2.000 us"));
  EXPECT_THAT(c.evidence, HasSubstr("k2 (correlation 2)"));
  EXPECT_EQ(AssessTrust(p).confidence, kConfidenceReduced);
  EXPECT_THAT(p.bound_why, HasSubstr("kernel timestamps corrupted"));
}

TEST(Trust, AKernelEndingAfterTheDeviceSyncThatFollowedItsLaunch) {
  // Launched at 10..15, cudaDeviceSynchronize 40..60: the kernel must have ended by 60.
  const std::string sync = Runtime("cudaDeviceSynchronize", 40, 20, 9);
  const Profile ok = AnalyseEvents({Step(1, 0, 1000), Launch(10, 5, 1), sync,
                                    Kernel("k1", 20, 40, 1)});
  EXPECT_EQ(Outcome(ok, kCheckTimestamps), kTrustPassed);
  const Profile bad = AnalyseEvents({Step(1, 0, 1000), Launch(10, 5, 1), sync,
                                     Kernel("k1", 20, 100, 1)});
  const TrustCheck c = CheckOf(AssessTrust(bad), kCheckTimestamps);
  EXPECT_EQ(c.outcome, kTrustFailed);
  EXPECT_THAT(c.evidence, HasSubstr("end after a device synchronisation"));
  EXPECT_THAT(c.evidence, HasSubstr("by up to 60.000 us"));
  // A sync on another thread synchronises nothing of this launch's.
  const Profile other = AnalyseEvents({Step(1, 0, 1000), Launch(10, 5, 1),
                                       Runtime("cudaDeviceSynchronize", 40, 20, 9, Thread(2)),
                                       Kernel("k1", 20, 100, 1)});
  EXPECT_EQ(Outcome(other, kCheckTimestamps), kTrustPassed);
}

TEST(Trust, KinetosOwnOverflowAndDroppedRecordMessages) {
  auto with_log = [](const std::string& log) {
    std::string json = Trace(TwoLaunches({Kernel("k1", 12, 5, 1), Kernel("k2", 30, 5, 2)}));
    json.insert(1, log);
    return Analyse(json);
  };
  EXPECT_EQ(Outcome(with_log(R"("INFO": ["INFO:... Tracing started"],)"), kCheckKinetoBuffers),
            kTrustPassed);
  const Profile p = with_log(
      R"("WARNING": ["WARNING:... CuptiActivityApi.cpp:228] Exceeded max GPU buffer count (33 >= 32) - terminating tracing", "W... Dropped 17 activity records", "W... Dropped 3 activity records"],)");
  const TrustCheck c = CheckOf(AssessTrust(p), kCheckKinetoBuffers);
  EXPECT_EQ(c.outcome, kTrustFailed);
  EXPECT_THAT(c.evidence, HasSubstr("activity buffers overflowed"));
  EXPECT_THAT(c.evidence, HasSubstr("dropped 20 activity records"));
  // Kineto's own kernel-before-runtime warning counts against the timestamps.
  const Profile ts = with_log(
      R"("WARNING": ["GPU op timestamp (100) < runtime timestamp (120) by 20us"],)");
  EXPECT_EQ(Outcome(ts, kCheckTimestamps), kTrustFailed);
  EXPECT_EQ(Outcome(ts, kCheckKinetoBuffers), kTrustPassed);
}

TEST(Trust, GraphLaunchKernels) {
  auto graph = [](std::vector<std::string> kernels) {
    std::vector<std::string> ev = {Step(1, 0, 1000), Runtime("cudaGraphLaunch", 10, 5, 1)};
    ev.insert(ev.end(), kernels.begin(), kernels.end());
    return AnalyseEvents(ev);
  };
  const Profile one_by_one =
      graph({Kernel("a", 20, 5, 1), Kernel("b", 26, 5, 1), Kernel("c", 32, 5, 1)});
  const TrustCheck ok = CheckOf(AssessTrust(one_by_one), kCheckCudaGraphs);
  EXPECT_EQ(ok.outcome, kTrustPassed);
  EXPECT_THAT(ok.evidence, HasSubstr("1 graph launches ran 3 kernels"));
  const Profile collapsed = graph({Kernel("a", 20, 17, 1)});
  EXPECT_EQ(Outcome(collapsed, kCheckCudaGraphs), kTrustFailed);
  EXPECT_EQ(AssessTrust(collapsed).confidence, kConfidenceReduced);
}

TEST(Trust, TheLoadCheckComesFromTheProfilesOwnNumbers) {
  Profile p;
  p.tool_name = kOurToolName;
  p.source_kind = "profile";
  p.step_ms = 36.8;
  p.real_steps = 20;
  p.window_wall_ms = 90.1 * 20;
  p.profiler_json = R"({"overhead_ci_pct":[1.5,4.8],"probe_baseline_ms":[81.9]})";
  TrustAssessment t = AssessTrust(p);
  EXPECT_EQ(CheckOf(t, kCheckLoadSteady).outcome, kTrustFailed);
  EXPECT_EQ(t.confidence, kConfidenceReduced);
  p.window_wall_ms = 37.5 * 20;
  p.profiler_json = R"({"overhead_ci_pct":[1.5,4.8],"probe_baseline_ms":[37.0]})";
  t = AssessTrust(p);
  EXPECT_EQ(CheckOf(t, kCheckLoadSteady).outcome, kTrustPassed);
  EXPECT_EQ(t.confidence, kConfidenceHigh);
  // A trace has no unprofiled step: the check does not apply, and nothing else was checked.
  EXPECT_FALSE(AssessTrust(Profile{}).checked);
}

TEST(Trust, TheBlockSurvivesProfileJson) {
  const Profile p = AnalyseEvents(TwoLaunches({Kernel("k1", 12, 5, 1), Kernel("k2", 18, 5, 2)}));
  const std::string json = WriteProfileJson(p);
  EXPECT_THAT(json, HasSubstr(R"("trust")"));
  EXPECT_THAT(json, ::testing::ContainsRegex(R"("confidence": ?"reduced")"));
  auto back = ReadProfileJson(json, "p.json");
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->trust_checks.size(), p.trust_checks.size());
  for (size_t i = 0; i < p.trust_checks.size(); ++i) {
    EXPECT_EQ(back->trust_checks[i].name, p.trust_checks[i].name);
    EXPECT_EQ(back->trust_checks[i].outcome, p.trust_checks[i].outcome);
    EXPECT_EQ(back->trust_checks[i].evidence, p.trust_checks[i].evidence);
  }
  EXPECT_EQ(AssessTrust(*back).confidence, kConfidenceReduced);
}

TEST(Trust, SummaryJsonAndCompareCarryIt) {
  const Profile good = AnalyseEvents(TwoLaunches({Kernel("k1", 12, 5, 1), Kernel("k2", 30, 5, 2)}));
  const Profile bad = AnalyseEvents(TwoLaunches({Kernel("k1", 12, 5, 1), Kernel("k2", 18, 5, 2)}));
  EXPECT_THAT(RenderSummaryJson(BuildSummary(bad, "b")),
              ::testing::ContainsRegex(R"("trust": ?\{[^}]*"confidence": ?"reduced")"));
  EXPECT_THAT(RenderSummaryJson(BuildSummary(Profile{}, "p")),
              ::testing::ContainsRegex(R"("trust": ?null)"));
  // compare names the trust of both sides when one is not high, and only then.
  EXPECT_THAT(RenderCompareText(Compare(good, bad, "a", "b")),
              HasSubstr("trust: before high (2 checks passed, 2 not applicable); after reduced: "
                        "kernel timestamps corrupted"));
  EXPECT_THAT(RenderCompareText(Compare(good, good, "a", "b")), Not(HasSubstr("trust:")));
}

// --- the fixtures made from the real traces ---------------------------------------------------

struct FixtureCase {
  const char* file;
  const char* failed_check;
  const char* confidence;
};

class TrustFixtures : public ::testing::TestWithParam<FixtureCase> {};

TEST_P(TrustFixtures, TheDefectIsFoundAndSaid) {
  const FixtureCase& c = GetParam();
  const std::filesystem::path path =
      std::filesystem::path(LIBREYOLO_FIXTURES_DIR) / "trust" / c.file;
  auto p = LoadProfile(path.string());
  ASSERT_TRUE(p.ok()) << p.status();
  const TrustAssessment t = AssessTrust(*p);
  for (const TrustCheck& check : t.checks) {
    EXPECT_EQ(check.outcome == kTrustFailed, check.name == c.failed_check)
        << c.file << ": " << check.name << " " << check.outcome << ": " << check.evidence;
  }
  EXPECT_EQ(t.confidence, c.confidence);
  const std::string text = RenderSummaryText(BuildSummary(*p, path.string()));
  EXPECT_THAT(text, HasSubstr(std::string("trust: ") + c.confidence));
  EXPECT_THAT(text, HasSubstr(std::string("  ") + c.failed_check + ": "));
  EXPECT_THAT(text, Not(HasSubstr("runs on the CPU")));
}

INSTANTIATE_TEST_SUITE_P(
    Defects, TrustFixtures,
    ::testing::Values(
        FixtureCase{"cupti_not_attached.json.gz", kCheckGpuActivity, kConfidenceNone},
        FixtureCase{"kernel_before_launch.json.gz", kCheckTimestamps, kConfidenceReduced},
        FixtureCase{"kernel_after_sync.json.gz", kCheckTimestamps, kConfidenceReduced},
        FixtureCase{"kineto_buffer_overflow.json.gz", kCheckKinetoBuffers, kConfidenceReduced},
        FixtureCase{"cuda_graph_collapsed.json.gz", kCheckCudaGraphs, kConfidenceReduced}),
    [](const ::testing::TestParamInfo<FixtureCase>& tp) {
      std::string n = tp.param.file;
      return n.substr(0, n.find('.'));
    });

TEST(TrustFixtures, TheKernelLessRankGetsNoCpuVerdict) {
  // The issue's case: the real training rank with its kernels removed, its launches kept.
  auto p = LoadProfile(std::string(LIBREYOLO_FIXTURES_DIR) + "/trust/cupti_not_attached.json.gz");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->bound, kBoundUnknown);
  EXPECT_THAT(p->bound_why, HasSubstr("577 GPU launch calls"));
  EXPECT_THAT(p->bound_why, HasSubstr("CUPTI did not attach"));
  EXPECT_THAT(p->bound_why, Not(HasSubstr("use a GPU device")));
}

// Every shared fixture trace gets a trust line; the real ones pass, except the CUPTI range
// profiler's run, whose 77 launches have no kernel records.
TEST(TrustFixtures, EverySharedTraceHasItsLine) {
  const std::filesystem::path root = std::filesystem::path(LIBREYOLO_FIXTURES_DIR) / "traces";
  for (const char* name : {"alexnet", "amd_trace", "cpu_only", "cupti_profiler", "simple_add",
                           "trace_filter"}) {
    auto p = LoadProfile((root / (std::string(name) + ".json.gz")).string());
    ASSERT_TRUE(p.ok()) << p.status();
    const std::string text = RenderSummaryText(BuildSummary(*p, name));
    const bool cupti = std::string(name) == "cupti_profiler";
    EXPECT_THAT(text, HasSubstr(cupti ? "trust: none" : "trust: high")) << name;
  }
}

}  // namespace
}  // namespace libreyolo
