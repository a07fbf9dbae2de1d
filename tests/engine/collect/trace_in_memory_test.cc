// The in-memory events a job analyses are the events it writes: the exporter's one pass into a
// ChromeTraceWriter and a TraceDataBuilder gives what ReadTraceFile returns for the written file
// (SameTraceData, the parse stats, the device), and so the same analysis. Without LibTorch; the
// LibTorch-recorded case is in torch_profiler_test.cc.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "common/analysis/trace_analyser.h"
#include "common/profile/profile_json.h"
#include "common/trace/trace_data_builder.h"
#include "common/trace/trace_reader.h"
#include "server/engine/collect/trace_export.h"
#include "tests/engine/collect/collected_event_util.h"
#include "tests/engine/collect/trace_parity.h"
#include "tests/support/test_files.h"

namespace libreyolo::engine {
namespace {

// Every kind the collectors hand over: steps and phases, module scopes, CPU ops with shapes,
// FLOPs (whole, fractional, zero) and autograd links, launches, kernels, copies, memsets, CPU
// and device memory with a pool reservation; odd nanosecond times; a device header.
CollectedTrace RichTrace() {
  CollectedTrace t;
  const int64_t base = 1'700'000'123'456'789;  // a realistic clock value, odd nanoseconds
  for (int step = 1; step <= 2; ++step) {
    const int64_t s0 = base + (step - 1) * 1'000'003;
    t.events.push_back(Ev(CollectedKind::kUserAnnotation, "ProfilerStep#" + std::to_string(step),
                          s0, 1'000'001, 11));
    t.events.push_back(Ev(CollectedKind::kUserAnnotation, "step/forward", s0 + 1, 400'007, 11));
    t.events.push_back(
        Ev(CollectedKind::kUserAnnotation, "nn.Module: backbone.conv0", s0 + 3, 300'001, 11));
    CollectedEvent conv = Ev(CollectedKind::kCpuOp, "aten::conv2d", s0 + 5, 200'003, 11);
    conv.input_dims_json = "[[1, 3, 64, 64], [16, 3, 3, 3], [], []]";
    conv.flops = 1.5e9 + 0.4;
    conv.sequence_nr = 40 + step;
    t.events.push_back(conv);
    CollectedEvent relu = Ev(CollectedKind::kCpuOp, "aten::relu", s0 + 200'011, 9'999, 11);
    relu.input_dims_json = "[[1, 16, 64, 64]]";
    relu.flops = 0;
    t.events.push_back(relu);
    CollectedEvent launch =
        Ev(CollectedKind::kRuntime, "cudaLaunchKernel", s0 + 100'001, 5'003, 11);
    launch.correlation = 100 + step;
    t.events.push_back(launch);
    CollectedEvent kernel = Ev(CollectedKind::kKernel,
                               "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm>(Params)",
                               s0 + 150'007, 80'009, 7);
    kernel.device_index = 0;
    kernel.correlation = 100 + step;
    kernel.extra_args_json = "\"stream\": 7, \"grid\": [4, 1, 1]";
    t.events.push_back(kernel);
    CollectedEvent copy = Ev(CollectedKind::kMemcpy, "Memcpy HtoD", s0 + 90'001, 3'001, 7);
    copy.device_index = 0;
    t.events.push_back(copy);
    CollectedEvent set = Ev(CollectedKind::kMemset, "Memset", s0 + 95'001, 1'001, 8);
    set.device_index = 0;
    t.events.push_back(set);
    t.events.push_back(Ev(CollectedKind::kUserAnnotation, "step/backward", s0 + 500'003,
                          400'001, 11));
    CollectedEvent back =
        Ev(CollectedKind::kCpuOp, "ConvolutionBackward0", s0 + 500'101, 300'007, 12);
    back.sequence_nr = 40 + step;
    back.fwd_thread = 11;
    t.events.push_back(back);
    CollectedEvent cpu_alloc = Ev(CollectedKind::kMemory, "[memory]", s0 + 6, 0, 11);
    cpu_alloc.bytes = 65536;
    t.events.push_back(cpu_alloc);
    CollectedEvent dev_alloc = Ev(CollectedKind::kMemory, "[memory]", s0 + 7, 0, 11);
    dev_alloc.bytes = 1 << 20;
    dev_alloc.device_type = 1;
    dev_alloc.device_index = 0;
    t.events.push_back(dev_alloc);
    CollectedEvent pool = Ev(CollectedKind::kMemory, "[memory]", s0 + 8, 0, 11);
    pool.bytes = 2 << 20;
    pool.device_type = 1;
    pool.device_index = 0;
    pool.reservation = true;
    t.events.push_back(pool);
    CollectedEvent dev_free = Ev(CollectedKind::kMemory, "[memory]", s0 + 900'001, 0, 11);
    dev_free.bytes = -(1 << 20);
    dev_free.device_type = 1;
    dev_free.device_index = 0;
    t.events.push_back(dev_free);
  }
  t.device_properties_json =
      "[{\"id\": 0, \"name\": \"NVIDIA H200\", \"totalGlobalMem\": 150000000000, "
      "\"numSms\": 132, \"computeMajor\": 9, \"computeMinor\": 0}]";
  return t;
}

TEST(TraceInMemory, TheBuiltEventsAreWhatTheWrittenFileReadsAs) {
  const test::TempDir dir;
  const std::string path = dir.File("profile_trace.json");
  TraceExportOptions o;
  o.pid = 4242;
  o.device_allocated_at_start = 5000;
  auto built = ExportChromeTraceAndData(RichTrace(), path, o);
  ASSERT_TRUE(built.ok()) << built.status();
  auto read = ReadTraceFile(path);
  ASSERT_TRUE(read.ok()) << read.status();
  ExpectSameTraceData(*built, *read);
  EXPECT_EQ(built->events.size(), read->events.size());
  EXPECT_TRUE(built->has_input_shapes);
  ASSERT_TRUE(built->device.has_value());
  EXPECT_EQ(built->device->name, "NVIDIA H200");
}

TEST(TraceInMemory, ATraceWithoutDevicePropertiesOrEventsAgreesToo) {
  const test::TempDir dir;
  const std::string path = dir.File("empty.json");
  auto built = ExportChromeTraceAndData(CollectedTrace{}, path, {});
  ASSERT_TRUE(built.ok()) << built.status();
  auto read = ReadTraceFile(path);
  ASSERT_TRUE(read.ok()) << read.status();
  ExpectSameTraceData(*built, *read);
  EXPECT_FALSE(built->device.has_value());
}

TEST(TraceInMemory, AnUnwritablePathFailsWithoutData) {
  auto built = ExportChromeTraceAndData(RichTrace(), "/nonexistent-dir/x/profile_trace.json", {});
  ASSERT_FALSE(built.ok());
  EXPECT_EQ(built.status().code(), absl::StatusCode::kUnavailable);
}

TEST(TraceInMemory, InputDimsAreRenderedAsTheReaderRendersThem) {
  EXPECT_EQ(RenderInputDims("[[1,3, 640,640],[],  [16]]"), "[[1, 3, 640, 640], [], [16]]");
  EXPECT_EQ(RenderInputDims("[]"), "[]");
  EXPECT_EQ(RenderInputDims("[[[2, 2]], null]"), "[[[2, 2]], None]");
}

}  // namespace
}  // namespace libreyolo::engine
