// Clock alignment, thread alignment and the merge of GPU activity into LibTorch's CPU trace.
#include <gtest/gtest.h>

#include "server/engine/collect/cupti_convert.h"
#include "tests/engine/collect/collected_event_util.h"

namespace libreyolo::engine {
namespace {

TEST(ClockOffset, TightestBracketWins) {
  // CUPTI runs 1,000,000 ns ahead. The loose samples disagree; the tight one is exact.
  const std::vector<ClockSample> samples = {
      {100, 1'000'400, 900},    // bracket 800
      {2000, 1'002'010, 2020},  // bracket 20, midpoint 2010
      {5000, 1'005'000, 5600},  // bracket 600
  };
  const std::optional<int64_t> offset = ClockOffsetNs(samples);
  ASSERT_TRUE(offset.has_value());
  EXPECT_EQ(*offset, 1'000'000);
}

TEST(ClockOffset, NoUsableSample) {
  EXPECT_FALSE(ClockOffsetNs({}).has_value());
  EXPECT_FALSE(ClockOffsetNs({{10, 5, 9}}).has_value());  // after < before
  EXPECT_EQ(*ClockOffsetNs({{10, 5, 10}}), -5);           // a zero-width bracket is fine
}

TEST(ThreadAlign, MapsByContainmentOneToOne) {
  std::vector<CollectedEvent> cpu;
  // Thread 1: the main thread, a step range over everything and ops inside it.
  cpu.push_back(Ev(CollectedKind::kUserAnnotation, "ProfilerStep#1", 0, 10'000, 1));
  cpu.push_back(Ev(CollectedKind::kCpuOp, "aten::conv2d", 100, 900, 1));
  cpu.push_back(Ev(CollectedKind::kCpuOp, "aten::add", 2000, 500, 1));
  // Thread 2: a loader thread with its own op.
  cpu.push_back(Ev(CollectedKind::kCpuOp, "aten::copy_", 5000, 1000, 2));

  std::vector<CollectedEvent> gpu;
  // CUPTI thread 777: launches inside thread 1's ops.
  gpu.push_back(Ev(CollectedKind::kRuntime, "cudaLaunchKernel", 200, 10, 777));
  gpu.push_back(Ev(CollectedKind::kRuntime, "cudaLaunchKernel", 2100, 10, 777));
  // CUPTI thread 888: a copy inside thread 2's op, which also lies inside thread 1's step range.
  gpu.push_back(Ev(CollectedKind::kRuntime, "cudaMemcpyAsync", 5100, 50, 888));
  // CUPTI thread 999: a call inside no op of any thread except the step range, which thread 1
  // already matched to 777.
  gpu.push_back(Ev(CollectedKind::kRuntime, "cudaStreamSynchronize", 8000, 100, 999));
  // Kernels are not runtime calls: never remapped.
  gpu.push_back(Ev(CollectedKind::kKernel, "k", 300, 100, 7));

  const std::map<uint64_t, uint64_t> m = AlignRuntimeThreads(cpu, gpu);
  EXPECT_EQ(m.size(), 2u);
  EXPECT_EQ(m.at(777), 1u);
  EXPECT_EQ(m.at(888), 2u);
  EXPECT_FALSE(m.contains(999));
  EXPECT_FALSE(m.contains(7));
}

TEST(ThreadAlign, MinorityContainmentIsNoMatch) {
  std::vector<CollectedEvent> cpu = {Ev(CollectedKind::kCpuOp, "aten::mm", 0, 100, 1)};
  // 10 ns inside an op, 90 ns outside: no majority.
  std::vector<CollectedEvent> gpu = {Ev(CollectedKind::kRuntime, "a", 50, 10, 5),
                                     Ev(CollectedKind::kRuntime, "b", 500, 90, 5)};
  EXPECT_TRUE(AlignRuntimeThreads(cpu, gpu).empty());
  EXPECT_TRUE(AlignRuntimeThreads({}, gpu).empty());
}

TEST(MergeGpuActivity, AlignsClocksThreadsAndAppends) {
  CollectedTrace cpu;
  cpu.events.push_back(Ev(CollectedKind::kUserAnnotation, "ProfilerStep#1", 1000, 5000, 1));
  cpu.events.push_back(Ev(CollectedKind::kCpuOp, "aten::mm", 1100, 800, 1));
  cpu.notes.push_back("cpu note");

  // GPU side in CUPTI's clock, 1,000,000 ns ahead of the CPU clock.
  CollectedTrace gpu;
  constexpr int64_t kAhead = 1'000'000;
  gpu.clock_samples = {{500, 500 + kAhead, 500}};
  CollectedEvent launch = Ev(CollectedKind::kRuntime, "cudaLaunchKernel", 1200 + kAhead, 20, 4242);
  launch.correlation = 9;
  gpu.events.push_back(launch);
  CollectedEvent kernel = Ev(CollectedKind::kKernel, "sm90_xmma_gemm", 1300 + kAhead, 400, 7);
  kernel.correlation = 9;
  kernel.device_index = 0;
  gpu.events.push_back(kernel);
  gpu.notes.push_back("gpu note");
  gpu.device_properties_json = "[{\"id\": 0, \"name\": \"G\"}]";

  MergeGpuActivity(cpu, std::move(gpu));
  ASSERT_EQ(cpu.events.size(), 4u);
  EXPECT_EQ(cpu.events[2].start_ns, 1200);
  EXPECT_EQ(cpu.events[2].thread, 1u);  // 4242 -> LibTorch's thread 1
  EXPECT_EQ(cpu.events[3].start_ns, 1300);
  EXPECT_EQ(cpu.events[3].thread, 7u);  // streams stay
  EXPECT_EQ(cpu.notes, (std::vector<std::string>{"cpu note", "gpu note"}));
  EXPECT_EQ(cpu.device_properties_json, "[{\"id\": 0, \"name\": \"G\"}]");
  EXPECT_TRUE(cpu.clock_samples.empty());
}

TEST(MergeGpuActivity, WithoutSamplesTimesStayAndDevicePropertiesAdd) {
  CollectedTrace cpu;
  cpu.device_properties_json = "[{\"id\": 0}]";
  CollectedTrace gpu;
  gpu.events.push_back(Ev(CollectedKind::kKernel, "k", 123, 4, 7));
  gpu.device_properties_json = "[{\"id\": 1}]";
  MergeGpuActivity(cpu, std::move(gpu));
  ASSERT_EQ(cpu.events.size(), 1u);
  EXPECT_EQ(cpu.events[0].start_ns, 123);
  EXPECT_EQ(cpu.device_properties_json, "[{\"id\": 0}, {\"id\": 1}]");

  CollectedTrace empty_gpu;  // "[]" keeps what the CPU side had
  MergeGpuActivity(cpu, std::move(empty_gpu));
  EXPECT_EQ(cpu.device_properties_json, "[{\"id\": 0}, {\"id\": 1}]");
}

}  // namespace
}  // namespace libreyolo::engine
