// Issue 40, part B: numbers that carry their own confidence. Hand-made traces for each check's
// edges, and the fixtures tests/fixtures/trust/make_trust_fixtures.py makes from the real traces
// (each reproduces one defect; before the checks every one of them got a confident verdict and
// no word of it: the kernel-less rank "compute: no GPU kernels ... runs on the CPU").
#include "common/analysis/profile_json_write.h"
#include "common/analysis/trust.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "common/analysis/compare.h"
#include "common/analysis/compare_gate.h"
#include "common/analysis/cross_rank.h"
#include "common/analysis/verdict.h"
#include "common/load/load_profile.h"
#include "common/profile/profile_json.h"
#include "common/readers/compare_view.h"
#include "common/readers/ranks_view.h"
#include "common/readers/summary_view.h"
#include "tests/common/trace_builder.h"
#include "tests/support/test_files.h"

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

// Every fixture trace (tests/fixtures/traces: the shared ones and ours), walked, gets a trust
// line; the real ones pass, except the CUPTI range profiler's run, whose 77 launches have no
// kernel records.
TEST(TrustFixtures, EveryFixtureTraceHasItsLine) {
  const std::filesystem::path root = std::filesystem::path(LIBREYOLO_FIXTURES_DIR) / "traces";
  int walked = 0;
  for (const auto& e : std::filesystem::directory_iterator(root)) {
    const std::string name = e.path().filename().string();
    if (!name.ends_with(".json.gz") && !name.ends_with(".json")) continue;
    ++walked;
    auto p = LoadProfile(e.path().string());
    ASSERT_TRUE(p.ok()) << name << ": " << p.status();
    const std::string text = RenderSummaryText(BuildSummary(*p, name));
    const bool cupti = name.starts_with("cupti_profiler");
    EXPECT_THAT(text, HasSubstr(cupti ? "\ntrust: none" : "\ntrust: high")) << name;
  }
  EXPECT_GE(walked, 6);
}

// --- a folder of rank traces: ranks missing, clocks skewed ------------------------------------

std::string RankFixture(const char* name) {
  return (std::filesystem::path(LIBREYOLO_FIXTURES_DIR) / "trust" / "ranks" / name).string();
}

const TrustCheck& RankCheck(const CrossRankResult& r, std::string_view name) {
  for (const TrustCheck& c : r.trust_checks) {
    if (c.name == name) return c;
  }
  static const TrustCheck kMissing{"missing", "missing", ""};
  ADD_FAILURE() << "no check " << name;
  return kMissing;
}

// Two of the 128 ranks of the real NCCL job: analysed for the two (was refused: "ranks 2..127
// are missing"), the missing ranks named in `trust`, the figures that need every rank partial.
TEST(TrustRanks, SomeRanksOfALargerJobAreAnalysedForTheRanksPresent) {
  test::TempDir d;
  std::filesystem::copy_file(RankFixture("rank0.json.gz"), d.File("rank0.json.gz"));
  std::filesystem::copy_file(RankFixture("rank1.json.gz"), d.File("rank1.json.gz"));
  auto v = BuildRanksView(d.path(), 2);
  ASSERT_TRUE(v.ok()) << v.status();
  const CrossRankResult& r = v->result;
  EXPECT_EQ(r.world_size, 128);
  ASSERT_EQ(r.ranks.size(), 2u);
  ASSERT_EQ(r.missing_ranks.size(), 126u);
  EXPECT_EQ(r.missing_ranks.front(), 2);
  EXPECT_EQ(r.missing_ranks.back(), 127);
  EXPECT_EQ(RankCheck(r, kCheckRanksComplete).outcome, kTrustFailed);
  EXPECT_THAT(RankCheck(r, kCheckRanksComplete).evidence,
              HasSubstr("holds ranks 0..1 of a 128-rank job; ranks 2..127 are missing"));
  EXPECT_EQ(RankCheck(r, kCheckClocks).outcome, kTrustPassed);  // one clock, the same steps
  EXPECT_EQ(r.confidence, kConfidenceReduced);
  EXPECT_THAT(r.verdict, HasSubstr("(over the 2 of 128 ranks present; ranks 2..127 missing)"));
  const std::string text = RenderRanksText(*v);
  EXPECT_THAT(text, HasSubstr(": 2 of 128 ranks, 2..127 missing (nccl)"));
  EXPECT_THAT(text, HasSubstr("trust: reduced: 126 of 128 ranks missing"));
  EXPECT_THAT(text, HasSubstr("[partial: 2 of 128 ranks]"));
  const std::string json = RenderRanksJson(*v);
  EXPECT_THAT(json, ::testing::ContainsRegex(R"("partial": ?\[[^]]*"straggler")"));
  EXPECT_THAT(json, ::testing::ContainsRegex(R"("partial": ?\[[^]]*"collective_wait_ms")"));
  // The job profile's `ranks` object reads back with its trust block and missing ranks.
  auto back = RanksViewFromJson(json);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(RenderRanksJson(*back), json);
  EXPECT_EQ(back->result.missing_ranks.size(), 126u);
  // compare of two such folders warns that both sides are partial.
  EXPECT_THAT(RenderCompareText(CompareRanks(*v, *v)),
              HasSubstr("before holds 2 of 128 ranks (2..127 missing)"));
  // One rank alone of a larger job has no other to set against: still refused, naming --rank.
  test::TempDir one;
  std::filesystem::copy_file(RankFixture("rank0.json.gz"), one.File("rank0.json.gz"));
  EXPECT_THAT(BuildRanksView(one.path()).status().message(), HasSubstr("--rank 0"));
}

// Rank 1's trace as from a host whose clock is 30 s ahead: its steps cannot be 30 s from rank
// 0's in a synchronous job, so the clocks disagree beyond what they allow.
TEST(TrustRanks, ASkewedClockIsFound) {
  test::TempDir d;
  std::filesystem::copy_file(RankFixture("rank0.json.gz"), d.File("rank0.json.gz"));
  std::filesystem::copy_file(RankFixture("rank1_clock_skewed.json.gz"), d.File("rank1.json.gz"));
  auto v = BuildRanksView(d.path(), 1);
  ASSERT_TRUE(v.ok()) << v.status();
  const TrustCheck& c = RankCheck(v->result, kCheckClocks);
  EXPECT_EQ(c.outcome, kTrustFailed);
  EXPECT_THAT(c.evidence, HasSubstr("rank 1's ProfilerStep#N start 30000.0 ms after rank 0's"));
  EXPECT_THAT(c.evidence, HasSubstr("its clock is off by at least"));
  EXPECT_THAT(RenderRanksText(*v), HasSubstr("the ranks' clocks disagree"));
}

// Hand-made figures for the clock check's edge: one step plus the allowance is allowed.
TEST(TrustRanks, TheClockAllowanceIsOneStepPlusFiveMs) {
  const auto fig = [](int64_t rank, int64_t start_ns) {
    RankFigures f;
    f.info = {"nccl", rank, 2};
    f.steps = 1;
    f.step_ms = 100;
    f.comm_ms_by_step = {{7, 1.0}};
    f.step_spans = {{start_ns, start_ns + 100'000'000}};
    return f;
  };
  const int64_t allowed = 105'000'000;  // 100 ms step + 5 ms
  EXPECT_EQ(RankCheck(AnalyseCrossRank({fig(0, 0), fig(1, allowed)}), kCheckClocks).outcome,
            kTrustPassed);
  EXPECT_EQ(RankCheck(AnalyseCrossRank({fig(0, 0), fig(1, -allowed - 1000)}), kCheckClocks)
                .outcome,
            kTrustFailed);
  RankFigures other = fig(1, 10'000'000'000);
  other.comm_ms_by_step = {{8, 1.0}};  // no step in common: nothing to set the clocks against
  EXPECT_EQ(RankCheck(AnalyseCrossRank({fig(0, 0), other}), kCheckClocks).outcome,
            kTrustNotApplicable);
}

// --- the verdict on a distributed rank ---------------------------------------------------------

// trace_filter (a rank of the 128-rank NCCL job): 615 ms step, 168 ms of exposed communication,
// 142 ms of measured host overhead. Communication is weighed before host launch (was
// "host / launch").
TEST(TrustVerdict, ADistributedRankWaitingOnItsCollectivesNamesCommunication) {
  auto p = LoadProfile(std::string(LIBREYOLO_FIXTURES_DIR) + "/traces/trace_filter.json.gz");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->bound, kBoundCommunication);
  EXPECT_THAT(p->bound_why, HasSubstr("168.5 ms of the 615.1 ms step is communication"));
  EXPECT_THAT(p->bound_why, HasSubstr("65% of the GPU's kernel time"));
  EXPECT_THAT(p->bound_why, HasSubstr("141.54 ms per step of host overhead (measured)"));
}

Profile Distributed(double exposed, double host) {
  Profile p;
  p.step_ms = 100;
  p.gpu_util = 0.5;
  p.kernels_per_step = 50;
  p.comm_ms_per_step = exposed + 5;
  p.comm_exposed_ms_per_step = exposed;
  p.gpu_kernel_ms_per_step = 60;
  p.host_overhead_ms_per_step = host;
  p.host_overhead_method = "measured";
  return p;
}

TEST(TrustVerdict, CommunicationAgainstHostOverhead) {
  EXPECT_EQ(ComputeVerdict(Distributed(10, 10)).bound, kBoundCommunication);  // both edges
  const Verdict host = ComputeVerdict(Distributed(10, 30));
  EXPECT_EQ(host.bound, kBoundHost);
  EXPECT_THAT(host.why, HasSubstr("besides, 10.0 ms per step of communication"));
  EXPECT_EQ(ComputeVerdict(Distributed(9.9, 0)).bound, kBoundHost);  // under 10 % of the step
}

// --- the CI gate --------------------------------------------------------------------------------

TEST(TrustGate, ASideWithoutConfidenceIsInconclusive) {
  Profile none;
  none.trust_checks = {{kCheckGpuActivity, kTrustFailed, "577 GPU launch calls and 0 kernels"}};
  Profile high;
  high.trust_checks = {{kCheckGpuActivity, kTrustPassed, "577 launch calls, 577 kernels"}};
  for (GateVerdict was : {GateVerdict::kPass, GateVerdict::kFail}) {
    CompareGate g;
    g.verdict = was;
    g.reason = "img/s -1.00 %";
    QualifyGateByTrust(high, none, g);
    EXPECT_EQ(g.verdict, GateVerdict::kInconclusive);
    EXPECT_THAT(g.reason, HasSubstr("the after side's (GPU launch calls but no kernels"));
    EXPECT_THAT(g.reason, HasSubstr(std::string("the img/s alone said ") + GateVerdictName(was)));
  }
  CompareGate g;
  g.verdict = GateVerdict::kFail;
  QualifyGateByTrust(high, Profile{}, g);  // no checks (the Python tool's): the answer stands
  EXPECT_EQ(g.verdict, GateVerdict::kFail);
}

}  // namespace
}  // namespace libreyolo
