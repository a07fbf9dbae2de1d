// The HTML report (common/report): escaping of hostile names, the timeline laid out from a
// hand-made trace (values computed by hand), the page's sections and n/a blocks, and every
// number on the page equal to `summary --json` / `compare --json` of the same profile.
#include "common/report/report_html.h"

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <regex>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "common/json/json_read.h"
#include "common/load/load_profile.h"
#include "common/readers/compare_view.h"
#include "common/readers/summary_view.h"
#include "common/render/html_escape.h"
#include "common/report/report_sections.h"
#include "common/report/trace_timeline.h"
#include "tests/common/trace_builder.h"
#include "tests/support/html_page.h"

namespace libreyolo {
namespace {

using testing::Ann;
using testing::Kernel;
using testing::Launch;
using testing::Mem;
using testing::Op;
using testing::Step;
using testing::Trace;

std::string Fixture(const std::string& rel) {
  return std::string(LIBREYOLO_FIXTURES_DIR) + "/" + rel;
}

const ProfileLoader kLoad = [](const std::string& p) { return LoadProfile(p); };

ReportInput FromTraceText(const std::string& json, const std::string& label) {
  auto data = ReadTraceText(json);
  EXPECT_TRUE(data.ok()) << data.status();
  ReportInput in;
  in.label = label;
  in.timeline = BuildTimeline(*data);
  in.layers = BuildModuleTable(*data).rows;
  in.trace_path = label;
  in.profile = AnalyseTrace(*std::move(data));
  return in;
}

using test::Count;
using test::SectionOf;

// Every (data-key, data-value) pair of a page fragment.
std::vector<std::pair<std::string, std::string>> DataValues(const std::string& html) {
  std::vector<std::pair<std::string, std::string>> out;
  static const std::regex re("data-key=\"([^\"]+)\" data-value=\"([^\"]*)\"");
  for (auto it = std::sregex_iterator(html.begin(), html.end(), re); it != std::sregex_iterator();
       ++it) {
    out.emplace_back((*it)[1], (*it)[2]);
  }
  return out;
}

const rapidjson::Value* Lookup(const rapidjson::Value& root, const std::string& dotted) {
  const rapidjson::Value* v = &root;
  for (const auto part : absl::StrSplit(dotted, '.')) {
    const std::string key(part);
    if (!v->IsObject() || !v->HasMember(key.c_str())) return nullptr;
    v = &(*v)[key.c_str()];
  }
  return v;
}

// Every number of the summary section equals the same key of `summary --json`.
void ExpectSummaryNumbersEqualJson(const std::string& html, const Profile& p,
                                   const std::string& label) {
  rapidjson::Document json;
  ASSERT_FALSE(ParseJson(RenderSummaryJson(BuildSummary(p, label)), &json).IsError());
  const auto values = DataValues(SectionOf(html, "summary"));
  ASSERT_GE(values.size(), 20u) << label;
  for (const auto& [key, value] : values) {
    const rapidjson::Value* v = Lookup(json, key);
    ASSERT_NE(v, nullptr) << label << ": " << key << " is not in summary --json";
    if (v->IsNull()) {
      EXPECT_EQ(value, "") << label << ": " << key;
    } else {
      ASSERT_TRUE(v->IsNumber()) << label << ": " << key;
      ASSERT_FALSE(value.empty()) << label << ": " << key << " shown as n/a";
      EXPECT_EQ(std::stod(value), v->GetDouble()) << label << ": " << key;
    }
  }
}

TEST(HtmlEscape, EscapesMarkupQuotesAndBadBytes) {
  EXPECT_EQ(HtmlEscape("<script>alert(\"x\" & 'y')</script>"),
            "&lt;script&gt;alert(&quot;x&quot; &amp; &#39;y&#39;)&lt;/script&gt;");
  EXPECT_EQ(HtmlEscape("gemm\xff\x01ok"), "gemm\xEF\xBF\xBD\xEF\xBF\xBDok");
  EXPECT_EQ(HtmlEscape("caf\xC3\xA9 \xE2\x9C\x93"),
            "caf\xC3\xA9 \xE2\x9C\x93");                          // valid UTF-8 kept
  EXPECT_EQ(HtmlEscape("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");  // overlong '/'
  EXPECT_EQ(HtmlEscapeCut("abcdef", 3), "abc\xE2\x80\xA6");
  EXPECT_EQ(HtmlEscapeCut("a<b", 2), "a&lt;\xE2\x80\xA6");
  EXPECT_EQ(HtmlEscapeCut("ab", 2), "ab");
}

// Two 100 us steps; step 1: forward 10-40, backward 40-80 with an inner forward-named span
// 50-60 (the innermost wins); step 2: optimizer 120-150. Kernels: 20-30 and 25-35 on stream 7
// (union 15), 130-140 on stream 9. Memory peaks at 300 MB in step 2.
std::string HandTrace() {
  return Trace({Step(1, 0, 100), Step(2, 100, 100), Ann("step/forward", 10, 30),
                Ann("step/backward", 40, 40), Ann("step/forward", 50, 10),
                Ann("step/optimizer", 120, 30), Launch(15, 2, 11), Launch(18, 2, 12),
                Launch(125, 2, 13), Kernel("k1", 20, 10, 11), Kernel("k2", 25, 10, 12),
                Kernel("k3", 130, 10, 13, 9), Op("aten::add", 11, 5),
                Mem(12, 1, 100, testing::kMain, 100000000, 200000000),
                Mem(130, 1, 200, testing::kMain, 300000000, 400000000),
                Mem(160, 1, -200, testing::kMain, 100000000, 400000000)});
}

TEST(TraceTimeline, SplitsStepsByInnermostPhaseAndMeasuresTheGpu) {
  auto data = ReadTraceText(HandTrace());
  ASSERT_TRUE(data.ok()) << data.status();
  const TraceTimeline tl = BuildTimeline(*data);
  EXPECT_DOUBLE_EQ(tl.window_ms, 0.2);
  ASSERT_EQ(tl.phases, (std::vector<std::string>{"forward", "backward", "optimizer", "other"}));
  ASSERT_EQ(tl.steps.size(), 2u);
  const StepSplit& s1 = tl.steps[0];
  EXPECT_EQ(s1.number, 1);
  EXPECT_DOUBLE_EQ(s1.wall_ms, 0.1);
  EXPECT_NEAR(s1.phase_ms[0], 0.040, 1e-12);  // forward 10-40 and 50-60
  EXPECT_NEAR(s1.phase_ms[1], 0.030, 1e-12);  // backward 40-50, 60-80
  EXPECT_NEAR(s1.phase_ms[2], 0.0, 1e-12);
  EXPECT_NEAR(s1.phase_ms[3], 0.030, 1e-12);  // 0-10, 80-100
  EXPECT_NEAR(s1.gpu_busy_ms, 0.015, 1e-12);
  const StepSplit& s2 = tl.steps[1];
  EXPECT_NEAR(s2.start_ms, 0.1, 1e-12);
  EXPECT_NEAR(s2.phase_ms[2], 0.030, 1e-12);
  EXPECT_NEAR(s2.phase_ms[3], 0.070, 1e-12);
  EXPECT_NEAR(s2.gpu_busy_ms, 0.010, 1e-12);
  ASSERT_EQ(tl.streams.size(), 2u);
  EXPECT_EQ(tl.streams[0].activities + tl.streams[1].activities, 3);
  EXPECT_NEAR(tl.streams[0].busy_ms + tl.streams[1].busy_ms, 0.025, 1e-12);
  EXPECT_EQ(tl.launch_calls, 3);
  int64_t bucketed = 0;
  for (const int64_t n : tl.launches) bucketed += n;
  EXPECT_EQ(bucketed, 3);
  ASSERT_EQ(tl.device_memory.size(), 3u);
  EXPECT_DOUBLE_EQ(tl.device_peak.allocated_mb, 300);
  EXPECT_NEAR(tl.device_peak.t_ms, 0.130, 1e-12);
  EXPECT_DOUBLE_EQ(tl.host_peak.allocated_mb, -1);  // no host samples
}

TEST(ReportHtml, SectionsInOrderAndNumbersEqualSummaryJson) {
  const ReportInput in = FromTraceText(HandTrace(), "hand.json");
  const std::string html = RenderReportHtml(in);
  size_t last = 0;
  for (const char* id : {"verdict", "summary", "steps", "gpu-timeline", "kernels", "ops", "layers",
                         "memory", "profiler"}) {
    const size_t at = html.find(std::string("<section id=\"") + id + "\">");
    ASSERT_NE(at, std::string::npos) << id;
    EXPECT_GT(at, last) << id << " out of order";
    last = at;
  }
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("Content-Security-Policy"), std::string::npos);
  EXPECT_EQ(Count(html, "http://"), Count(html, "xmlns=\"http://www.w3.org/2000/svg\""));
  EXPECT_EQ(Count(html, "https://"), 0u);
  ExpectSummaryNumbersEqualJson(html, in.profile, in.label);
  // The charts are drawn, not n/a: the per-step bars, the GPU strip, the memory peak.
  EXPECT_EQ(Count(SectionOf(html, "steps"), "<svg"), 1u);
  EXPECT_EQ(Count(SectionOf(html, "steps"), "class=\"na\""), 0u);
  EXPECT_NE(SectionOf(html, "gpu-timeline").find("GPU 0, stream 9"), std::string::npos);
  EXPECT_NE(SectionOf(html, "memory").find("peak 300 MB"), std::string::npos);
  EXPECT_NE(SectionOf(html, "memory").find("data-key=\"peak_vram_mb\" data-value=\"300\""),
            std::string::npos);
  EXPECT_NE(SectionOf(html, "layers").find("n/a"), std::string::npos);
}

TEST(ReportHtml, HostileNamesAreEscapedEverywhere) {
  const std::string evil = R"(<script>alert(1)</script><img src=x onerror=alert(2)>\"'&)";
  const std::string long_name(20000, 'L');
  const std::string html = RenderReportHtml(
      FromTraceText(Trace({Step(1, 0, 100), Ann("step/" + evil, 5, 50), Launch(10, 2, 1),
                           Launch(12, 2, 2), Kernel(evil, 20, 10, 1),
                           Kernel(long_name, 40, 5, 2, 3), Op(evil, 11, 5), Op(long_name, 30, 5)}),
                    evil));
  EXPECT_EQ(Count(html, "<script"), 1u);  // only the page's own sorting script
  EXPECT_EQ(Count(html, "<img"), 0u);
  EXPECT_EQ(html.find("alert(1)</script>"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(html.find("&quot;&#39;&amp;"), std::string::npos);
  // Long names are cut for display; the page stays small.
  EXPECT_EQ(html.find(std::string(2001, 'L')), std::string::npos);
  EXPECT_LT(html.size(), 200000u);
}

TEST(ReportHtml, ThousandsOfStepsAreGroupedIntoAtMost300Bars) {
  std::vector<std::string> events;
  for (int n = 1; n <= 1000; ++n) {
    events.push_back(Step(n, 100 * n, 100));
    events.push_back(Ann("step/forward", 100 * n + 10, 50));
  }
  const std::string html = RenderReportHtml(FromTraceText(Trace(events), "many.json"));
  const std::string steps = SectionOf(html, "steps");
  EXPECT_NE(steps.find("1000 steps, each bar the mean of 4 in a row"), std::string::npos);
  EXPECT_EQ(Count(steps, "<g><title>"), 250u);
  EXPECT_NE(steps.find("#1-4:\nforward 0.05 ms"), std::string::npos);
  EXPECT_LT(html.size(), 300000u);
}

TEST(ReportHtml, CpuOnlyTraceSaysNaForTheGpuCharts) {
  auto in = LoadReportInput(Fixture("traces/cpu_only.json.gz"), "cpu_only", kLoad);
  ASSERT_TRUE(in.ok()) << in.status();
  ASSERT_TRUE(in->timeline.has_value());
  const std::string html = RenderReportHtml(*in);
  EXPECT_NE(SectionOf(html, "gpu-timeline").find("<b>n/a</b> no GPU activity"), std::string::npos);
  EXPECT_EQ(SectionOf(html, "gpu-timeline").find("<svg"), std::string::npos);
  EXPECT_NE(SectionOf(html, "kernels").find("n/a</b> no GPU kernels"), std::string::npos);
  EXPECT_NE(SectionOf(html, "memory").find("n/a</b> no device memory samples"), std::string::npos);
  ExpectSummaryNumbersEqualJson(html, in->profile, "cpu_only");
}

TEST(ReportHtml, ProfileWithoutItsTraceSaysWhyAndDrawsTheMeans) {
  auto in = LoadReportInput(Fixture("profiles/libreyolo-python-run.json"), "run", kLoad);
  ASSERT_TRUE(in.ok()) << in.status();
  EXPECT_FALSE(in->timeline.has_value());
  EXPECT_NE(in->timeline_note.find("is not next to it"), std::string::npos);
  const std::string html = RenderReportHtml(*in);
  const std::string steps = SectionOf(html, "steps");
  EXPECT_NE(steps.find("n/a</b> per-step bars"), std::string::npos);
  EXPECT_NE(steps.find("mean phase wall times"), std::string::npos);  // the fallback bar
  EXPECT_NE(SectionOf(html, "gpu-timeline").find("n/a"), std::string::npos);
  EXPECT_NE(SectionOf(html, "memory").find("n/a"), std::string::npos);
  ExpectSummaryNumbersEqualJson(html, in->profile, "run");
}

TEST(ReportHtml, EveryFixtureNumberEqualsSummaryJson) {
  for (const char* f : {"traces/alexnet.json.gz", "traces/amd_trace.json.gz",
                        "traces/cupti_profiler.json.gz", "traces/simple_add.json.gz",
                        "traces/trace_filter.json.gz", "profiles/libreyolo-python-infer.json"}) {
    auto in = LoadReportInput(Fixture(f), f, kLoad);
    ASSERT_TRUE(in.ok()) << f << ": " << in.status();
    const std::string html = RenderReportHtml(*in);
    ExpectSummaryNumbersEqualJson(html, in->profile, f);
    EXPECT_EQ(Count(html, "<section id="), 9u) << f;
  }
}

TEST(ReportHtml, ComparisonPutsSignificanceFirstAndMatchesCompareJson) {
  auto a = LoadReportInput(Fixture("traces/trace_filter.json.gz"), "before", kLoad);
  auto b = LoadReportInput(Fixture("traces/amd_trace.json.gz"), "after", kLoad);
  ASSERT_TRUE(a.ok() && b.ok());
  const std::string html = RenderCompareReportHtml(*a, *b);
  const size_t sig = html.find("<section id=\"significance\">");
  ASSERT_NE(sig, std::string::npos);
  EXPECT_LT(sig, html.find("<section id=\"deltas\">"));
  EXPECT_LT(html.find("<section id=\"deltas\">"), html.find("<section id=\"side-by-side\">"));
  EXPECT_NE(SectionOf(html, "significance").find("no call"), std::string::npos);
  rapidjson::Document json;
  ASSERT_FALSE(
      ParseJson(RenderCompareJson(Compare(a->profile, b->profile, "before", "after")), &json)
          .IsError());
  size_t checked = 0;
  for (const auto& d : json["deltas"].GetArray()) {
    const std::string metric = d["metric"].GetString();
    if (d["before"].IsNull() && d["after"].IsNull()) continue;
    const size_t row = html.find("<tr data-metric=\"" + metric + "\"");
    ASSERT_NE(row, std::string::npos) << metric;
    static const std::regex re("data-before=\"([^\"]*)\" data-after=\"([^\"]*)\"");
    std::smatch m;
    const std::string tail = html.substr(row, 300);
    ASSERT_TRUE(std::regex_search(tail, m, re)) << metric;
    if (!d["before"].IsNull()) {
      EXPECT_EQ(std::stod(m[1]), d["before"].GetDouble()) << metric;
    }
    if (!d["after"].IsNull()) {
      EXPECT_EQ(std::stod(m[2]), d["after"].GetDouble()) << metric;
    }
    ++checked;
  }
  EXPECT_GE(checked, 5u);
  // Each side carries its own summary numbers.
  EXPECT_NE(html.find("<div data-side=\"before\">"), std::string::npos);
  EXPECT_NE(html.find("<div data-side=\"after\">"), std::string::npos);
}

// Issue 22: `report A B` omitted the "not like for like" warnings `compare` prints.
TEST(ReportHtml, ComparisonCarriesCompareWarnings) {
  auto a = LoadReportInput(Fixture("profiles/libreyolo-python-infer.json"), "infer", kLoad);
  auto b = LoadReportInput(Fixture("profiles/libreyolo-python-run.json"), "run", kLoad);
  ASSERT_TRUE(a.ok() && b.ok());
  const CompareResult r = Compare(a->profile, b->profile, "infer", "run");
  ASSERT_FALSE(r.warnings.empty());
  const std::string html = RenderCompareReportHtml(*a, *b);
  const std::string sig = SectionOf(html, "significance");
  for (const std::string& w : r.warnings) {
    EXPECT_NE(sig.find(HtmlEscape("warning: " + w)), std::string::npos) << w;
  }
}

// Each per-step chart's y-axis top and unit, in page order.
std::vector<std::string> StepAxisTops(const std::string& html) {
  std::vector<std::string> tops;
  static const std::regex re(
      R"re(data-axis="top">([0-9.]+)</text>\n<text [^>]*data-axis="unit">([^<]*)</text>)re");
  for (auto it = std::sregex_iterator(html.begin(), html.end(), re); it != std::sregex_iterator();
       ++it) {
    tops.push_back(std::string((*it)[1]) + " " + std::string((*it)[2]));
  }
  return tops;
}

// Issue 36 §6: the comparison page's two per-step charts share one y scale (the larger side's),
// so the longer step looks longer: a 140 ms inference beside a 440 ms training step.
TEST(ReportHtml, ComparisonPerStepChartsShareOneScale) {
  auto a = LoadReportInput(Fixture("profiles/libreyolo-python-infer.json"), "infer", kLoad);
  auto b = LoadReportInput(Fixture("profiles/libreyolo-python-run.json"), "run", kLoad);
  ASSERT_TRUE(a.ok() && b.ok());
  // Alone, each is drawn to its own scale, and they differ.
  const std::vector<std::string> alone_a = StepAxisTops(SectionOf(RenderReportHtml(*a), "steps"));
  const std::vector<std::string> alone_b = StepAxisTops(SectionOf(RenderReportHtml(*b), "steps"));
  ASSERT_EQ(alone_a.size(), 1u);
  ASSERT_EQ(alone_b.size(), 1u);
  ASSERT_NE(alone_a, alone_b);
  EXPECT_GT(PerStepChartMax(*b), PerStepChartMax(*a));
  // Side by side, both charts reach the taller side's top, either way round.
  for (const auto& [first, second] : {std::pair{&*a, &*b}, std::pair{&*b, &*a}}) {
    const std::string side = SectionOf(RenderCompareReportHtml(*first, *second), "side-by-side");
    EXPECT_EQ(StepAxisTops(side), (std::vector<std::string>{alone_b[0], alone_b[0]})) << side;
  }
}

}  // namespace
}  // namespace libreyolo

namespace libreyolo {
namespace {

// One mark per step number, the CPU copy preferred over an earlier device copy; the window runs
// from the first start to the last end.
TEST(StepWindow, OneMarkPerStepCpuCopyPreferred) {
  auto data = ReadTraceText(Trace({Step(2, 100, 50, "gpu_user_annotation", testing::Th{"0", "7"}),
                                   Step(2, 90, 60), Step(1, 0, 80), Kernel("k", 10, 5)}));
  ASSERT_TRUE(data.ok()) << data.status();
  const StepWindow w = FindStepWindow(*data);
  ASSERT_EQ(w.marks.size(), 2u);
  EXPECT_EQ(w.marks[0].number, 1);
  EXPECT_EQ(w.marks[1].ts_ns, 90000);
  EXPECT_EQ(w.w0_ns, 0);
  EXPECT_EQ(w.w1_ns, 150000);
  EXPECT_TRUE(w.Contains(149999));
  EXPECT_FALSE(w.Contains(150000));
}

std::string Module(const std::string& name, int64_t ts, int64_t dur) {
  return testing::X("python_function", "nn.Module: " + name, ts, dur);
}

// Model_0 (0-90 us) encloses Conv2d_0 (10-30) and Conv2d_1 (40-70); one launch in each conv
// and one in Model_0 alone; kernels of 5, 10 and 3 us.
TEST(LayerTable, KernelsGoToTheInnermostModuleAroundTheirLaunch) {
  const std::string json =
      Trace({Step(1, 0, 100), Module("Model_0", 0, 90), Module("Conv2d_0", 10, 20),
             Module("Conv2d_1", 40, 30), Launch(15, 2, 1), Launch(45, 2, 2), Launch(80, 2, 3),
             Kernel("k1", 20, 5, 1), Kernel("k2", 50, 10, 2), Kernel("k3", 85, 3, 3),
             Op("aten::conv2d", 12, 5)});
  auto data = ReadTraceText(json);
  ASSERT_TRUE(data.ok()) << data.status();
  const std::vector<ModuleRow> rows = BuildModuleTable(*data).rows;
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].path, "Model_0");
  EXPECT_EQ(rows[0].depth, 0);
  EXPECT_NEAR(rows[0].cpu_ms_per_step, 0.090, 1e-12);
  EXPECT_NEAR(rows[0].self_cpu_ms_per_step, 0.040, 1e-12);
  EXPECT_NEAR(rows[0].gpu_ms_per_step, 0.018, 1e-12);
  EXPECT_NEAR(rows[0].self_gpu_ms_per_step, 0.003, 1e-12);
  EXPECT_DOUBLE_EQ(rows[0].kernels_per_step, 3);
  EXPECT_EQ(rows[1].path, "Model_0.Conv2d_0");
  EXPECT_EQ(rows[1].name, "Conv2d_0");
  EXPECT_EQ(rows[1].depth, 1);
  EXPECT_NEAR(rows[1].gpu_ms_per_step, 0.005, 1e-12);
  EXPECT_EQ(rows[2].path, "Model_0.Conv2d_1");
  EXPECT_NEAR(rows[2].self_gpu_ms_per_step, 0.010, 1e-12);
  EXPECT_DOUBLE_EQ(rows[2].calls_per_step, 1);
  // The analyser does not see the module spans: one op, as before.
  const Profile p = AnalyseTrace(*std::move(data));
  EXPECT_DOUBLE_EQ(*p.ops_per_step, 1);
  // The page draws the table, names escaped.
  const std::string html = SectionOf(
      RenderReportHtml(FromTraceText(Trace({Step(1, 0, 100), Module("<b>Evil</b>_0", 0, 90),
                                            Launch(15, 2, 1), Kernel("k1", 20, 5, 1)}),
                                     "m.json")),
      "layers");
  EXPECT_NE(html.find("<table class=\"sortable layers\">"), std::string::npos) << html;
  EXPECT_NE(html.find("&lt;b&gt;Evil&lt;/b&gt;_0"), std::string::npos) << html;
  EXPECT_EQ(html.find("<b>Evil"), std::string::npos);
}

// Hostile shapes stay bounded: 20 phase names, 40 streams, modules nested 40 deep.
TEST(TraceTimeline, CapsPhasesStreamsAndModuleDepth) {
  std::vector<std::string> ev = {Step(1, 0, 1000)};
  for (int i = 0; i < 20; ++i) ev.push_back(Ann("step/p" + std::to_string(100 + i), 10 * i, 10));
  for (int i = 0; i < 40; ++i) ev.push_back(Kernel("k", 10 * i, 1 + i, -1, 100 + i));
  for (int i = 0; i < 40; ++i) ev.push_back(Module("M_" + std::to_string(i), i, 900 - 2 * i));
  auto data = ReadTraceText(Trace(ev));
  ASSERT_TRUE(data.ok()) << data.status();
  const TraceTimeline tl = BuildTimeline(*data);
  ASSERT_EQ(tl.phases.size(), 13u);  // 12 named + other
  EXPECT_EQ(tl.phases[0], "p100");
  EXPECT_EQ(tl.phases.back(), "other");
  ASSERT_EQ(tl.steps.size(), 1u);
  EXPECT_NEAR(tl.steps[0].phase_ms[12], 1.0 - 0.120, 1e-12);  // 8 capped phases + uncovered
  ASSERT_EQ(tl.streams.size(), 32u);
  EXPECT_EQ(tl.streams_not_drawn, 8);
  EXPECT_EQ(tl.streams[0].name, "GPU 0, stream 108");  // streams 100-107 were the least busy
  const std::vector<ModuleRow> rows = BuildModuleTable(*data).rows;
  ASSERT_EQ(rows.size(), 32u);
  EXPECT_EQ(rows.back().depth, 31);
  EXPECT_DOUBLE_EQ(rows.back().calls_per_step, 1);  // the 8 deeper scopes are M_31's own time
  EXPECT_NEAR(rows.back().self_cpu_ms_per_step, rows.back().cpu_ms_per_step, 1e-12);
}

TEST(ReportHtml, TheProfilersOwnRecordIsShownEscaped) {
  ReportInput in = FromTraceText(HandTrace(), "hand.json");
  in.profile.profiler_json =
      R"({"activities":"cpu,cuda","record_shapes":true,"overhead_pct":3.25,)"
      R"("gpu_collector":"cupti","notes":["CUPTI <b>unavailable</b> & \"x\""],"probe":{"a":1}})";
  in.profile.tool_name = "libreyolo";
  in.profile.tool_version = "0.1.0";
  const std::string s = SectionOf(RenderReportHtml(in), "profiler");
  EXPECT_NE(s.find("<dt>gpu_collector</dt><dd>cupti</dd>"), std::string::npos) << s;
  EXPECT_NE(s.find("<dt>overhead_pct</dt><dd>3.25</dd>"), std::string::npos) << s;
  EXPECT_NE(s.find("<dt>record_shapes</dt><dd>true</dd>"), std::string::npos) << s;
  EXPECT_NE(s.find("CUPTI &lt;b&gt;unavailable&lt;/b&gt; &amp; &quot;x&quot;"), std::string::npos);
  EXPECT_NE(s.find("{&quot;a&quot;:1}"), std::string::npos) << s;
  EXPECT_NE(s.find("<dd>libreyolo 0.1.0</dd>"), std::string::npos) << s;
  EXPECT_NE(s.find("<dt>malformed events skipped</dt><dd>0</dd>"), std::string::npos) << s;
}

// The per-step GPU-busy line and the summary's GPU utilisation measure the same kernels over the
// same window (the steps of trace_filter are back to back).
TEST(ReportHtml, StepBusyLineAgreesWithGpuUtilisation) {
  auto in = LoadReportInput(Fixture("traces/trace_filter.json.gz"), "tf", kLoad);
  ASSERT_TRUE(in.ok() && in->timeline.has_value());
  double busy = 0, wall = 0;
  for (const StepSplit& s : in->timeline->steps) {
    busy += s.gpu_busy_ms;
    wall += s.wall_ms;
    double sum = 0;
    for (const double v : s.phase_ms) sum += v;
    EXPECT_NEAR(sum, s.wall_ms, 1e-9);  // the stack adds up to the step
  }
  ASSERT_GT(wall, 0);
  EXPECT_NEAR(busy / wall, *in->profile.gpu_util, 0.01);
}

}  // namespace
}  // namespace libreyolo
