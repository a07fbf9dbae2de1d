// The trace writer's output must read back through the analyser with the numbers it was given.
#include "common/trace/chrome_trace_writer.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "common/analysis/trace_analyser.h"
#include "common/load/load_profile.h"
#include "common/trace/trace_reader.h"

namespace libreyolo {
namespace {

namespace fs = std::filesystem;

TraceSpan Span(const std::string& cat, const std::string& name, int64_t pid, int64_t tid,
               double ts, double dur) {
  TraceSpan s;
  s.cat = cat;
  s.name = name;
  s.pid = pid;
  s.tid = tid;
  s.ts_us = ts;
  s.dur_us = dur;
  return s;
}

std::string TempPath(const std::string& name) {
  return (fs::temp_directory_path() /
          ("libreyolo_writer_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

TEST(ChromeTraceWriter, RoundTripsThroughTheAnalyser) {
  const std::string path = TempPath("trace.json");
  auto w = ChromeTraceWriter::Open(path, R"([{"id": 0, "name": "Test GPU", "numSms": 4}])");
  ASSERT_TRUE(w.ok()) << w.status();
  (*w)->NameProcess(1, "libreyolod");
  (*w)->NameThread(0, 7, "stream 7");
  // Two steps of 1 ms; a forward phase of 0.5 ms in each with one op launching one kernel.
  for (int s = 0; s < 2; ++s) {
    const double t0 = 1000.0 * s;
    (*w)->AddSpan(Span("user_annotation", "ProfilerStep#" + std::to_string(s + 1), 1, 1, t0, 1000.0));
    (*w)->AddSpan(Span("user_annotation", "step/forward", 1, 1, t0 + 10, 500.0));
    TraceSpan op = Span("cpu_op", "aten::conv2d", 1, 1, t0 + 20, 100.0);
    op.input_dims_json = "[[1, 3, 8, 8], [4, 3, 3, 3]]";
    op.flops = 2.0e6;
    (*w)->AddSpan(op);
    TraceSpan launch = Span("cuda_runtime", "cudaLaunchKernel", 1, 1, t0 + 30, 5.0);
    launch.correlation = 100 + s;
    (*w)->AddSpan(launch);
    TraceSpan kernel = Span("kernel", "implicit_convolve_sgemm \"x\"", 0, 7, t0 + 40, 200.0);
    kernel.correlation = 100 + s;
    kernel.extra_args_json = "\"stream\": 7";
    (*w)->AddSpan(kernel);
    (*w)->AddFlow("ac2g", 100 + s, 1, 1, t0 + 30, 0, 7, t0 + 40);
    TraceMemoryEvent mem;
    mem.pid = 1;
    mem.tid = 1;
    mem.ts_us = t0 + 25;
    mem.device_type = 1;
    mem.device_index = 0;
    mem.bytes = 4096;
    mem.total_allocated = 4096 * (s + 1);
    mem.total_reserved = 8192;
    (*w)->AddMemory(mem);
  }
  ASSERT_TRUE((*w)->Finish().ok());

  auto p = LoadProfile(path);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(*p->real_steps, 2);
  EXPECT_DOUBLE_EQ(*p->step_ms, 1.0);
  EXPECT_DOUBLE_EQ(*p->gpu_busy_ms_per_step, 0.2);
  EXPECT_DOUBLE_EQ(*p->launches_per_step, 1.0);
  ASSERT_EQ(p->kernels.size(), 1u);
  EXPECT_EQ(p->kernels[0].raw_name, "implicit_convolve_sgemm \"x\"");
  ASSERT_EQ(p->phases.size(), 1u);
  EXPECT_EQ(p->phases[0].phase, "forward");
  EXPECT_DOUBLE_EQ(p->phases[0].gpu_ms_per_step, 0.2);
  EXPECT_DOUBLE_EQ(*p->flops_per_step, 2.0e6);
  EXPECT_DOUBLE_EQ(*p->peak_vram_mb, 8192 / 1e6);
  ASSERT_TRUE(p->device.has_value());
  EXPECT_EQ(p->device->name, "Test GPU");
  ASSERT_FALSE(p->ops_by_input_shape.empty());
  EXPECT_EQ(p->ops_by_input_shape[0].input_shapes, "[[1, 3, 8, 8], [4, 3, 3, 3]]");
  ASSERT_EQ(p->ops.size(), 1u);
  EXPECT_DOUBLE_EQ(*p->ops[0].self_device_ms_per_step, 0.2);
  EXPECT_DOUBLE_EQ(*p->ops[0].self_device_mem_bytes, 4096);
  fs::remove(path);
}

TEST(ChromeTraceWriter, UnwritablePathIsAnError) {
  auto w = ChromeTraceWriter::Open("/nonexistent-dir/trace.json");
  ASSERT_FALSE(w.ok());
  EXPECT_TRUE(absl::IsUnavailable(w.status()));
}

TEST(ChromeTraceWriter, QuotesControlCharacters) {
  EXPECT_EQ(JsonQuote("a\"b\\c\n\x01"), "\"a\\\"b\\\\c\\n\\u0001\"");
}

}  // namespace
}  // namespace libreyolo
