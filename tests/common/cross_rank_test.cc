// Cross-rank analysis (docs/metrics.md, "Cross-rank analysis"): every figure on small traces
// with hand-computed expectations, the verdicts, the folder's error cases, and the report of
// two runs' folders (its numbers those of `compare BEFORE/ AFTER/`).
#include "common/analysis/cross_rank.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/analysis/intervals.h"
#include "common/analysis/rank_trace.h"
#include "common/analysis/trace_analyser.h"
#include "common/load/load_profile.h"
#include "common/readers/ranks_view.h"
#include "common/readers/run_reader.h"
#include "common/render/html_escape.h"
#include "common/report/html_page.h"
#include "common/report/ranks_report.h"
#include "common/report/report_html.h"
#include "common/report/report_sections.h"
#include "tests/common/trace_builder.h"
#include "tests/support/html_page.h"
#include "tests/support/test_files.h"

namespace libreyolo {
namespace {

using testing::Kernel;
using testing::Step;
using testing::Thread;
using testing::X;

constexpr char kDataload[] = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__";

std::string RankTrace(int rank, int world, const std::vector<std::string>& events,
                      const std::string& backend = "gloo") {
  return absl::StrCat(R"({"schemaVersion": 1, "distributedInfo": {"backend": ")", backend,
                      R"(", "rank": )", rank, R"(, "world_size": )", world,
                      R"(, "pg_config": [{"pg_size": )", world, R"(, "ranks": [0, 1]}]},)",
                      R"( "traceEvents": [)", absl::StrJoin(events, ",\n"), "]}");
}

constexpr int64_t kMs = 1000;  // trace times are in us

// Two 100 ms steps of a CPU-only Gloo rank: dataload 10 ms (with an op inside it), compute
// 50 ms (two nested ops), a 40 ms all-reduce of 1000 floats on the Gloo thread that starts
// 10 ms before the compute ends; `extra_dataload_ms` more data loading at each step's start
// moves everything after it.
std::vector<std::string> CpuRankEvents(int64_t extra_dataload_ms = 0, int64_t comm_ms = 40) {
  std::vector<std::string> ev;
  const std::string gloo_args = R"("Input Dims": [[1000]], "Input type": ["float"])";
  const int64_t step = (100 + extra_dataload_ms) * kMs, d = extra_dataload_ms * kMs;
  for (int s = 0; s < 2; ++s) {
    const int64_t t = s * step;
    ev.push_back(Step(s + 1, t, step));
    ev.push_back(X("user_annotation", kDataload, t, 10 * kMs + d));
    ev.push_back(X("cpu_op", "aten::randn", t + 2 * kMs, 6 * kMs));
    ev.push_back(X("cpu_op", "aten::conv2d", t + d + 10 * kMs, 50 * kMs));
    ev.push_back(X("cpu_op", "aten::convolution", t + d + 20 * kMs, 30 * kMs));
    ev.push_back(X("cpu_op", "c10d::allreduce_", t + d + 55 * kMs, 1 * kMs));
    ev.push_back(X("user_annotation", "gloo:all_reduce", t + d + 50 * kMs, comm_ms * kMs, Thread(2),
                   gloo_args));
  }
  // Outside the steps: not counted.
  ev.push_back(X("user_annotation", "gloo:all_reduce", 10'000 * kMs, 10, Thread(2), gloo_args));
  return ev;
}

TEST(Intervals, UnionIntersectSubtract) {
  const Intervals a = Merge({{5, 9}, {0, 3}, {2, 4}, {7, 7}, {20, 30}});
  EXPECT_EQ(a, (Intervals{{0, 4}, {5, 9}, {20, 30}}));  // the empty [7, 7) dropped
  const Intervals b{{1, 2}, {3, 6}, {8, 25}};
  EXPECT_EQ(Intersect(a, b), (Intervals{{1, 2}, {3, 4}, {5, 6}, {8, 9}, {20, 25}}));
  EXPECT_EQ(Subtract(a, b), (Intervals{{0, 1}, {2, 3}, {6, 8}, {25, 30}}));
  EXPECT_EQ(Length(a), 18);
  EXPECT_TRUE(Inside(a, 0));
  EXPECT_FALSE(Inside(a, 4));
  EXPECT_TRUE(Inside(a, 29));
  EXPECT_FALSE(Inside(a, 30));
  IntervalUnion u;  // merged as it goes: 10,000 nested intervals are one
  for (int64_t i = 0; i < 10'000; ++i) u.Add({i, 20'000 - i});
  u.Add({30'000, 30'001});
  EXPECT_EQ(u.Take(), (Intervals{{0, 20'000}, {30'000, 30'001}}));
}

RankFigures Analyse(const std::string& json) {
  auto f = AnalyseRankTraceText(json);
  EXPECT_TRUE(f.ok()) << f.status();
  return f.ok() ? *f : RankFigures{};
}

TEST(RankTrace, CpuFiguresPerStep) {
  const RankFigures f = Analyse(RankTrace(1, 2, CpuRankEvents()));
  EXPECT_EQ(f.info.rank, 1);
  EXPECT_EQ(f.info.world_size, 2);
  EXPECT_EQ(f.info.backend, "gloo");
  EXPECT_EQ(f.steps, 2);
  EXPECT_DOUBLE_EQ(f.step_ms, 100);
  EXPECT_DOUBLE_EQ(f.dataload_ms, 10);  // the op inside data loading is not compute
  EXPECT_DOUBLE_EQ(f.compute_ms, 50);   // nested ops count once; c10d:: calls not at all
  EXPECT_DOUBLE_EQ(f.comm_ms, 40);
  EXPECT_DOUBLE_EQ(f.allreduce_ms, 40);
  EXPECT_DOUBLE_EQ(f.exposed_comm_ms, 30);  // 10 of its 40 ms overlap the compute
  EXPECT_EQ(f.collectives, 2);
  ASSERT_TRUE(f.allreduce_bytes.has_value());
  EXPECT_DOUBLE_EQ(*f.allreduce_bytes, 4000.0);  // 1000 floats per step
  EXPECT_FALSE(f.gpu_comm);
  using StepMs = std::vector<std::pair<int64_t, double>>;
  EXPECT_EQ(f.comm_ms_by_step, (StepMs{{1, 40.0}, {2, 40.0}}));
}

// The profiler may stop while the last all-reduce still runs: Kineto writes that span with
// "finished": false and no inputs. It is a call all the same, counted at the others' mean size.
TEST(RankTrace, AnUnfinishedAllReduceCountsAtTheMeanSize) {
  std::vector<std::string> ev = CpuRankEvents();
  ev.erase(std::remove_if(ev.begin(), ev.end(),
                          [](const std::string& e) {
                            return e.find("gloo:all_reduce") != std::string::npos &&
                                   e.find("\"ts\": 150000") != std::string::npos;
                          }),
           ev.end());
  ev.push_back(X("user_annotation", "gloo:all_reduce", 150 * kMs, 40 * kMs, Thread(2),
                 R"("finished": false)"));
  const RankFigures f = Analyse(RankTrace(0, 2, ev));
  EXPECT_EQ(f.collectives, 2);
  ASSERT_TRUE(f.allreduce_bytes.has_value());
  EXPECT_DOUBLE_EQ(*f.allreduce_bytes, 4000.0);  // 1 sized call of 4000 bytes, 2 calls, 2 steps
}

TEST(RankTrace, RecordParamCommsSizesWinOverSpanShapes) {
  std::vector<std::string> ev = CpuRankEvents();
  for (int64_t t : {50 * kMs, 150 * kMs}) {
    ev.push_back(X("cpu_op", "record_param_comms", t, 1, testing::kMain,
                   R"("In msg nelems": 500, "dtype": "BFloat16", "Collective name": "allreduce")"));
  }
  const RankFigures f = Analyse(RankTrace(0, 2, ev));
  ASSERT_TRUE(f.allreduce_bytes.has_value());
  EXPECT_DOUBLE_EQ(*f.allreduce_bytes, 1000.0);  // 500 bf16 per step
  EXPECT_DOUBLE_EQ(f.compute_ms, 50);            // record_param_comms is no compute
}

TEST(RankTrace, GpuCollectivesAreTimedOnKernels) {
  std::vector<std::string> ev;
  for (int s = 0; s < 2; ++s) {
    const int64_t t = s * 100;
    ev.push_back(Step(s + 1, t, 100));
    ev.push_back(X("user_annotation", "nccl:all_reduce", t + 40, 2));  // the launch, on the CPU
    ev.push_back(Kernel("volta_sgemm_128x64_nn", t + 10, 50));
    ev.push_back(
        Kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*)", t + 50, 40, -1, 20));
  }
  const RankFigures f = Analyse(RankTrace(0, 2, ev, "nccl"));
  EXPECT_TRUE(f.gpu_comm);
  EXPECT_DOUBLE_EQ(f.compute_ms, 0.050);
  EXPECT_DOUBLE_EQ(f.comm_ms, 0.040);
  EXPECT_DOUBLE_EQ(f.exposed_comm_ms, 0.030);
  EXPECT_EQ(f.collectives, 2);
  EXPECT_FALSE(f.allreduce_bytes.has_value());  // no sizes recorded: n/a, not 0
}

TEST(RankTrace, NoStepsIsAnError) {
  auto f = AnalyseRankTraceText(RankTrace(0, 2, {X("cpu_op", "aten::mm", 0, 5)}));
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(f.status().message().find("ProfilerStep"), std::string::npos);
}

// Malformed input is an error or a figure, never a crash: every prefix of a rank's trace, values
// of the wrong type, nesting beyond any trace's.
TEST(RankTrace, HostileInput) {
  const std::string whole = RankTrace(0, 2, CpuRankEvents());
  for (size_t n = 0; n < whole.size(); n += 7) {
    (void)AnalyseRankTraceText(whole.substr(0, n));
  }
  auto typed = AnalyseRankTraceText(
      R"({"distributedInfo": {"rank": "zero", "world_size": -3},
          "traceEvents": [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1",
                           "ts": 0, "dur": 10},
                          {"ph": "X", "cat": "user_annotation", "name": "gloo:all_reduce",
                           "ts": "1", "dur": 1e300, "args": {"Input Dims": [[1e300, -1]]}},
                          {"ph": "X", "name": "ProfilerStep#x", "ts": 0, "dur": 5}, 7, null]})");
  ASSERT_TRUE(typed.ok()) << typed.status();
  EXPECT_EQ(typed->info.rank, -1);
  EXPECT_EQ(typed->info.world_size, -1);
  EXPECT_EQ(typed->steps, 1);
  EXPECT_DOUBLE_EQ(typed->comm_ms, 0);
  const std::string deep = std::string(10'000, '[') + std::string(10'000, ']');
  auto too_deep = AnalyseRankTraceText(deep);
  EXPECT_EQ(too_deep.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(RankTrace, DtypeBytes) {
  EXPECT_EQ(DtypeBytes("float"), 4);
  EXPECT_EQ(DtypeBytes("Float"), 4);
  EXPECT_EQ(DtypeBytes("c10::BFloat16"), 2);
  EXPECT_EQ(DtypeBytes("c10::Half"), 2);
  EXPECT_EQ(DtypeBytes("double"), 8);
  EXPECT_EQ(DtypeBytes("long int"), 8);
  EXPECT_FALSE(DtypeBytes("TensorList").has_value());
}

RankFigures Fig(int64_t rank, double step, double compute, double dataload, double comm,
                double exposed, std::optional<double> bytes = std::nullopt) {
  RankFigures f;
  f.info = {"gloo", rank, 0};
  f.steps = 4;
  f.step_ms = step;
  f.compute_ms = compute;
  f.dataload_ms = dataload;
  f.comm_ms = f.allreduce_ms = comm;
  f.exposed_comm_ms = exposed;
  f.allreduce_bytes = bytes;
  return f;
}

TEST(CrossRank, NamesTheStragglerAndItsWait) {
  const CrossRankResult r =
      AnalyseCrossRank({Fig(0, 84, 10, 0, 70, 68, 21672), Fig(1, 86, 10, 62, 6, 4, 21672)});
  EXPECT_EQ(r.world_size, 2);
  EXPECT_DOUBLE_EQ(r.step_ms_mean, 85);
  EXPECT_DOUBLE_EQ(r.step_spread_ms, 2);
  EXPECT_DOUBLE_EQ(r.step_spread_pct, 100.0 * 2 / 85);
  ASSERT_TRUE(r.straggler.has_value());
  EXPECT_EQ(*r.straggler, 1);
  EXPECT_EQ(r.wait_for_rank, 1);
  EXPECT_DOUBLE_EQ(*r.collective_wait_ms, 64);  // 70 - 6
  EXPECT_DOUBLE_EQ(*r.straggler_extra_dataload_ms, 62);
  EXPECT_DOUBLE_EQ(*r.straggler_extra_compute_ms, 0);
  EXPECT_DOUBLE_EQ(r.comm_ms, 38);
  EXPECT_DOUBLE_EQ(r.exposed_comm_ms, 36);
  EXPECT_DOUBLE_EQ(*r.comm_overlap_pct, 100.0 * (1 - 36.0 / 38.0));
  EXPECT_DOUBLE_EQ(*r.allreduce_bytes, 21672);
  // nccl-tests: algbw = bytes / time of the rank that waits least (6 ms); busbw x 2(n-1)/n = 1.
  EXPECT_DOUBLE_EQ(*r.algbw_gbps, 21672 / 0.006 / 1e9);
  EXPECT_DOUBLE_EQ(*r.busbw_gbps, *r.algbw_gbps);
  EXPECT_DOUBLE_EQ(*r.load_imbalance_pct, 100.0 * (72.0 / 41.0 - 1));  // busy 10, 72
  EXPECT_NE(r.verdict.find("rank 1 is a straggler: its dataload is 62.0 ms longer"),
            std::string::npos)
      << r.verdict;
  EXPECT_NE(absl::StrJoin(r.levers, "\n").find("num_workers"), std::string::npos);
}

TEST(CrossRank, BusBandwidthFactorForFourRanks) {
  const CrossRankResult r =
      AnalyseCrossRank({Fig(0, 10, 5, 0, 2, 1, 1e9), Fig(1, 10, 5, 0, 2, 1, 1e9),
                        Fig(2, 10, 5, 0, 2, 1, 1e9), Fig(3, 10, 5, 0, 2, 1, 1e9)});
  EXPECT_DOUBLE_EQ(*r.algbw_gbps, 500);  // 1 GB in 2 ms
  EXPECT_DOUBLE_EQ(*r.busbw_gbps, 750);  // x 2 * 3 / 4
  EXPECT_FALSE(r.straggler.has_value());
  EXPECT_DOUBLE_EQ(*r.collective_wait_ms, 0);
  EXPECT_DOUBLE_EQ(*r.load_imbalance_pct, 0);
}

TEST(CrossRank, SmallWaitNamesNoStraggler) {
  // The others wait 0.5 ms per 20 ms step: under max(1 ms, 5 % of the step).
  const CrossRankResult r =
      AnalyseCrossRank({Fig(0, 20, 15, 1, 3.5, 1), Fig(1, 20, 15, 1.5, 3, 1)});
  EXPECT_FALSE(r.straggler.has_value());
  EXPECT_EQ(r.wait_for_rank, 1);
  EXPECT_DOUBLE_EQ(*r.collective_wait_ms, 0.5);
  EXPECT_FALSE(r.straggler_extra_dataload_ms.has_value());
  EXPECT_EQ(r.verdict.rfind("balanced", 0), 0u) << r.verdict;
}

TEST(CrossRank, CommunicationBound) {
  const CrossRankResult r =
      AnalyseCrossRank({Fig(0, 100, 60, 0, 40, 30), Fig(1, 100, 60, 0, 40, 30)});
  EXPECT_FALSE(r.straggler.has_value());
  EXPECT_EQ(r.verdict.rfind("communication-bound: 30.0 ms of the 100.0 ms step (30%)", 0), 0u)
      << r.verdict;
  EXPECT_NE(absl::StrJoin(r.levers, "\n").find("bucket_cap_mb"), std::string::npos);
  EXPECT_NE(absl::StrJoin(r.levers, "\n").find("gradient_as_bucket_view"), std::string::npos);
}

TEST(CrossRank, ExposedCommunicationOutweighsASmallStraggler) {
  // The others wait 2.6 ms for rank 1, but rank 1 itself (whom nobody waits for) has 4.2 ms of
  // exposed communication: the headline is the communication, the straggler comes second.
  const CrossRankResult r =
      AnalyseCrossRank({Fig(0, 12, 4.4, 0.4, 6.8, 6.6), Fig(1, 12, 5.5, 0.4, 4.2, 4.2)});
  ASSERT_TRUE(r.straggler.has_value());
  EXPECT_EQ(*r.straggler, 1);
  EXPECT_EQ(r.verdict.rfind("communication-bound: 5.4 ms of the 12.0 ms step (45%)", 0), 0u)
      << r.verdict;
  EXPECT_NE(r.verdict.find("rank 1 is a small straggler (the others wait 2.6 ms per step"),
            std::string::npos)
      << r.verdict;
}

// One step in which rank 0 was descheduled (rank 1 waited 80 ms for it) moves the mean wait to
// 20 ms per step, not the median (0): no straggler. The same 20 ms in every step is one.
TEST(CrossRank, ANoisyStepIsNoStraggler) {
  auto with_steps = [](RankFigures f, std::vector<double> comm) {
    for (size_t i = 0; i < comm.size(); ++i) {
      f.comm_ms_by_step.emplace_back(static_cast<int64_t>(i + 2), comm[i]);
    }
    return f;
  };
  const CrossRankResult noisy =
      AnalyseCrossRank({with_steps(Fig(0, 100, 60, 0, 5, 2), {5, 5, 5, 5}),
                        with_steps(Fig(1, 100, 60, 0, 25, 2), {5, 5, 5, 85})});
  EXPECT_DOUBLE_EQ(*noisy.collective_wait_ms, 20);
  EXPECT_DOUBLE_EQ(*noisy.collective_wait_median_ms, 0);
  EXPECT_EQ(noisy.wait_for_rank, 0);
  EXPECT_FALSE(noisy.straggler.has_value());
  const CrossRankResult steady =
      AnalyseCrossRank({with_steps(Fig(0, 100, 60, 0, 5, 2), {5, 5, 5, 5}),
                        with_steps(Fig(1, 100, 60, 0, 25, 2), {25, 25, 25, 25})});
  EXPECT_DOUBLE_EQ(*steady.collective_wait_median_ms, 20);
  ASSERT_TRUE(steady.straggler.has_value());
  EXPECT_EQ(*steady.straggler, 0);
}

TEST(CrossRank, FiguresThatDoNotApplyAreNull) {
  const CrossRankResult none = AnalyseCrossRank({Fig(0, 10, 0, 0, 0, 0), Fig(1, 10, 0, 0, 0, 0)});
  EXPECT_FALSE(none.comm_overlap_pct.has_value());
  EXPECT_FALSE(none.collective_wait_ms.has_value());
  EXPECT_FALSE(none.allreduce_bytes.has_value());
  EXPECT_FALSE(none.algbw_gbps.has_value());
  EXPECT_FALSE(none.load_imbalance_pct.has_value());
  const CrossRankResult one = AnalyseCrossRank({Fig(0, 10, 5, 0, 2, 1)});
  EXPECT_FALSE(one.wait_for_rank.has_value());
  EXPECT_FALSE(one.straggler.has_value());
}

// Real traces (one rank each of a 128-rank NCCL and a 300-rank Gloo job): on the NCCL rank the
// communication is timed on the kernels and equals the ordinary analyser's (HTA-checked,
// tests/hta) figures; the all-reduce bytes are the nccl:/gloo:all_reduce spans' Input Dims x 4
// (float), summed in Python from the same files: 157097854 and 9614728 bytes per step.
TEST(RankTrace, FixtureTracesOfOneRank) {
  const std::string dir = absl::StrCat(LIBREYOLO_FIXTURES_DIR, "/traces/");
  auto nccl = AnalyseRankTraceFile(dir + "trace_filter.json.gz");
  ASSERT_TRUE(nccl.ok()) << nccl.status();
  EXPECT_EQ(nccl->info.backend, "nccl");
  EXPECT_EQ(nccl->info.rank, 0);
  EXPECT_EQ(nccl->info.world_size, 128);
  EXPECT_EQ(nccl->steps, 2);
  EXPECT_TRUE(nccl->gpu_comm);
  auto p = AnalyseTraceFile(dir + "trace_filter.json.gz");
  ASSERT_TRUE(p.ok()) << p.status();
  // Within 10 ns per step: both round microsecond floats to whole ns, at different points.
  EXPECT_NEAR(nccl->comm_ms, *p->comm_ms_per_step, 1e-5);
  EXPECT_NEAR(nccl->exposed_comm_ms, *p->comm_exposed_ms_per_step, 1e-5);
  EXPECT_DOUBLE_EQ(nccl->allreduce_ms, 0);  // its GPU collectives are all_to_all only
  EXPECT_DOUBLE_EQ(*nccl->allreduce_bytes, 157097854.0);

  auto gloo = AnalyseRankTraceFile(dir + "cpu_only.json.gz");
  ASSERT_TRUE(gloo.ok()) << gloo.status();
  EXPECT_EQ(gloo->info.backend, "gloo");
  EXPECT_EQ(gloo->info.rank, 34);
  EXPECT_EQ(gloo->info.world_size, 300);
  EXPECT_FALSE(gloo->gpu_comm);
  EXPECT_DOUBLE_EQ(*gloo->allreduce_bytes, 9614728.0);
  EXPECT_GT(gloo->comm_ms, 0);
}

// --- the folder ------------------------------------------------------------------------------

absl::Status BuildStatus(const std::string& dir) { return BuildRanksView(dir).status(); }

void ExpectError(const std::string& dir, absl::StatusCode code, const std::string& part) {
  const absl::Status s = BuildStatus(dir);
  EXPECT_EQ(s.code(), code) << s;
  EXPECT_NE(s.message().find(part), std::string::npos) << s.message();
}

TEST(RankFolder, AnalysesEveryRankInParallelAsInOneThread) {
  test::TempDir d;
  d.Write("rank0.json", RankTrace(0, 2, CpuRankEvents(0, 50)));
  d.Write("rank1.json", RankTrace(1, 2, CpuRankEvents(60, 20)));
  auto one = BuildRanksView(d.path(), 1);
  auto many = BuildRanksView(d.path(), 8);
  ASSERT_TRUE(one.ok()) << one.status();
  ASSERT_TRUE(many.ok()) << many.status();
  EXPECT_EQ(one->threads, 1);
  EXPECT_EQ(many->threads, 2);
  many->threads = 1;
  EXPECT_EQ(RenderRanksJson(*one), RenderRanksJson(*many));
  const CrossRankResult& r = one->result;
  ASSERT_EQ(r.ranks.size(), 2u);
  EXPECT_DOUBLE_EQ(r.ranks[1].dataload_ms, 70);  // 10 + 60 ms
  ASSERT_TRUE(r.straggler.has_value());
  EXPECT_EQ(*r.straggler, 1);
  EXPECT_DOUBLE_EQ(*r.collective_wait_ms, 30);  // 50 - 20 ms
  EXPECT_DOUBLE_EQ(*r.straggler_extra_dataload_ms, 60);
  EXPECT_NE(RenderRanksText(*one).find("straggler            rank 1"), std::string::npos);
}

// A job profile's `ranks` (RenderRanksJson) read back gives the same view: the same JSON, the
// same text, every figure of CrossRankMetrics (nulls included) and every rank's column.
TEST(RankFolder, TheJsonFormReadsBackAsTheSameView) {
  test::TempDir d;
  d.Write("rank0.json", RankTrace(0, 2, CpuRankEvents(0, 50)));
  d.Write("rank1.json", RankTrace(1, 2, CpuRankEvents(60, 20)));
  auto view = BuildRanksViewOfTraces("job 7", {d.File("rank1.json"), d.File("rank0.json")}, 1);
  ASSERT_TRUE(view.ok()) << view.status();
  EXPECT_EQ(view->result.ranks[0].info.rank, 0) << "in rank order, whatever the order given";
  view->result.comm_overlap_pct = 2.7123032337068254;  // 17 digits survive
  const std::string json = RenderRanksJson(*view);
  auto back = RanksViewFromJson(json);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(RenderRanksJson(*back), json);
  EXPECT_EQ(RenderRanksText(*back), RenderRanksText(*view));
  for (const CrossRankMetric& m : CrossRankMetrics()) {
    EXPECT_EQ(m.Value(back->result), m.Value(view->result)) << m.name;
  }
  EXPECT_EQ(*back->result.comm_overlap_pct, 2.7123032337068254);
  EXPECT_EQ(RanksViewFromJson("[1]").status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(RanksViewFromJson("{\"ranks\": [1]}").status().code(), absl::StatusCode::kDataLoss);
  // Given traces are checked as a folder's are: a rank missing is named.
  EXPECT_NE(BuildRanksViewOfTraces("job 7", {d.File("rank1.json")}).status().message().find(
                "rank 0 is missing"),
            std::string::npos);
}

TEST(RankFolder, Errors) {
  {
    test::TempDir d;
    ExpectError(d.path(), absl::StatusCode::kInvalidArgument, "holds no Chrome trace");
  }
  {
    test::TempDir d;
    d.Write("a.json", RankTrace(0, 2, CpuRankEvents()));
    d.Write("b.json", RankTrace(1, 4, CpuRankEvents()));
    ExpectError(d.path(), absl::StatusCode::kInvalidArgument, "mixed runs");
  }
  {
    test::TempDir d;
    d.Write("a.json", RankTrace(1, 2, CpuRankEvents()));
    d.Write("b.json", RankTrace(1, 2, CpuRankEvents()));
    ExpectError(d.path(), absl::StatusCode::kInvalidArgument, "rank 1 appears twice");
  }
  {
    // Two ranks of a 4-rank job are analysed for the ranks present (issue 40), the missing ones
    // named; one rank alone of it is refused, naming what the folder holds and --rank.
    test::TempDir d;
    d.Write("a.json", RankTrace(0, 4, CpuRankEvents()));
    d.Write("b.json", RankTrace(2, 4, CpuRankEvents()));
    auto v = BuildRanksView(d.path());
    ASSERT_TRUE(v.ok()) << v.status();
    EXPECT_EQ(v->result.world_size, 4);
    EXPECT_EQ(v->result.missing_ranks, (std::vector<int64_t>{1, 3}));
    test::TempDir huge;  // a hostile world size: the missing ranks are not listed
    huge.Write("a.json", RankTrace(0, 1 << 30, CpuRankEvents()));
    huge.Write("b.json", RankTrace(1, 1 << 30, CpuRankEvents()));
    ExpectError(huge.path(), absl::StatusCode::kInvalidArgument, "more than any job's");
    test::TempDir one;
    one.Write("b.json", RankTrace(2, 4, CpuRankEvents()));
    ExpectError(one.path(), absl::StatusCode::kInvalidArgument,
                "holds rank 2 of a 4-rank job (backend gloo); ranks 0..1, 3 are missing");
  }
  {
    test::TempDir d;
    d.Write("a.json", testing::Trace({Step(1, 0, 10)}));
    ExpectError(d.path(), absl::StatusCode::kInvalidArgument, "has no distributedInfo");
  }
  {
    test::TempDir d;  // a rank that is no count is no rank
    d.Write("a.json",
            R"({"distributedInfo": {"rank": 1e300, "world_size": 2}, "traceEvents": []})");
    ExpectError(d.path(), absl::StatusCode::kInvalidArgument, "has no distributedInfo");
  }
  {
    test::TempDir d;  // rank 1's events cut off mid-file: the rank is named
    d.Write("a.json", RankTrace(0, 2, CpuRankEvents()));
    const std::string whole = RankTrace(1, 2, CpuRankEvents());
    d.Write("b.json", whole.substr(0, whole.size() / 2));
    ExpectError(d.path(), absl::StatusCode::kDataLoss, "rank 1 (");
  }
  {
    test::TempDir d;  // not JSON at all
    d.Write("a.json", RankTrace(0, 2, CpuRankEvents()));
    d.Write("b.json", "{ this is not json");
    ExpectError(d.path(), absl::StatusCode::kDataLoss, "b.json");
  }
}

TEST(RankFolder, ReaderDispatch) {
  test::TempDir d;
  d.Write("r0.json", RankTrace(0, 2, CpuRankEvents()));
  d.Write("r1.json", RankTrace(1, 2, CpuRankEvents(30)));
  auto load = [](const std::string& p) { return LoadProfile(p); };
  ReaderInvocation in;
  in.reader = ReaderId::kSummary;
  in.inputs = {d.path()};
  in.read_folders = true;
  auto cross = RunReader(in, load);
  ASSERT_TRUE(cross.ok()) << cross.status();
  EXPECT_NE(cross->json.find("\"world_size\": 2"), std::string::npos);
  in.reader = ReaderId::kKernels;
  EXPECT_EQ(RunReader(in, load).status().code(), absl::StatusCode::kInvalidArgument);
  in.reader = ReaderId::kPhases;
  in.rank = 1;
  auto phases = RunReader(in, load);
  ASSERT_TRUE(phases.ok()) << phases.status();
  EXPECT_NE(phases->json.find("rank 1"), std::string::npos);  // labelled by folder and rank
  in.rank = 7;
  auto bad = RunReader(in, load);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("holds ranks 0..1"), std::string::npos) << bad.status();
  in.rank.reset();
  in.read_folders = false;  // a daemon's reader RPC: a folder is no input
  EXPECT_FALSE(RunReader(in, load).ok());
}

// --- the report of two runs' folders (issue 21 §2) --------------------------------------------

using test::Count;
using test::SectionOf;

// The delta table's rows: metric -> (data-before, data-after).
std::map<std::string, std::pair<std::string, std::string>> DeltaRows(const std::string& html) {
  std::map<std::string, std::pair<std::string, std::string>> rows;
  static const std::regex re(
      R"re(<tr data-metric="([^"]*)" data-before="([^"]*)" data-after="([^"]*)">)re");
  for (auto it = std::sregex_iterator(html.begin(), html.end(), re); it != std::sregex_iterator();
       ++it) {
    rows[(*it)[1]] = {(*it)[2], (*it)[3]};
  }
  return rows;
}

// The left axis' top value and unit of each chart: "200 ms per step".
std::vector<std::string> AxisTops(const std::string& html) {
  std::vector<std::string> tops;
  static const std::regex re(
      R"re(data-axis="top">([0-9.]+)</text>\n<text [^>]*data-axis="unit">([^<]*)</text>)re");
  for (auto it = std::sregex_iterator(html.begin(), html.end(), re); it != std::sregex_iterator();
       ++it) {
    tops.push_back(std::string((*it)[1]) + " " + std::string((*it)[2]));
  }
  return tops;
}

// Two runs of two ranks, the same but for rank 1's 60 ms more data loading per step in the
// second (its step 160 ms, the first run's 100 ms).
struct TwoRuns {
  test::TempDir even, slow;
  TwoRuns() {
    even.Write("rank0.json", RankTrace(0, 2, CpuRankEvents(0, 50)));
    even.Write("rank1.json", RankTrace(1, 2, CpuRankEvents(0, 50)));
    slow.Write("rank0.json", RankTrace(0, 2, CpuRankEvents(0, 50)));
    slow.Write("rank1.json", RankTrace(1, 2, CpuRankEvents(60, 20)));
  }
};

TEST(RanksReport, TwoRunsShowTheRowsOfCompare) {
  TwoRuns runs;
  auto html = RenderReportFiles({runs.even.path(), runs.slow.path()}, {"run A", "run B"});
  ASSERT_TRUE(html.ok()) << html.status();
  auto before = BuildRanksView(runs.even.path());
  auto after = BuildRanksView(runs.slow.path());
  ASSERT_TRUE(before.ok() && after.ok());
  const CompareResult c = CompareRanks(*before, *after);

  // Both runs named, with the labels given.
  EXPECT_NE(html->find("<div class=\"meta\">before: run A: 2 ranks, gloo</div>"),
            std::string::npos);
  EXPECT_NE(html->find("<div class=\"meta\">after: run B: 2 ranks, gloo</div>"), std::string::npos);
  // Both verdicts with their levers.
  const std::string verdicts = SectionOf(*html, "verdicts");
  for (const CrossRankResult* r : {&before->result, &after->result}) {
    EXPECT_NE(verdicts.find(HtmlEscape(r->verdict)), std::string::npos) << r->verdict;
    for (const std::string& l : r->levers) {
      EXPECT_NE(verdicts.find(HtmlEscape(l)), std::string::npos) << l;
    }
  }
  ASSERT_TRUE(after->result.straggler.has_value());
  EXPECT_EQ(*after->result.straggler, 1);
  // Two per-rank charts on one scale: the slowed run's 160 ms step tops both axes at 200 ms,
  // where the first run alone is drawn to 100 ms.
  const std::string charts = SectionOf(*html, "ranks-chart");
  EXPECT_EQ(Count(charts, "<svg"), 2u);
  EXPECT_EQ(AxisTops(charts), (std::vector<std::string>{"200 ms per step", "200 ms per step"}));
  EXPECT_EQ(AxisTops(RenderRanksReportHtml(*before)), std::vector<std::string>{"100 ms per step"});
  // The figures: exactly compare's rows (every one with a value, the exact doubles), and no
  // other; hand-checked where the runs differ.
  const auto rows = DeltaRows(SectionOf(*html, "deltas"));
  size_t shown = 0;
  for (const CompareDelta& d : c.deltas) {
    if (!d.before && !d.after) continue;
    ++shown;
    const auto it = rows.find(d.metric);
    ASSERT_NE(it, rows.end()) << d.metric;
    EXPECT_EQ(it->second.first, ExactValue(d.before)) << d.metric;
    EXPECT_EQ(it->second.second, ExactValue(d.after)) << d.metric;
  }
  EXPECT_EQ(rows.size(), shown);
  size_t compared = 0;
  for (const CrossRankMetric& m : CrossRankMetrics()) {
    if (m.compared) ++compared;
  }
  EXPECT_EQ(shown, compared + 2 * 4) << "every figure compare compares, and 4 per rank";
  EXPECT_EQ(rows.at("collective_wait_ms"), std::make_pair(std::string("0"), std::string("30")));
  EXPECT_EQ(rows.at("rank 1 dataload_ms"), std::make_pair(std::string("10"), std::string("70")));
  EXPECT_EQ(rows.at("rank 1 step_ms"), std::make_pair(std::string("100"), std::string("160")));
  EXPECT_EQ(rows.at("rank 0 step_ms"), std::make_pair(std::string("100"), std::string("100")));
  EXPECT_NE(SectionOf(*html, "deltas").find(HtmlEscape(c.bound_after)), std::string::npos);
  // One run each side: no call; the same world size and backend: no warning.
  EXPECT_NE(SectionOf(*html, "significance").find("no call"), std::string::npos);
  EXPECT_TRUE(c.warnings.empty());
  EXPECT_EQ(Count(*html, "data-key=\"warning\""), 0u);
  // Both per-rank tables.
  const std::string tables = SectionOf(*html, "ranks");
  EXPECT_EQ(Count(tables, "<table"), 2u);
  EXPECT_NE(tables.find(HtmlEscape(runs.even.File("rank1.json"))), std::string::npos);
  EXPECT_NE(tables.find(HtmlEscape(runs.slow.File("rank1.json"))), std::string::npos);
}

// Different world sizes: compare's "not like for like" warning, on the page as compare prints it.
TEST(RanksReport, DifferentWorldSizesCarryCompareWarning) {
  TwoRuns runs;
  test::TempDir wide;
  for (int r = 0; r < 3; ++r) {
    wide.Write(absl::StrCat("rank", r, ".json"), RankTrace(r, 3, CpuRankEvents(0, 50)));
  }
  auto html = RenderReportFiles({runs.even.path(), wide.path()}, {});
  ASSERT_TRUE(html.ok()) << html.status();
  auto before = BuildRanksView(runs.even.path());
  auto after = BuildRanksView(wide.path());
  ASSERT_TRUE(before.ok() && after.ok());
  const CompareResult c = CompareRanks(*before, *after);
  ASSERT_EQ(c.warnings.size(), 1u);
  EXPECT_EQ(c.warnings[0],
            "different world_size: 2 before, 3 after; the numbers are not like for like");
  EXPECT_NE(SectionOf(*html, "significance").find(HtmlEscape("warning: " + c.warnings[0])),
            std::string::npos);
  EXPECT_EQ(Count(*html, "data-key=\"warning\""), 1u);
  // Without labels the folders name the runs.
  EXPECT_NE(html->find(absl::StrCat("after: ", HtmlEscape(wide.path()), ": 3 ranks, gloo")),
            std::string::npos);
}

TEST(RanksReport, AFolderBesideAProfileIsRefused) {
  TwoRuns runs;
  const std::string file = runs.slow.File("rank0.json");
  for (const std::vector<std::string>& paths : {std::vector<std::string>{runs.even.path(), file},
                                                std::vector<std::string>{file, runs.even.path()}}) {
    const absl::Status s = RenderReportFiles(paths, {}).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_NE(
        s.message().find(absl::StrCat(runs.even.path(), " is a folder while ", file, " is not")),
        std::string::npos)
        << s.message();
    EXPECT_NE(s.message().find("libreyolo profile report BEFORE/ AFTER/"), std::string::npos);
  }
  // A bad folder is the folder's own error, as `compare` gives it.
  test::TempDir empty;
  const absl::Status s = RenderReportFiles({runs.even.path(), empty.path()}, {}).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("holds no Chrome trace"), std::string::npos) << s.message();
}

TEST(RanksReport, TextFromTheInputsIsEscaped) {
  TwoRuns runs;
  const std::string evil = R"(<img src=x onerror=alert(1)>&"')";
  test::TempDir d;
  const std::string dir = d.File(evil);
  d.Write(evil + "/rank0.json", RankTrace(0, 2, CpuRankEvents(0, 50)));
  d.Write(evil + "/rank1.json", RankTrace(1, 2, CpuRankEvents(0, 50)));
  for (const std::vector<std::string>& labels :
       {std::vector<std::string>{}, std::vector<std::string>{"<script>alert(2)</script>", evil}}) {
    auto html = RenderReportFiles({dir, runs.slow.path()}, labels);
    ASSERT_TRUE(html.ok()) << html.status();
    EXPECT_EQ(Count(*html, "<img"), 0u);
    EXPECT_EQ(Count(*html, "<script"), 1u);  // only the page's own sorting script
    EXPECT_NE(html->find("&lt;img src=x onerror=alert(1)&gt;&amp;&quot;&#39;"), std::string::npos);
  }
}

// A change without a direction (all-reduce bytes: the model's gradients) is neither better nor
// worse on the page, as in compare's text.
TEST(RanksReport, UndirectedChangeHasNoCall) {
  CompareResult r;
  r.deltas.push_back({"allreduce_bytes", "B", false, 1000.0, 2000.0});
  r.deltas.back().directional = false;
  r.deltas.push_back({"comm_ms", "ms", false, 10.0, 20.0});
  const std::string table = DeltasTable(r);
  EXPECT_EQ(Count(table, "worse"), 2u) << table;  // comm_ms' class and text only
  EXPECT_NE(table.find("data-metric=\"comm_ms\""), std::string::npos);
}

// --- traces without steps: Kineto's on-demand traces of an attach job --------------------------

// One rank traced on demand: no distributedInfo, no ProfilerStep; Kineto's "PyTorch Profiler
// (0)" span over [start, start + 200 ms); a 30 ms op at 10 ms, a gloo all-reduce of 1000 floats
// at 40 ms lasting `comm_ms`, 5 ms of data loading at 100 ms.
std::string OnDemandRank(int64_t start_ms, int64_t comm_ms) {
  const std::string gloo_args = R"("Input Dims": [[1000]], "Input type": ["float"])";
  const int64_t t = start_ms * kMs;
  const std::vector<std::string> ev = {
      X("cpu_op", "aten::mm", t + 10 * kMs, 30 * kMs),
      X("user_annotation", "gloo:all_reduce", t + 40 * kMs, comm_ms * kMs, Thread(2), gloo_args),
      X("user_annotation", kDataload, t + 100 * kMs, 5 * kMs),
      absl::StrCat(R"j({"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", )j",
                   R"("pid": "Spans", "tid": "PyTorch Profiler", "ts": )", t, R"(, "dur": )",
                   200 * kMs, "}")};
  return absl::StrCat(R"({"schemaVersion": 1, "trace_id": "x", "traceEvents": [)",
                      absl::StrJoin(ev, ",\n"), "]}");
}

constexpr int64_t kNsPerMs = 1'000'000;

TEST(RankTrace, AStepLessTraceIsReadPerWindow) {
  auto read = ReadRankTraceText(OnDemandRank(0, 50));
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->steps(), 0);
  EXPECT_EQ(read->info().rank, -1);
  EXPECT_EQ(read->collective_backend(), "gloo");
  ASSERT_TRUE(read->recorded().has_value());
  EXPECT_EQ(*read->recorded(), (Interval{0, 200 * kNsPerMs}));  // the profiler's own span
  auto f = RankWindowFiguresOf(*std::move(read), "r0", {5 * kNsPerMs, 180 * kNsPerMs});
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_TRUE(f->windowed);
  EXPECT_EQ(f->steps, 0);
  EXPECT_DOUBLE_EQ(f->step_ms, 175);  // the window's length
  EXPECT_DOUBLE_EQ(f->compute_ms, 30);
  EXPECT_DOUBLE_EQ(f->comm_ms, 50);
  EXPECT_DOUBLE_EQ(f->exposed_comm_ms, 50);  // the op ends where the all-reduce starts
  EXPECT_DOUBLE_EQ(f->dataload_ms, 5);
  EXPECT_EQ(f->collectives, 1);
  EXPECT_DOUBLE_EQ(*f->allreduce_bytes, 4000);  // per window
  EXPECT_TRUE(f->comm_ms_by_step.empty());
  // Cut to a window: [20, 60) ms holds 20 ms of the op and 20 of the all-reduce.
  auto cut = RankWindowFiguresOf(*ReadRankTraceText(OnDemandRank(0, 50)), "r0",
                                 {20 * kNsPerMs, 60 * kNsPerMs});
  ASSERT_TRUE(cut.ok()) << cut.status();
  EXPECT_DOUBLE_EQ(cut->step_ms, 40);
  EXPECT_DOUBLE_EQ(cut->compute_ms, 20);
  EXPECT_DOUBLE_EQ(cut->comm_ms, 20);
  EXPECT_EQ(RankWindowFiguresOf(*ReadRankTraceText(OnDemandRank(0, 50)), "r0", {5, 5})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  // Per step it stays an error: no step to divide by.
  EXPECT_EQ(RankFiguresOf(*ReadRankTraceText(OnDemandRank(0, 50)), "r0").status().code(),
            absl::StatusCode::kInvalidArgument);
}

// A straggler whose ops and data loading are no longer than the others': its time goes
// elsewhere (a sleep, Python between ops), and the verdict says so rather than naming a
// negative "longer".
TEST(CrossRank, AStragglerSlowOutsideItsOps) {
  const CrossRankResult r =
      AnalyseCrossRank({Fig(0, 100, 40, 5, 60, 50), Fig(1, 100, 40.5, 4, 10, 5)});
  ASSERT_TRUE(r.straggler.has_value());
  EXPECT_EQ(*r.straggler, 1);
  EXPECT_EQ(r.verdict.rfind("rank 1 is a straggler: the others wait 50.0 ms per step for it", 0),
            0u)
      << r.verdict;
  EXPECT_NE(r.verdict.find("(+0.5 ms and -1.0 ms per step"), std::string::npos) << r.verdict;
  EXPECT_NE(r.verdict.find("outside its profiled ops"), std::string::npos) << r.verdict;
  EXPECT_NE(absl::StrJoin(r.levers, "\n").find("between its ops"), std::string::npos);
}

// Rank folders of an attach job as downloaded (<project>/attach/rank<R>/): traces without
// distributedInfo or steps, their rank and world in the profile beside, compared over the
// window all of them recorded.
void WriteOnDemandRank(test::TempDir& d, int rank, int64_t start_ms, int64_t comm_ms) {
  const std::string dir = absl::StrCat("rank", rank, "/");
  d.Write(dir + "profile_trace.json", OnDemandRank(start_ms, comm_ms));
  d.Write(dir + "profile.json",
          absl::StrCat(R"({"schema": "libreyolo.profile.analysis/v1", "config": {)",
                       R"("traced_process": {"pid": 7, "rank": )", rank,
                       R"(, "world_size": 2}}})"));
}

TEST(RankFolder, OnDemandRanksAreComparedOverTheWindowTheyShare) {
  test::TempDir d;
  WriteOnDemandRank(d, 0, 0, 80);   // waits 70 ms in its all-reduce for rank 1
  WriteOnDemandRank(d, 1, 10, 10);  // started 10 ms later: the window is [10, 200) ms
  auto view = BuildRanksView(d.path(), 2);
  ASSERT_TRUE(view.ok()) << view.status();
  const CrossRankResult& r = view->result;
  EXPECT_TRUE(r.windowed);
  EXPECT_EQ(r.world_size, 2);
  EXPECT_EQ(r.backend, "gloo");
  ASSERT_EQ(r.ranks.size(), 2u);
  EXPECT_DOUBLE_EQ(r.step_ms_mean, 190);
  EXPECT_DOUBLE_EQ(r.step_spread_ms, 0);
  EXPECT_DOUBLE_EQ(r.ranks[0].compute_ms, 30);
  EXPECT_DOUBLE_EQ(r.ranks[0].comm_ms, 80);
  EXPECT_DOUBLE_EQ(r.ranks[1].comm_ms, 10);
  ASSERT_TRUE(r.straggler.has_value());
  EXPECT_EQ(*r.straggler, 1);
  EXPECT_DOUBLE_EQ(*r.collective_wait_ms, 70);
  EXPECT_FALSE(r.collective_wait_median_ms.has_value());
  EXPECT_EQ(r.verdict.rfind("rank 1 is a straggler: the others wait 70.0 ms per window", 0), 0u)
      << r.verdict;
  const std::string text = RenderRanksText(*view);
  EXPECT_NE(text.find("per rank, per window"), std::string::npos) << text;
  EXPECT_NE(text.find("window               190.00 ms"), std::string::npos) << text;
  EXPECT_EQ(text.find("step-time spread"), std::string::npos) << text;
  EXPECT_EQ(text.find("per step"), std::string::npos) << text;
  // The JSON form says so and reads back as the same view.
  const std::string json = RenderRanksJson(*view);
  EXPECT_NE(json.find(R"("figures_per": "window")"), std::string::npos) << json;
  auto back = RanksViewFromJson(json);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(RenderRanksText(*back), text);
  EXPECT_EQ(RenderRanksJson(*back), json);
  // The caller may give the ranks instead of the profiles (the daemon, from RANK).
  auto given = BuildRanksViewOfTraces(
      "job", {RankTraceInput{d.File("rank1/profile_trace.json"), DistributedInfo{"", 1, 2}},
              RankTraceInput{d.File("rank0/profile_trace.json"), DistributedInfo{"", 0, 2}}});
  ASSERT_TRUE(given.ok()) << given.status();
  EXPECT_EQ(given->result.straggler, r.straggler);
  EXPECT_EQ(given->result.collective_wait_ms, r.collective_wait_ms);
}

TEST(RankFolder, OnDemandRanksErrors) {
  {
    test::TempDir d;  // no profile beside to say the rank
    d.Write("rank0/profile_trace.json", OnDemandRank(0, 10));
    ExpectError(d.path(), absl::StatusCode::kInvalidArgument,
                "no profile.json beside it says which rank");
  }
  {
    test::TempDir d;  // traced at different times: nothing to compare
    WriteOnDemandRank(d, 0, 0, 10);
    WriteOnDemandRank(d, 1, 500, 10);
    ExpectError(d.path(), absl::StatusCode::kInvalidArgument, "share no recorded time");
  }
  {
    test::TempDir d;  // one rank with steps, one without
    d.Write("a.json", RankTrace(0, 2, CpuRankEvents()));
    d.Write("b.json", OnDemandRank(0, 10));
    auto v = BuildRanksViewOfTraces(
        d.path(), {RankTraceInput{d.File("a.json"), std::nullopt},
                   RankTraceInput{d.File("b.json"), DistributedInfo{"gloo", 1, 2}}});
    EXPECT_EQ(v.status().code(), absl::StatusCode::kInvalidArgument) << v.status();
    EXPECT_NE(v.status().message().find("marks ProfilerStep#N steps and rank 1's"),
              std::string::npos)
        << v.status();
  }
}

}  // namespace
}  // namespace libreyolo
