// profile.json: WriteProfileJson -> ReadProfileJson round trips, and reading errors.
#include "common/profile/profile_json.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/analysis/kernel_classify.h"
#include "common/analysis/profile_json_write.h"
#include "common/json/json_read.h"
#include "common/profile/metric_table.h"
#include "rapidjson/document.h"
#include "tests/common/trace_builder.h"

namespace libreyolo::testing {
namespace {

using ::testing::HasSubstr;

void ExpectSameOpt(const OptDouble& a, const OptDouble& b, const std::string& what) {
  ASSERT_EQ(a.has_value(), b.has_value()) << what;
  if (a) {
    EXPECT_NEAR(*a, *b, Tol(*b)) << what;
  }
}

void ExpectSameOpRow(const OpRow& a, const OpRow& b) {
  EXPECT_EQ(a.op, b.op);
  EXPECT_EQ(a.input_shapes, b.input_shapes);
  EXPECT_CLOSE(a.count_per_step, b.count_per_step);
  EXPECT_CLOSE(a.ms_per_step, b.ms_per_step);
  ExpectSameOpt(a.self_cpu_ms_per_step, b.self_cpu_ms_per_step, a.op + " self_cpu");
  ExpectSameOpt(a.pct_of_cpu_ops, b.pct_of_cpu_ops, a.op + " pct");
  ExpectSameOpt(a.self_cpu_mem_bytes, b.self_cpu_mem_bytes, a.op + " self_cpu_mem");
  ExpectSameOpt(a.cpu_mem_bytes, b.cpu_mem_bytes, a.op + " cpu_mem");
  ExpectSameOpt(a.self_device_mem_bytes, b.self_device_mem_bytes, a.op + " self_dev_mem");
  ExpectSameOpt(a.device_mem_bytes, b.device_mem_bytes, a.op + " dev_mem");
  ExpectSameOpt(a.flops, b.flops, a.op + " flops");
  ExpectSameOpt(a.device_ms_per_step, b.device_ms_per_step, a.op + " device_ms");
  ExpectSameOpt(a.self_device_ms_per_step, b.self_device_ms_per_step, a.op + " self_device_ms");
}

Profile HandMade() {
  Profile p;
  p.trace = "runs/x/trace.json";
  p.model = "LibreYOLO9t.pt";
  p.config_json = R"({"batch":8,"imgsz":640})";
  p.batch = 8;
  p.mode = "inference";
  p.bound = "nms / postprocess";
  p.bound_why = "postprocess takes 4.00 ms";
  p.step_ms = 12.345;
  p.img_per_s = 648.0;
  p.dataload_ms = 0.0;
  p.dataload_frac = 0.0;
  p.gpu_util = 0.4;
  p.gpu_util_raw = 0.4;
  p.memory_pressure = false;
  p.cuda_mallocs_per_step = 3;  // a count: an integer
  p.gpu_busy_ms_per_step = 4.938;
  p.gpu_kernel_ms_per_step = 5.5;
  p.mean_kernel_us = 12.25;
  p.kernels_per_step = 449;
  p.unique_kernels = 37;
  p.memcpy_ms_per_step = 0.125;
  p.tensorcore_pct = 61.5;
  p.peak_vram_mb = std::nullopt;  // n/a must stay n/a
  p.peak_reserved_mb = 1024.5;
  p.host_overhead_ms_per_step = 3.25;
  p.host_overhead_residual_ms_per_step = 7.407;
  p.host_overhead_method = "measured";
  p.launch_api_ms_per_step = 1.5;
  p.host_api_ms_per_step = std::nullopt;
  p.gpu_wait_host_ms_per_step = 3.25;
  p.launches_per_step = 449;
  p.launches_source = "runtime";
  p.ops_per_step = 1234;
  p.flops_per_step = 8.7e9;
  p.achieved_tflops = 0.705;
  p.self_cpu_total_ms_per_step = 6.5;
  p.self_device_total_ms_per_step = 4.4;
  p.window_wall_ms = 123.45;
  p.real_steps = 10;
  p.categories = {{"gemm / conv", 70.5, 3.5}, {"elementwise", 29.5, 1.5}};
  p.phases = {{"preprocess", 0.5, 1.25, 3, 10, 2}, {"forward", 4.0, std::nullopt, 400, 900, 30}};
  const KernelRow k{"sgemm", "ampere_sgemm_128x64_nn", "gemm / conv", false, 1.5, 27.25, 2};
  const KernelRow tc{"xmma gemm (sm80)", "sm80_xmma_gemm_f16f16", "gemm / conv", true, 2.0, 36.5,
                     4};
  p.kernels = {tc, k};
  p.kernels_by_phase["forward"] = {tc};
  OpRow o;
  o.op = "aten::conv2d";
  o.count_per_step = 57;
  o.ms_per_step = 3.5;
  o.self_cpu_ms_per_step = 0.25;
  o.pct_of_cpu_ops = 3.75;
  o.flops = 4.2e9;  // the rest stay empty
  OpRow o2;
  o2.op = "aten::add";
  o2.count_per_step = 1;
  o2.ms_per_step = 0.5;
  p.ops = {o, o2};
  OpRow shaped = o;
  shaped.input_shapes = "[[1, 3, 640, 640]]";
  p.ops_by_input_shape = {shaped};
  p.has_input_shapes = true;
  p.ops_by_phase["forward"] = {o};
  p.latency = Latency{12.0, 13.5, 15.25, 12.345, 11.0, 15.25, 4, {11.0, 12.0, 13.125, 15.25}, {}, {}};
  p.stages_ms = Stages{std::nullopt, 7.5, 4.0};
  p.repeat.img_per_s_std = 3.5;
  p.repeat.img_per_s_n = 3;
  p.repeat.img_per_s_trials = {644.5, 648.0, 651.5};
  p.device = DeviceInfo{"cuda", "NVIDIA H200", 0, 132, 143771.0};
  p.tool_name = "libreyolo-profiler";
  p.tool_version = "0.1.0";
  p.created_at = "2025-01-01T00:00:00Z";
  return p;
}

void ExpectSameProfile(const Profile& a, const Profile& b) {
  EXPECT_EQ(a.trace, b.trace);
  EXPECT_EQ(a.model, b.model);
  EXPECT_EQ(a.batch, b.batch);
  EXPECT_EQ(a.mode, b.mode);
  EXPECT_EQ(a.bound, b.bound);
  EXPECT_EQ(a.bound_why, b.bound_why);
  ExpectSameOpt(a.step_ms, b.step_ms, "step_ms");
  ExpectSameOpt(a.img_per_s, b.img_per_s, "img_per_s");
  ExpectSameOpt(a.dataload_ms, b.dataload_ms, "dataload_ms");
  ExpectSameOpt(a.dataload_frac, b.dataload_frac, "dataload_frac");
  ExpectSameOpt(a.gpu_util, b.gpu_util, "gpu_util");
  ExpectSameOpt(a.gpu_util_raw, b.gpu_util_raw, "gpu_util_raw");
  EXPECT_EQ(a.memory_pressure, b.memory_pressure);
  ExpectSameOpt(a.cuda_mallocs_per_step, b.cuda_mallocs_per_step, "cuda_mallocs_per_step");
  ExpectSameOpt(a.gpu_busy_ms_per_step, b.gpu_busy_ms_per_step, "gpu_busy");
  ExpectSameOpt(a.gpu_kernel_ms_per_step, b.gpu_kernel_ms_per_step, "gpu_kernel");
  ExpectSameOpt(a.gpu_active_ms_per_step, b.gpu_active_ms_per_step, "gpu_active");
  ExpectSameOpt(a.comm_ms_per_step, b.comm_ms_per_step, "comm");
  ExpectSameOpt(a.comm_exposed_ms_per_step, b.comm_exposed_ms_per_step, "comm_exposed");
  ExpectSameOpt(a.comm_overlap_pct, b.comm_overlap_pct, "comm_overlap_pct");
  EXPECT_EQ(a.gpu_attribution, b.gpu_attribution);
  EXPECT_EQ(a.parse_stats.unattributed_kernels, b.parse_stats.unattributed_kernels);
  ExpectSameOpt(a.mean_kernel_us, b.mean_kernel_us, "mean_kernel_us");
  ExpectSameOpt(a.kernels_per_step, b.kernels_per_step, "kernels_per_step");
  EXPECT_EQ(a.unique_kernels, b.unique_kernels);
  ExpectSameOpt(a.memcpy_ms_per_step, b.memcpy_ms_per_step, "memcpy");
  ExpectSameOpt(a.tensorcore_pct, b.tensorcore_pct, "tensorcore_pct");
  ExpectSameOpt(a.peak_vram_mb, b.peak_vram_mb, "peak_vram_mb");
  ExpectSameOpt(a.peak_reserved_mb, b.peak_reserved_mb, "peak_reserved_mb");
  ExpectSameOpt(a.host_overhead_ms_per_step, b.host_overhead_ms_per_step, "host_overhead");
  ExpectSameOpt(a.host_overhead_residual_ms_per_step, b.host_overhead_residual_ms_per_step,
                "host_overhead_residual");
  EXPECT_EQ(a.host_overhead_method, b.host_overhead_method);
  ExpectSameOpt(a.launch_api_ms_per_step, b.launch_api_ms_per_step, "launch_api");
  ExpectSameOpt(a.host_api_ms_per_step, b.host_api_ms_per_step, "host_api");
  ExpectSameOpt(a.gpu_wait_host_ms_per_step, b.gpu_wait_host_ms_per_step, "gpu_wait_host");
  ExpectSameOpt(a.launches_per_step, b.launches_per_step, "launches_per_step");
  EXPECT_EQ(a.launches_source, b.launches_source);
  ExpectSameOpt(a.ops_per_step, b.ops_per_step, "ops_per_step");
  ExpectSameOpt(a.flops_per_step, b.flops_per_step, "flops_per_step");
  ExpectSameOpt(a.achieved_tflops, b.achieved_tflops, "achieved_tflops");
  ExpectSameOpt(a.self_cpu_total_ms_per_step, b.self_cpu_total_ms_per_step, "self_cpu_total");
  ExpectSameOpt(a.self_device_total_ms_per_step, b.self_device_total_ms_per_step,
                "self_device_total");
  ExpectSameOpt(a.window_wall_ms, b.window_wall_ms, "window_wall_ms");
  EXPECT_EQ(a.real_steps, b.real_steps);

  ASSERT_EQ(a.categories.size(), b.categories.size());
  for (size_t i = 0; i < a.categories.size(); ++i) {
    EXPECT_EQ(a.categories[i].name, b.categories[i].name);
    EXPECT_CLOSE(a.categories[i].pct, b.categories[i].pct);
    EXPECT_CLOSE(a.categories[i].ms_per_step, b.categories[i].ms_per_step);
  }
  ASSERT_EQ(a.phases.size(), b.phases.size());
  for (size_t i = 0; i < a.phases.size(); ++i) {
    EXPECT_EQ(a.phases[i].phase, b.phases[i].phase);
    EXPECT_CLOSE(a.phases[i].gpu_ms_per_step, b.phases[i].gpu_ms_per_step);
    ExpectSameOpt(a.phases[i].wall_ms_per_step, b.phases[i].wall_ms_per_step, "phase wall");
    EXPECT_CLOSE(a.phases[i].kernels_per_step, b.phases[i].kernels_per_step);
    EXPECT_CLOSE(a.phases[i].ops_per_step, b.phases[i].ops_per_step);
    EXPECT_EQ(a.phases[i].unique_kernels, b.phases[i].unique_kernels);
  }
  ASSERT_EQ(a.kernels.size(), b.kernels.size());
  for (size_t i = 0; i < a.kernels.size(); ++i) {
    EXPECT_EQ(a.kernels[i].kernel, b.kernels[i].kernel);
    EXPECT_EQ(CutName(a.kernels[i].raw_name), b.kernels[i].raw_name);
    EXPECT_EQ(a.kernels[i].category, b.kernels[i].category);
    EXPECT_EQ(a.kernels[i].tensorcore, b.kernels[i].tensorcore);
    EXPECT_CLOSE(a.kernels[i].ms_per_step, b.kernels[i].ms_per_step);
    EXPECT_CLOSE(a.kernels[i].pct_of_gpu, b.kernels[i].pct_of_gpu);
    EXPECT_CLOSE(a.kernels[i].count_per_step, b.kernels[i].count_per_step);
  }
  ASSERT_EQ(a.kernels_by_phase.size(), b.kernels_by_phase.size());
  for (const auto& [phase, rows] : a.kernels_by_phase) {
    ASSERT_EQ(b.kernels_by_phase.count(phase), 1u) << phase;
    EXPECT_EQ(b.kernels_by_phase.at(phase).size(), rows.size()) << phase;
  }
  ASSERT_EQ(a.ops.size(), b.ops.size());
  for (size_t i = 0; i < a.ops.size(); ++i) ExpectSameOpRow(a.ops[i], b.ops[i]);
  ASSERT_EQ(a.ops_by_input_shape.size(), b.ops_by_input_shape.size());
  for (size_t i = 0; i < a.ops_by_input_shape.size(); ++i) {
    ExpectSameOpRow(a.ops_by_input_shape[i], b.ops_by_input_shape[i]);
  }
  EXPECT_EQ(a.has_input_shapes, b.has_input_shapes);
  ASSERT_EQ(a.ops_by_phase.size(), b.ops_by_phase.size());
  for (const auto& [phase, rows] : a.ops_by_phase) {
    ASSERT_EQ(b.ops_by_phase.count(phase), 1u) << phase;
    ASSERT_EQ(b.ops_by_phase.at(phase).size(), rows.size());
    for (size_t i = 0; i < rows.size(); ++i) ExpectSameOpRow(rows[i], b.ops_by_phase.at(phase)[i]);
  }
  ASSERT_EQ(a.latency.has_value(), b.latency.has_value());
  if (a.latency) {
    EXPECT_CLOSE(a.latency->p50_ms, b.latency->p50_ms);
    EXPECT_CLOSE(a.latency->p90_ms, b.latency->p90_ms);
    EXPECT_CLOSE(a.latency->p99_ms, b.latency->p99_ms);
    EXPECT_CLOSE(a.latency->mean_ms, b.latency->mean_ms);
    EXPECT_CLOSE(a.latency->min_ms, b.latency->min_ms);
    EXPECT_CLOSE(a.latency->max_ms, b.latency->max_ms);
    EXPECT_EQ(a.latency->n, b.latency->n);
    EXPECT_EQ(a.latency->samples_ms, b.latency->samples_ms);
  }
  ASSERT_EQ(a.stages_ms.has_value(), b.stages_ms.has_value());
  if (a.stages_ms) {
    ExpectSameOpt(a.stages_ms->preprocess, b.stages_ms->preprocess, "stages.preprocess");
    ExpectSameOpt(a.stages_ms->forward, b.stages_ms->forward, "stages.forward");
    ExpectSameOpt(a.stages_ms->postprocess, b.stages_ms->postprocess, "stages.postprocess");
  }
  ExpectSameOpt(a.repeat.img_per_s_std, b.repeat.img_per_s_std, "img_per_s_std");
  EXPECT_EQ(a.repeat.img_per_s_n, b.repeat.img_per_s_n);
  EXPECT_EQ(a.repeat.img_per_s_trials, b.repeat.img_per_s_trials);
  ASSERT_EQ(a.device.has_value(), b.device.has_value());
  if (a.device) {
    EXPECT_EQ(a.device->type, b.device->type);
    EXPECT_EQ(a.device->name, b.device->name);
    EXPECT_EQ(a.device->index, b.device->index);
    EXPECT_EQ(a.device->sm_count, b.device->sm_count);
    ExpectSameOpt(a.device->memory_mb, b.device->memory_mb, "device.memory_mb");
  }
  EXPECT_EQ(a.created_at, b.created_at);
}

TEST(ProfileJson, HandMadeProfileRoundTrips) {
  const Profile a = HandMade();
  auto b = ReadProfileJson(WriteProfileJson(a), "mem");
  ASSERT_TRUE(b.ok()) << b.status();
  ExpectSameProfile(a, *b);
  EXPECT_EQ(b->schema, kProfileSchema);
  EXPECT_EQ(b->source_kind, "profile");
  EXPECT_EQ(b->tool_name, "libreyolo-profiler");
  EXPECT_FALSE(b->peak_vram_mb.has_value());
  EXPECT_FALSE(b->host_api_ms_per_step.has_value());
  EXPECT_FALSE(b->stages_ms->preprocess.has_value());
  EXPECT_FALSE(b->phases[1].wall_ms_per_step.has_value());
  EXPECT_FALSE(b->ops[0].cpu_mem_bytes.has_value());
  // Writing the read profile again gives the same text.
  EXPECT_EQ(WriteProfileJson(*b), WriteProfileJson(a));
}

TEST(ProfileJson, AnalysedTraceRoundTripsAndCutsRawNames) {
  const std::string long_name = "k_" + std::string(120, 'x');
  const Profile a = AnalyseEvents({
      Step(1, 0, 1000), Step(2, 1000, 1000),
      Ann("## forward ##", 0, 600), Op("aten::mm", 10, 100, kMain, R"("flops": 5000)"),
      Launch(20, 10, 1), Kernel(long_name, 50, 100, 1), Launch(40, 10, 2),
      Kernel("relu_kernel", 300, 50, 2), Kernel("orphan_kernel", 400, 50),
      Mem(30, 1, 64, kMain, 5000000, 6000000),
  });
  auto b = ReadProfileJson(WriteProfileJson(a), "mem");
  ASSERT_TRUE(b.ok()) << b.status();
  ExpectSameProfile(a, *b);
  ASSERT_EQ(b->kernels.size(), 2u);
  EXPECT_EQ(b->kernels[0].raw_name.size(), 90u);  // cut in the file
  EXPECT_EQ(b->gpu_attribution, "launch");
  EXPECT_EQ(b->parse_stats.unattributed_kernels, 1);  // orphan_kernel: no launch call
  EXPECT_OPT_CLOSE(b->gpu_active_ms_per_step, 0.075);  // (100 + 50) us / 2 steps
  EXPECT_OPT_CLOSE(b->peak_vram_mb, 5.0);
  EXPECT_OPT_CLOSE(b->peak_reserved_mb, 6.0);
}

TEST(ProfileJson, SmallValuesAndLongFractionsSurviveTheRoundTrip) {
  // A CPU run reaches ~1e-6 TFLOP/s; shares like 2/3 have more than 6 decimals.
  Profile a;
  a.device = DeviceInfo{"cuda", "H200", 0, 132, 141000.0};  // GPU metrics apply
  a.achieved_tflops = 2.5e-6;
  a.gpu_util = 2.0 / 3.0;
  a.gpu_busy_ms_per_step = 4e-7;
  a.categories = {{"gemm / conv", 100.0 / 3.0, 1.0 / 3.0}};
  auto b = ReadProfileJson(WriteProfileJson(a), "mem");
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_OPT_CLOSE(b->achieved_tflops, 2.5e-6);
  EXPECT_OPT_CLOSE(b->gpu_util, 2.0 / 3.0);
  EXPECT_OPT_CLOSE(b->gpu_busy_ms_per_step, 4e-7);
  ASSERT_EQ(b->categories.size(), 1u);
  EXPECT_CLOSE(b->categories[0].pct, 100.0 / 3.0);
  EXPECT_CLOSE(b->categories[0].ms_per_step, 1.0 / 3.0);
}

// Numbers are read exactly (RapidJSON's default parse can be an ulp off): what a profile says
// is what every reader prints, and a `ranks` object re-written by a reader equals the file's.
TEST(ProfileJson, NumbersAreReadExactly) {
  Profile a;
  a.step_ms = 2.7123032337068254;
  a.ranks_json = R"({"ranks":[],"comm_overlap_pct":2.7123032337068254})";
  auto b = ReadProfileJson(WriteProfileJson(a), "mem");
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(*b->step_ms, 2.7123032337068254);
  // The same values (the digits may differ: 2.7123032337068255 is the same double).
  rapidjson::Document x, y;
  ParseJson(b->ranks_json, &x);
  ParseJson(a.ranks_json, &y);
  EXPECT_TRUE(x == y) << b->ranks_json;
  EXPECT_EQ(x["comm_overlap_pct"].GetDouble(), 2.7123032337068254);
}

// Every number is the nearest double to its text (from_chars), integers exact to 64 bits. The
// first case is the fuzz target's find: a significand that rounds up past 2^64 was read by
// RapidJSON's full-precision mode through clz(0) (UBSan; a garbage value without it).
TEST(JsonRead, NumbersAreTheNearestDoubleToTheirText) {
  rapidjson::Document d;
  ASSERT_FALSE(ParseJson("[18446744073709551615666, 18446744073709551616, 9223372036854775808,"
                         " -9223372036854775808, 2.7123032337068254, 0.30000000000000001665,"
                         " 2e308, -2e308, 1e-400, NaN, -Infinity, 7]",
                         &d)
                   .IsError());
  ASSERT_TRUE(d.IsArray());
  ASSERT_EQ(d.Size(), 12u);
  EXPECT_TRUE(d[0].IsDouble());
  EXPECT_EQ(d[0].GetDouble(), 18446744073709551615666.0);
  EXPECT_EQ(d[1].GetDouble(), 18446744073709551616.0);  // 2^64: beyond a uint64
  ASSERT_TRUE(d[2].IsUint64());
  EXPECT_EQ(d[2].GetUint64(), uint64_t{9223372036854775808u});
  ASSERT_TRUE(d[3].IsInt64());
  EXPECT_EQ(d[3].GetInt64(), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(d[4].GetDouble(), 2.7123032337068254);
  EXPECT_EQ(d[5].GetDouble(), 0.30000000000000001665);
  EXPECT_EQ(d[6].GetDouble(), std::numeric_limits<double>::infinity());
  EXPECT_EQ(d[7].GetDouble(), -std::numeric_limits<double>::infinity());
  EXPECT_EQ(d[8].GetDouble(), 0.0);
  EXPECT_TRUE(std::isnan(d[9].GetDouble()));
  EXPECT_EQ(d[10].GetDouble(), -std::numeric_limits<double>::infinity());
  ASSERT_TRUE(d[11].IsInt());
  EXPECT_EQ(d[11].GetInt(), 7);
  // An exponent past a double's RapidJSON refuses itself, before any conversion.
  const rapidjson::ParseResult big = ParseJson("[1e400]", &d);
  ASSERT_TRUE(big.IsError());
  EXPECT_EQ(big.Code(), rapidjson::kParseErrorNumberTooBig);
}

// A parse error says where; the document is null, not what it held before. Nesting is parsed
// iteratively: deep input is an error, not a stack overflow.
TEST(JsonRead, AnErrorSaysWhereAndLeavesNull) {
  rapidjson::Document d;
  ASSERT_FALSE(ParseJson(R"({"a": 1})", &d).IsError());
  const rapidjson::ParseResult bad = ParseJson(R"({"a": [1, 2})", &d);
  ASSERT_TRUE(bad.IsError());
  EXPECT_EQ(bad.Offset(), 11u);
  EXPECT_TRUE(d.IsNull());
  EXPECT_TRUE(ParseJson(std::string(1'000'000, '['), &d).IsError());
  EXPECT_TRUE(d.IsNull());
}

// A profile number whose digits round up past 2^64 (the fuzz target found one in a count per
// step) reads as the nearest double.
TEST(ProfileJson, AHugeNumberIsTheNearestDouble) {
  Profile a;
  a.step_ms = 1.5;
  std::string text = WriteProfileJson(a);
  const std::string from = "1.5";
  const size_t at = text.find(from);
  ASSERT_NE(at, std::string::npos) << text;
  text.replace(at, from.size(), "18446744073709551615666");
  auto b = ReadProfileJson(text, "mem");
  ASSERT_TRUE(b.ok()) << b.status();
  ASSERT_TRUE(b->step_ms.has_value());
  EXPECT_EQ(*b->step_ms, 18446744073709551615666.0);
}

// The daemon adds a data-parallel job's `ranks` to rank 0's profile.json as written: every
// other byte stays, the result reads back with it.
TEST(ProfileJson, AddProfileMemberKeepsEveryOtherByte) {
  const std::string text = WriteProfileJson(Profile{});
  auto with = AddProfileMember(text, "ranks", R"({"ranks":[]})");
  ASSERT_TRUE(with.ok()) << with.status();
  EXPECT_EQ(with->substr(0, text.rfind('}')), text.substr(0, text.rfind('}')));
  auto read = ReadProfileJson(*with, "mem");
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->ranks_json, R"({"ranks":[]})");
  EXPECT_THAT(AddProfileMember(*with, "ranks", "{}").status().message(),
              HasSubstr("already has `ranks`"));
  EXPECT_EQ(AddProfileMember("[1, 2]", "ranks", "{}").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(AddProfileMember("{}", "ranks", "{oops").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(*AddProfileMember("{ }\n", "ranks", "{}"), "{ \"ranks\":{}}\n");
}

TEST(ProfileJson, MinimalProfileLeavesEverythingEmpty) {
  auto p = ReadProfileJson(R"({"schema": "libreyolo.profile.analysis/v1"})", "min.json");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_FALSE(p->step_ms.has_value());
  EXPECT_FALSE(p->gpu_util.has_value());
  EXPECT_FALSE(p->memory_pressure.has_value());
  EXPECT_FALSE(p->latency.has_value());
  EXPECT_FALSE(p->stages_ms.has_value());
  EXPECT_FALSE(p->repeat.img_per_s_n.has_value());
  EXPECT_FALSE(p->real_steps.has_value());
  EXPECT_TRUE(p->phases.empty());
}

TEST(ProfileJson, WrongTypeNamesTheKey) {
  auto p = ReadProfileJson(
      R"({"schema": "libreyolo.profile.analysis/v1", "step_ms": "fast"})", "bad.json");
  ASSERT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(p.status().message(), HasSubstr("step_ms"));
  EXPECT_THAT(p.status().message(), HasSubstr("bad.json"));

  auto q = ReadProfileJson(
      R"({"schema": "libreyolo.profile.analysis/v1", "latency": {"p50_ms": [1]}})", "bad.json");
  ASSERT_EQ(q.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(q.status().message(), HasSubstr("latency.p50_ms"));

  auto r = ReadProfileJson(
      R"({"schema": "libreyolo.profile.analysis/v1", "phases": {"forward": 1}})", "bad.json");
  ASSERT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("phases"));

  auto s = ReadProfileJson(
      R"({"schema": "libreyolo.profile.analysis/v1", "memory_pressure": "yes"})", "bad.json");
  ASSERT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.status().message(), HasSubstr("memory_pressure"));
}

// A damaged element of a list of numbers fails the read, naming its index: dropping it would
// shift every later element's index, which `latency` prints as the iteration.
TEST(ProfileJson, ADamagedListElementNamesItsIndex) {
  const auto read = [](const std::string& latency_samples, const std::string& rest = "") {
    return ReadProfileJson(absl::StrCat(R"({"schema": "libreyolo.profile.analysis/v1", )",
                                        R"("latency": {"p50_ms": 1, "samples_ms": )",
                                        latency_samples, "}", rest, "}"),
                           "bad.json");
  };
  auto good = read("[0, 2.5, 1e6]");
  ASSERT_TRUE(good.ok()) << good.status();
  EXPECT_EQ(good->latency->samples_ms, (std::vector<double>{0, 2.5, 1e6}));
  for (const auto& [samples, index] :
       std::vector<std::pair<std::string, std::string>>{{R"([1, "x", 2])", "[1]"},
                                                        {"[1, 2, null]", "[2]"},
                                                        {"[-0.5]", "[0]"},
                                                        {"[1, NaN]", "[1]"},
                                                        {"[Infinity]", "[0]"},
                                                        {"[1, [2]]", "[1]"}}) {
    auto p = read(samples);
    ASSERT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument) << samples;
    EXPECT_THAT(p.status().message(), HasSubstr("\"latency.samples_ms" + index + "\""));
    EXPECT_THAT(p.status().message(), HasSubstr("a finite number >= 0")) << samples;
  }
  auto not_list = read("{}");
  EXPECT_THAT(not_list.status().message(), HasSubstr("\"latency.samples_ms\" should be a list"));
  auto trials = read("[]", R"(, "img_per_s_trials": [10, true])");
  EXPECT_THAT(trials.status().message(), HasSubstr("\"img_per_s_trials[1]\" should be a number"));
  auto agg = read("[]", R"(, "aggregation": {"metrics": {"step_ms": {"n": 2, "trials": [1, "2"]}}})");
  EXPECT_THAT(agg.status().message(),
              HasSubstr("\"aggregation.metrics.step_ms.trials[1]\" should be a number"));
}

TEST(ProfileJson, WrongSchemaIsAnError) {
  auto p = ReadProfileJson(R"({"schema": "something.else/v1", "step_ms": 1})", "x.json");
  ASSERT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(p.status().message(), HasSubstr("something.else/v1"));
  auto q = ReadProfileJson(R"({"step_ms": 1})", "x.json");
  EXPECT_EQ(q.status().code(), absl::StatusCode::kInvalidArgument);
  auto r = ReadProfileJson(R"([1, 2])", "x.json");
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ProfileJson, BadJsonIsAnErrorWithTheByteOffset) {
  // `{"schema": ` is 11 bytes; the value is missing at byte 11.
  auto p = ReadProfileJson(R"({"schema": )", "cut.json");
  ASSERT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(p.status().message(), HasSubstr("byte 11"));
}

// The fuzzer's find (profile_json_fuzzer, --ci seed 1): a damaged file's count_per_step of
// 6.7e83 was cast to int64_t (undefined behaviour) when the profile was written back. Counts
// that do not fit are saturated by the one conversion (CountFromDouble), in rows and metrics.
TEST(ProfileJson, CountsTooLargeForAnIntegerAreSaturatedNotUndefined) {
  EXPECT_EQ(CountFromDouble(6.666e83), static_cast<int64_t>(9e18));
  EXPECT_EQ(CountFromDouble(-1e300), -static_cast<int64_t>(9e18));
  EXPECT_EQ(CountFromDouble(std::nan("")), 0);
  EXPECT_EQ(CountFromDouble(227.0), 227);
  EXPECT_EQ(CountFromDouble(2.9), 2);
  auto p = ReadProfileJson(
      R"({"schema": "libreyolo.profile.analysis/v1", "kernels_per_step": 1e300,
          "top_kernels": [{"kernel": "k", "ms_per_step": 1, "count_per_step": 6.6e83}],
          "ops": [{"op": "aten::add", "ms_per_step": 1, "count_per_step": -1e200}],
          "phases": [{"phase": "forward", "kernels_per_step": 1e99, "ops_per_step": 1e99}]})",
      "huge.json");
  ASSERT_TRUE(p.ok()) << p.status();
  const std::string out = WriteProfileJson(*p);
  EXPECT_THAT(out, ::testing::HasSubstr("\"count_per_step\": 9000000000000000000"));
  EXPECT_THAT(out, ::testing::HasSubstr("\"kernels_per_step\": 9000000000000000000"));
  auto back = ReadProfileJson(out, "again.json");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(WriteProfileJson(*back), out);
}

}  // namespace
}  // namespace libreyolo::testing
