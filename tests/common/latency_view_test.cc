// `latency` (common/readers/latency_view.h): the recorded percentiles as stored, and from the
// per-iteration samples the spread, the histogram and the slowest iterations; a profile with
// percentiles only, one without latency, and the options' bounds (issue 39 §3).
#include "common/readers/latency_view.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <numeric>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/strip.h"
#include "common/analysis/latency_stats.h"
#include "common/analysis/profile_json_write.h"
#include "common/load/load_profile.h"
#include "common/profile/profile_json.h"
#include "common/readers/run_reader.h"
#include "rapidjson/document.h"

namespace libreyolo {
namespace {

using ::testing::HasSubstr;

const std::string kPythonInfer = LIBREYOLO_FIXTURES_DIR "/profiles/libreyolo-python-infer.json";
const std::string kPythonRun = LIBREYOLO_FIXTURES_DIR "/profiles/libreyolo-python-run.json";
const std::string kTrace = LIBREYOLO_FIXTURES_DIR "/traces/simple_add.json.gz";

// 20 iterations: two equal slowest (index 7 and 15), the fastest at index 3, a run of equal
// values, min 10 and max 30.
const std::vector<double> kSamples = {12, 14, 11, 10, 13, 15, 20, 30, 12.5, 12.5,
                                      12.5, 16, 25, 18, 11.5, 30, 14.5, 13.5, 19, 17};

// An inference profile of ours as the engine writes it: the percentiles from the samples
// (ComputeLatencyStats), through profile.json and back.
Profile OurInferenceProfile(const std::vector<double>& samples) {
  Profile p;
  p.mode = "inference";
  p.model = "LibreYOLO9t.pt";
  p.step_ms = 15.0;
  const LatencyStats s = ComputeLatencyStats(samples);
  Latency l;
  l.p50_ms = s.p50_ms;
  l.p90_ms = s.p90_ms;
  l.p99_ms = s.p99_ms;
  l.mean_ms = s.mean_ms;
  l.min_ms = s.min_ms;
  l.max_ms = s.max_ms;
  l.n = static_cast<int64_t>(samples.size());
  l.samples_ms = samples;
  p.latency = l;
  auto back = ReadProfileJson(WriteProfileJson(p), "profile.json");
  EXPECT_TRUE(back.ok()) << back.status();
  return back.ok() ? *back : p;
}

ReaderOutput Read(const Profile& p, ReaderId id, const std::optional<std::string>& field = {},
                  LatencyOptions o = {}) {
  ReaderInvocation inv;
  inv.reader = id;
  inv.inputs = {"infer/profile.json"};
  inv.field = field;
  inv.latency = o;
  auto out = RunReader(inv, [&](const std::string&) { return absl::StatusOr<Profile>(p); });
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? *out : ReaderOutput{};
}

double GetNumber(const Profile& p, const std::string& metric) {
  double v = -1;
  const std::string text = Read(p, ReaderId::kGet, metric).text;
  EXPECT_TRUE(absl::SimpleAtod(absl::StripSuffix(text, "\n"), &v)) << metric << ": " << text;
  return v;
}

TEST(LatencyView, OurProfileHistogramSlowestAndTheRecordedPercentiles) {
  const Profile p = OurInferenceProfile(kSamples);
  ASSERT_TRUE(p.latency.has_value());
  auto v = BuildLatency(p, {.buckets = 4, .slowest = 3}, "infer/profile.json");
  ASSERT_TRUE(v.ok()) << v.status();
  // The numbers as the profile records them, and as `get` prints them.
  EXPECT_EQ(v->recorded.n, 20);
  EXPECT_EQ(v->recorded.p50_ms, p.latency->p50_ms);
  EXPECT_EQ(v->recorded.p90_ms, p.latency->p90_ms);
  EXPECT_EQ(v->recorded.p99_ms, p.latency->p99_ms);
  EXPECT_EQ(v->recorded.mean_ms, p.latency->mean_ms);
  EXPECT_EQ(v->recorded.min_ms, 10);
  EXPECT_EQ(v->recorded.max_ms, 30);
  EXPECT_DOUBLE_EQ(GetNumber(p, "latency_p50_ms"), v->recorded.p50_ms);
  EXPECT_DOUBLE_EQ(GetNumber(p, "latency_p99_ms"), v->recorded.p99_ms);
  EXPECT_DOUBLE_EQ(GetNumber(p, "latency_mean_ms"), v->recorded.mean_ms);
  EXPECT_EQ(v->samples, 20);
  EXPECT_DOUBLE_EQ(*v->stddev_ms, SampleStd(kSamples));
  // Four buckets of 5 ms from 10 to 30; an edge opens its bucket, the max is in the last.
  ASSERT_EQ(v->histogram->size(), 4u);
  const std::vector<double> edges = {10, 15, 20, 25, 30};
  const std::vector<int64_t> counts = {11, 5, 1, 3};  // [10,15) [15,20) [20,25) [25,30]
  int64_t sum = 0;
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_DOUBLE_EQ((*v->histogram)[i].lo_ms, edges[i]) << i;
    EXPECT_DOUBLE_EQ((*v->histogram)[i].hi_ms, edges[i + 1]) << i;
    EXPECT_EQ((*v->histogram)[i].count, counts[i]) << i;
    sum += (*v->histogram)[i].count;
  }
  EXPECT_EQ(sum, 20);
  // Largest first; of two equal, the earlier iteration first.
  ASSERT_EQ(v->slowest->size(), 3u);
  EXPECT_EQ((*v->slowest)[0].index, 7);
  EXPECT_EQ((*v->slowest)[1].index, 15);
  EXPECT_EQ((*v->slowest)[2].index, 12);
  EXPECT_EQ((*v->slowest)[2].ms, 25);

  // The JSON through the reader's row: the same numbers.
  const ReaderOutput out = Read(p, ReaderId::kLatency, {}, {.buckets = 4, .slowest = 3});
  rapidjson::Document d;
  d.Parse(out.json.c_str());
  ASSERT_FALSE(d.HasParseError()) << out.json;
  EXPECT_EQ(std::string(d["source"].GetString()), "infer/profile.json");
  EXPECT_EQ(d["n"].GetInt64(), 20);
  EXPECT_DOUBLE_EQ(d["p50_ms"].GetDouble(), GetNumber(p, "latency_p50_ms"));
  EXPECT_DOUBLE_EQ(d["p90_ms"].GetDouble(), GetNumber(p, "latency_p90_ms"));
  EXPECT_EQ(d["histogram"].Size(), 4u);
  EXPECT_EQ(d["histogram"][3]["count"].GetInt64(), 3);
  EXPECT_DOUBLE_EQ(d["histogram"][3]["hi_ms"].GetDouble(), 30);
  EXPECT_EQ(d["slowest"][0]["index"].GetInt64(), 7);
  EXPECT_DOUBLE_EQ(d["slowest"][0]["ms"].GetDouble(), 30);
  EXPECT_TRUE(d["trials"].IsNull());
  EXPECT_THAT(out.text, HasSubstr("histogram (4 equal-width buckets"));
  EXPECT_THAT(out.text, HasSubstr("slowest 3"));
}

TEST(LatencyView, HistogramEdgeCases) {
  // All equal: one bucket, whatever was asked.
  auto h = LatencyHistogram({5, 5, 5}, 10);
  ASSERT_EQ(h.size(), 1u);
  EXPECT_EQ(h[0].count, 3);
  EXPECT_EQ(h[0].lo_ms, 5);
  EXPECT_EQ(h[0].hi_ms, 5);
  // More buckets than samples: empty buckets kept, counts still sum.
  h = LatencyHistogram({1, 2, 3}, 1000);
  ASSERT_EQ(h.size(), 1000u);
  EXPECT_EQ(h.front().count, 1);
  EXPECT_EQ(h.back().count, 1);
  EXPECT_EQ(std::accumulate(h.begin(), h.end(), int64_t{0},
                            [](int64_t s, const LatencyBucket& b) { return s + b.count; }),
            3);
  // Awkward widths: every sample lands inside its bucket's edges.
  std::vector<double> s;
  for (int i = 0; i < 1000; ++i) s.push_back(0.1 * i + 0.3);
  h = LatencyHistogram(s, 7);
  int64_t sum = 0;
  for (const LatencyBucket& b : h) sum += b.count;
  EXPECT_EQ(sum, 1000);
  for (double x : s) {
    int hits = 0;
    for (size_t i = 0; i < h.size(); ++i) {
      const bool last = i + 1 == h.size();
      hits += x >= h[i].lo_ms && (x < h[i].hi_ms || (last && x == h[i].hi_ms)) ? 1 : 0;
    }
    EXPECT_EQ(hits, 1) << x;
  }
  EXPECT_TRUE(LatencyHistogram({}, 10).empty());
  // One sample: stddev 0; slowest 0 lists none (an empty list, not null).
  auto v = BuildLatency(OurInferenceProfile({7.5}), {.buckets = 3, .slowest = 0}, "one");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v->stddev_ms, 0);
  EXPECT_EQ(v->histogram->size(), 1u);
  EXPECT_TRUE(v->slowest->empty());
  EXPECT_THAT(RenderLatencyJson(*v), HasSubstr("\"slowest\": []"));
  // More asked than there are: all of them.
  v = BuildLatency(OurInferenceProfile(kSamples), {.buckets = 1, .slowest = 100000}, "all");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->slowest->size(), 20u);
  EXPECT_EQ(v->slowest->back().index, 3);  // the fastest last
}

// The Python LibreYOLO records percentiles only: they are shown, the rest is null and the text
// says why.
TEST(LatencyView, PythonProfileShowsThePercentilesOnly) {
  auto p = LoadProfile(kPythonInfer);
  ASSERT_TRUE(p.ok()) << p.status();
  auto v = BuildLatency(*p, {}, kPythonInfer);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->recorded.p50_ms, 153.0);
  EXPECT_EQ(v->recorded.p90_ms, 158.615);
  EXPECT_EQ(v->recorded.n, 10);
  EXPECT_FALSE(v->samples.has_value());
  const std::string json = RenderLatencyJson(*v);
  rapidjson::Document d;
  d.Parse(json.c_str());
  ASSERT_FALSE(d.HasParseError()) << json;
  EXPECT_DOUBLE_EQ(d["p99_ms"].GetDouble(), 160.992);
  for (const char* k : {"samples", "stddev_ms", "histogram", "slowest"}) {
    ASSERT_TRUE(d.HasMember(k)) << k;
    EXPECT_TRUE(d[k].IsNull()) << k;
  }
  EXPECT_THAT(RenderLatencyText(*v),
              HasSubstr("this profile records percentiles only (no per-iteration samples)"));
  EXPECT_DOUBLE_EQ(GetNumber(*p, "latency_p50_ms"), v->recorded.p50_ms);
}

// A training profile and a raw trace have no latency: FAILED_PRECONDITION (exit 2), naming the
// input and the reader that shows their step time.
TEST(LatencyView, NoLatencyIsAFailedPreconditionNamingTheWayOut) {
  for (const std::string& path : {kPythonRun, kTrace}) {
    ReaderInvocation inv;
    inv.reader = ReaderId::kLatency;
    inv.inputs = {path};
    auto out = RunReader(inv, [](const std::string& f) { return LoadProfile(f); });
    ASSERT_FALSE(out.ok()) << path;
    EXPECT_EQ(out.status().code(), absl::StatusCode::kFailedPrecondition) << out.status();
    EXPECT_THAT(std::string(out.status().message()), HasSubstr(path));
    EXPECT_THAT(std::string(out.status().message()),
                HasSubstr("`libreyolo profile phases " + path + "`"));
  }
}

TEST(LatencyView, OptionBoundsAreCheckedBeforeAnythingIsLoaded) {
  EXPECT_TRUE(CheckLatencyOptions({.buckets = 1, .slowest = 0}).ok());
  EXPECT_TRUE(CheckLatencyOptions({.buckets = 1000, .slowest = 100000}).ok());
  EXPECT_EQ(CheckLatencyBuckets(0).message(), "buckets: 0 is outside 1..1000 (the histogram's buckets)");
  EXPECT_EQ(CheckLatencyBuckets(1001).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckLatencyBuckets(-3).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(CheckLatencySlowest(-1).message()),
              HasSubstr("slowest: -1 is outside 0..100000"));
  EXPECT_EQ(CheckLatencySlowest(100001).code(), absl::StatusCode::kInvalidArgument);
  ReaderInvocation inv;
  inv.reader = ReaderId::kLatency;
  inv.inputs = {"x"};
  inv.latency.buckets = 0;
  bool loaded = false;
  auto out = RunReader(inv, [&](const std::string&) -> absl::StatusOr<Profile> {
    loaded = true;
    return Profile{};
  });
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(loaded);
  EXPECT_EQ(BuildLatency(OurInferenceProfile(kSamples), {.buckets = 5, .slowest = -2}, "x")
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

// A repeat profile: its percentiles are the trials' means, its samples every trial's.
TEST(LatencyView, RepeatProfileSaysItsTrials) {
  Profile p = OurInferenceProfile(kSamples);
  p.repeat.img_per_s_n = 4;
  auto v = BuildLatency(p, {}, "infer_repeat.json");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->trials, 4);
  EXPECT_THAT(RenderLatencyText(*v), HasSubstr("means of 4 trials"));
  EXPECT_THAT(RenderLatencyJson(*v), HasSubstr("\"trials\": 4"));
}

}  // namespace
}  // namespace libreyolo
