// LibTorch's profiler through our collector and exporter, analysed by the common analyser.
#include "server/engine/collect/torch_profiler.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>

#include "common/load/load_profile.h"
#include "server/engine/collect/trace_export.h"
#include "tests/engine/collect/trace_parity.h"

namespace libreyolo::engine {
namespace {

TEST(TorchProfiler, RecordsOpsShapesFlopsMemoryAndRanges) {
  torch::set_num_threads(1);
  torch::nn::Conv2d conv(torch::nn::Conv2dOptions(3, 8, 3).padding(1));
  const torch::Tensor x = torch::rand({1, 3, 32, 32});
  auto prof = TorchProfiler::Start({});
  ASSERT_TRUE(prof.ok()) << prof.status();
  for (int step = 1; step <= 2; ++step) {
    ScopedRange s("ProfilerStep#" + std::to_string(step));
    ScopedRange f("step/forward");
    torch::NoGradGuard no_grad;
    const torch::Tensor y = conv->forward(x).relu();
    ASSERT_EQ(y.size(1), 8);
  }
  auto trace = (*prof)->Stop();
  ASSERT_TRUE(trace.ok()) << trace.status();
  ASSERT_FALSE(trace->events.empty());

  const std::string path =
      (std::filesystem::temp_directory_path() / "libreyolo_torch_profiler_test.json").string();
  auto in_memory = ExportChromeTraceAndData(*trace, path, {});
  ASSERT_TRUE(in_memory.ok()) << in_memory.status();
  // What a job analyses in memory is what the written file reads as.
  auto read = ReadTraceFile(path);
  ASSERT_TRUE(read.ok()) << read.status();
  ExpectSameTraceData(*in_memory, *read);
  auto p = LoadProfile(path);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(*p->real_steps, 2);
  EXPECT_TRUE(p->has_input_shapes);
  const OpRow* conv2d = nullptr;
  for (const OpRow& r : p->ops) {
    if (r.op == "aten::conv2d") conv2d = &r;
  }
  ASSERT_NE(conv2d, nullptr);
  EXPECT_DOUBLE_EQ(conv2d->count_per_step, 1);
  // 2 FLOPs per multiply-add: 2 * (8 * 32 * 32) outputs * (3 * 3 * 3) inputs each.
  ASSERT_TRUE(conv2d->flops.has_value());
  EXPECT_DOUBLE_EQ(*conv2d->flops, 2.0 * 8 * 32 * 32 * 27);
  EXPECT_GT(conv2d->cpu_mem_bytes.value_or(0), 0);
  ASSERT_EQ(p->phases.size(), 1u);
  EXPECT_EQ(p->phases[0].phase, "forward");
  EXPECT_GT(p->phases[0].ops_per_step, 3);
  EXPECT_EQ(p->bound, "compute");  // no kernels: CPU-bound
  std::filesystem::remove(path);
}

// The overhead probes' single session a round: what runs while paused reaches none of the
// session's callbacks (no op, no range, no [memory] event), what runs after Resume is recorded
// as in a fresh session (shapes, FLOPs, memory), and a session stopped while paused still stops.
TEST(TorchProfiler, APausedSessionRecordsNothingAndResumesWhole) {
  torch::set_num_threads(1);
  torch::nn::Conv2d conv(torch::nn::Conv2dOptions(3, 8, 3).padding(1));
  const torch::Tensor x = torch::rand({1, 3, 32, 32});
  auto forward = [&](const std::string& range) {
    ScopedRange s(range);
    torch::NoGradGuard no_grad;
    return conv->forward(x).relu().sum().item<float>();
  };
  auto prof = TorchProfiler::Start({});
  ASSERT_TRUE(prof.ok()) << prof.status();
  ASSERT_TRUE((*prof)->Pause().ok());
  EXPECT_TRUE((*prof)->paused());
  forward("paused#1");
  ASSERT_TRUE((*prof)->Resume().ok());
  forward("resumed#1");
  ASSERT_TRUE((*prof)->Pause().ok());
  forward("paused#2");
  auto trace = (*prof)->Stop();  // stopped while paused
  ASSERT_TRUE(trace.ok()) << trace.status();
  int64_t conv_ops = 0, memory = 0, resumed_ranges = 0, shapes = 0, flops = 0;
  int64_t first_resumed = -1, last_resumed_end = -1;
  for (const CollectedEvent& e : trace->events) {
    EXPECT_EQ(e.name.find("paused#"), std::string::npos) << e.name;
    if (e.name == "resumed#1") {
      ++resumed_ranges;
      first_resumed = e.start_ns;
      last_resumed_end = e.start_ns + e.dur_ns;
    }
  }
  ASSERT_EQ(resumed_ranges, 1);
  for (const CollectedEvent& e : trace->events) {
    // Everything recorded lies inside the resumed window: nothing from either paused one.
    EXPECT_GE(e.start_ns, first_resumed) << e.name;
    EXPECT_LE(e.start_ns, last_resumed_end) << e.name;
    if (e.kind == CollectedKind::kMemory) ++memory;
    if (e.name == "aten::conv2d") {
      ++conv_ops;
      if (!e.input_dims_json.empty()) ++shapes;
    }
    if (e.flops.has_value()) ++flops;
  }
  EXPECT_EQ(conv_ops, 1);
  EXPECT_EQ(shapes, 1);
  EXPECT_GT(flops, 0);
  EXPECT_GT(memory, 0);
  // A second session starts cleanly after one stopped while paused, and records.
  auto next = TorchProfiler::Start({});
  ASSERT_TRUE(next.ok()) << next.status();
  forward("next#1");
  auto again = (*next)->Stop();
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->events.empty());
}

TEST(TorchProfiler, ASessionAskedForCudaActivityIsNotPaused) {
  TorchProfilerOptions o;
  o.cuda = true;
  auto prof = TorchProfiler::Start(o);
  ASSERT_TRUE(prof.ok()) << prof.status();
  EXPECT_EQ((*prof)->Pause().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE((*prof)->Stop().ok());
}

TEST(TorchProfiler, OnlyOneSessionAtATime) {
  auto a = TorchProfiler::Start({});
  ASSERT_TRUE(a.ok());
  auto b = TorchProfiler::Start({});
  EXPECT_FALSE(b.ok());
  EXPECT_TRUE((*a)->Stop().ok());
  EXPECT_FALSE((*a)->Stop().ok());
}

}  // namespace
}  // namespace libreyolo::engine
