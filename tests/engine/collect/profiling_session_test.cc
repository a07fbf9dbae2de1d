// The profiling session on a host without a GPU: asking for CUDA activity still records the CPU
// side, and the trace says in one line why there is no GPU activity.
#include "server/engine/collect/profiling_session.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "server/engine/collect/cupti_collector.h"

namespace libreyolo::engine {
namespace {

TEST(ProfilingSession, WithoutADriverRecordsTheCpuSideAndSaysWhyNoGpu) {
  torch::set_num_threads(1);
  TorchProfilerOptions o;
  o.cuda = true;
  auto session = ProfilingSession::Start(o);
  ASSERT_TRUE(session.ok()) << session.status();
  {
    ScopedRange step("ProfilerStep#1");
    const torch::Tensor y = torch::rand({16, 16}).mm(torch::rand({16, 16}));
    ASSERT_EQ(y.size(0), 16);
  }
  auto trace = (*session)->Stop();
  ASSERT_TRUE(trace.ok()) << trace.status();
  bool mm = false;
  for (const CollectedEvent& e : trace->events) mm = mm || e.name == "aten::mm";
  EXPECT_TRUE(mm);
  for (const CollectedEvent& e : trace->events) EXPECT_NE(e.kind, CollectedKind::kKernel);
  ASSERT_EQ(trace->notes.size(), 1u);
  if (CuptiBuilt()) {
    EXPECT_EQ((*session)->gpu_collector(), "none");
    EXPECT_NE(trace->notes[0].find("CUPTI: no CUDA driver"), std::string::npos) << trace->notes[0];
  } else {
    EXPECT_EQ((*session)->gpu_collector(), "libtorch");
  }
}

// The job's default CPU collector, ours, behind the same door: asked for CUDA on a host without
// a driver it records the CPU side and says why there is no GPU activity; where the build has no
// CUPTI collector, GPU activity would come from Kineto, so LibTorch's profiler records the CPU
// side instead and the note says that too.
TEST(ProfilingSession, TheNativeCollectorRecordsTheCpuSideAndPausesLikeLibTorchs) {
  torch::set_num_threads(1);
  for (const bool cuda : {false, true}) {
    SCOPED_TRACE(cuda ? "cuda asked" : "cpu");
    const TorchProfilerOptions o = SessionOptions(ResolvedSwitches{}, "native", cuda);
    ASSERT_EQ(o.cpu_collector, CpuCollector::kNative);
    auto session = ProfilingSession::Start(o);
    ASSERT_TRUE(session.ok()) << session.status();
    const bool native = !cuda || CuptiBuilt();
    EXPECT_STREQ((*session)->cpu_collector(), native ? "native" : "libtorch");
    const torch::Tensor a = torch::rand({16, 16});
    {
      ScopedRange step("ProfilerStep#1");
      (void)a.mm(a);
    }
    if (!cuda) {  // paused: nothing recorded; resumed: recorded again
      ASSERT_TRUE((*session)->Pause().ok());
      (void)(a + a);
      ASSERT_TRUE((*session)->Resume().ok());
      (void)(a - a);
    }
    auto trace = (*session)->Stop();
    ASSERT_TRUE(trace.ok()) << trace.status();
    int64_t mm = 0, add = 0, sub = 0, steps = 0;
    for (const CollectedEvent& e : trace->events) {
      mm += e.name == "aten::mm";
      add += e.name == "aten::add";
      sub += e.name == "aten::sub";
      steps += e.kind == CollectedKind::kUserAnnotation && e.name == "ProfilerStep#1";
    }
    EXPECT_EQ(mm, 1);
    EXPECT_EQ(steps, 1);
    if (!cuda) {
      EXPECT_EQ(add, 0);
      EXPECT_EQ(sub, 1);
      EXPECT_TRUE(trace->notes.empty());
    } else {
      ASSERT_EQ(trace->notes.size(), 1u);
      EXPECT_NE(trace->notes[0].find(native ? "CUPTI: no CUDA driver" : "collector native asked"),
                std::string::npos)
          << trace->notes[0];
    }
  }
  EXPECT_EQ(SessionOptions(ResolvedSwitches{}, "libtorch", false).cpu_collector,
            CpuCollector::kLibTorch);
}

TEST(ProfilingSession, CpuJobsHaveNoGpuNote) {
  auto session = ProfilingSession::Start(TorchProfilerOptions());
  ASSERT_TRUE(session.ok());
  auto trace = (*session)->Stop();
  ASSERT_TRUE(trace.ok());
  EXPECT_TRUE(trace->notes.empty());
}

}  // namespace
}  // namespace libreyolo::engine
