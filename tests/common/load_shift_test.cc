// Issue 22, section 3: a job whose machine load changed mid-job (latency 36.8 ms, profiled step
// 90.1 ms, probe baseline 81.9 ms) reported 4.8 % overhead and no warning. The profile's own
// numbers now say when they cannot all be true, in the profile and the summary.
#include "common/analysis/load_shift.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "common/readers/summary_view.h"

namespace libreyolo {
namespace {

using ::testing::HasSubstr;

// One of our jobs: an unprofiled headline, a recorded window of 20 steps, one accepted probe.
Profile Job(double step_ms, double profiled_step_ms, double baseline_ms, double ci_high_pct) {
  Profile p;
  p.tool_name = kOurToolName;
  p.source_kind = "profile";
  p.mode = "inference";
  p.step_ms = step_ms;
  p.real_steps = 20;
  p.window_wall_ms = profiled_step_ms * 20;
  p.profiler_json = absl::StrCat("{\"overhead_pct\":4.8,\"overhead_ci_pct\":[1.5,", ci_high_pct,
                                 "],\"probe_baseline_ms\":[70.0,", baseline_ms, "]}");
  return p;
}

TEST(LoadShift, TheIssuesJobIsNamedOnBothCounts) {
  Profile p = Job(36.8, 90.1, 81.9, 4.8);
  const auto s = DetectLoadShift(p);
  ASSERT_TRUE(s.has_value());
  EXPECT_DOUBLE_EQ(*s->probe_baseline_ms, 81.9) << "the accepted (last) probe";
  EXPECT_THAT(s->note, HasSubstr("the machine's load changed during the job"));
  EXPECT_THAT(s->note, HasSubstr("took 36.80 ms while measuring and 81.90 ms while the overhead "
                                 "was probed (2.2x)"));
  EXPECT_THAT(s->note, HasSubstr("the profiled window's step took 90.10 ms where the measured "
                                 "step (36.80 ms) and the profiler's overhead (at most 4.8 %) "
                                 "allow 38.57 ms (2.3x)"));
  EXPECT_THAT(s->note, HasSubstr("--repeat 3"));

  RecordLoadShift(&p);
  EXPECT_THAT(p.profiler_json, HasSubstr("\"load_shift\":{\"step_ms\":36.8"));
  EXPECT_THAT(p.profiler_json, HasSubstr("\"factor\":1.5"));
  EXPECT_THAT(p.profiler_json, HasSubstr("\"overhead_pct\":4.8")) << "the rest is kept";
  EXPECT_EQ(RecordedLoadShiftNote(p), s->note);
  RecordLoadShift(&p);  // once, however often it is called
  EXPECT_EQ(p.profiler_json.find("load_shift"), p.profiler_json.rfind("load_shift"));

  const SummaryView v = BuildSummary(p, "x");
  EXPECT_EQ(v.load_shift, s->note);
  EXPECT_THAT(RenderSummaryText(v), HasSubstr("  WARNING: the machine's load changed during"));
  EXPECT_THAT(RenderSummaryJson(v), HasSubstr("\"load_shift\": \"the machine's load changed"));
}

// The record is added to the profiler object, never re-written through RapidJSON's DOM: its
// default parse moves some numbers by an ulp, so a job whose load shifted printed another
// overhead_ci_pct than an identical job without a shift (InferJob's identical-job test, about 1
// run in 7 on a loaded box).
TEST(LoadShift, TheRecordLeavesEveryOtherByteOfTheProfilerObject) {
  Profile p = Job(36.8, 90.1, 81.9, 4.8);
  ASSERT_EQ(p.profiler_json.back(), '}');
  p.profiler_json.insert(p.profiler_json.size() - 1,
                         ",\"overhead_ci_pct\":[20.527650541175619,18.817297288061519],"
                         "\"x\":[20.527650541175615,23.931577009712059,0.1,1e-300]");
  const std::string before = p.profiler_json;
  RecordLoadShift(&p);
  ASSERT_NE(p.profiler_json, before);
  EXPECT_EQ(p.profiler_json.substr(0, before.size() - 1), before.substr(0, before.size() - 1));
  EXPECT_EQ(p.profiler_json.back(), '}');
  EXPECT_FALSE(RecordedLoadShiftNote(p).empty());
  Profile empty = Job(36.8, 90.1, 81.9, 4.8);
  RecordLoadShift(&empty);
  rapidjson::Document d;
  d.Parse(empty.profiler_json.c_str());
  ASSERT_FALSE(d.HasParseError()) << empty.profiler_json;
}

TEST(LoadShift, SteadyNumbersSayNothing) {
  // Within the spread of a shared box and the overhead's bound: nothing to say, and the JSON
  // field is null.
  for (const Profile& p : {Job(36.8, 38.9, 37.5, 6.0), Job(36.8, 50.0, 30.0, 4.8),
                           Job(36.8, 36.8 * 1.048 * 1.49, 36.8 * 1.49, 4.8)}) {
    EXPECT_FALSE(DetectLoadShift(p).has_value()) << p.profiler_json;
    Profile recorded = p;
    RecordLoadShift(&recorded);
    EXPECT_EQ(recorded.profiler_json, p.profiler_json);
    EXPECT_THAT(RenderSummaryJson(BuildSummary(recorded, "x")), HasSubstr("\"load_shift\": null"));
  }
}

TEST(LoadShift, AMachineThatGotFasterIsALoadChangeToo) {
  EXPECT_TRUE(DetectLoadShift(Job(90.0, 40.0, 88.0, 3.0)).has_value());
  EXPECT_TRUE(DetectLoadShift(Job(40.0, 41.0, 20.0, 3.0)).has_value());
}

TEST(LoadShift, ProfilesWithoutAnUnprofiledHeadlineAreNotJudged) {
  Profile python = Job(36.8, 90.1, 81.9, 4.8);
  python.tool_name = "libreyolo";  // the Python tool times its step under the profiler
  EXPECT_FALSE(DetectLoadShift(python).has_value());
  Profile trace = Job(36.8, 90.1, 81.9, 4.8);
  trace.source_kind = "trace";
  EXPECT_FALSE(DetectLoadShift(trace).has_value());
  Profile no_probe = Job(36.8, 38.0, 0, 4.8);
  no_probe.profiler_json = "{}";  // no probe, no overhead: the window alone, within 1.5x
  EXPECT_FALSE(DetectLoadShift(no_probe).has_value());
  no_probe.window_wall_ms = 200.0 * 20;
  EXPECT_TRUE(DetectLoadShift(no_probe).has_value()) << "the window alone can disagree";
  Profile garbage = Job(36.8, 38.0, 37.0, 4.8);
  garbage.profiler_json = "not json";
  EXPECT_FALSE(DetectLoadShift(garbage).has_value());
  RecordLoadShift(&garbage);
  EXPECT_EQ(garbage.profiler_json, "not json");
}

}  // namespace
}  // namespace libreyolo
