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

TEST(ProfilingSession, CpuJobsHaveNoGpuNote) {
  auto session = ProfilingSession::Start(TorchProfilerOptions());
  ASSERT_TRUE(session.ok());
  auto trace = (*session)->Stop();
  ASSERT_TRUE(trace.ok());
  EXPECT_TRUE(trace->notes.empty());
}

}  // namespace
}  // namespace libreyolo::engine
