// Our RecordFunction op collector (server/engine/collect/op_collector.h): ops, named ranges,
// shapes, autograd sequence numbers, one collection at a time, and the same ops as LibTorch's
// profiler over the same window.
#include "server/engine/collect/op_collector.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <string>

#include "server/engine/collect/torch_profiler.h"

namespace libreyolo::engine {
namespace {

int64_t Count(const CollectedTrace& t, const std::string& name, CollectedKind kind) {
  return std::count_if(t.events.begin(), t.events.end(), [&](const CollectedEvent& e) {
    return e.kind == kind && e.name == name;
  });
}

const CollectedEvent* Find(const CollectedTrace& t, const std::string& name) {
  for (const CollectedEvent& e : t.events) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

TEST(OpCollector, RecordsOpsRangesShapesAndSequenceNumbers) {
  torch::set_num_threads(1);
  torch::nn::Conv2d conv(torch::nn::Conv2dOptions(3, 8, 3).padding(1));
  const torch::Tensor x = torch::rand({1, 3, 32, 32});
  OpCollectorOptions o;
  o.record_shapes = true;
  auto c = OpCollector::Start(o);
  ASSERT_TRUE(c.ok()) << c.status();
  {
    ScopedRange f("step/forward");
    const torch::Tensor y = conv->forward(x).relu();  // grad mode: forward ops get a seq nr
    ASSERT_EQ(y.size(1), 8);
  }
  auto t = (*c)->Stop();
  ASSERT_TRUE(t.ok()) << t.status();
  const CollectedEvent* range = Find(*t, "step/forward");
  ASSERT_NE(range, nullptr);
  EXPECT_EQ(range->kind, CollectedKind::kUserAnnotation);
  const CollectedEvent* conv2d = Find(*t, "aten::conv2d");
  ASSERT_NE(conv2d, nullptr);
  EXPECT_EQ(conv2d->kind, CollectedKind::kCpuOp);
  EXPECT_GT(conv2d->dur_ns, 0);
  // Nested in the range, on the same thread, in one clock.
  EXPECT_GE(conv2d->start_ns, range->start_ns);
  EXPECT_LE(conv2d->start_ns + conv2d->dur_ns, range->start_ns + range->dur_ns);
  EXPECT_EQ(conv2d->thread, range->thread);
  EXPECT_EQ(conv2d->input_dims_json.rfind("[[1, 3, 32, 32], [8, 3, 3, 3], [8]", 0), 0u)
      << conv2d->input_dims_json;
  ASSERT_TRUE(conv2d->sequence_nr.has_value());
  EXPECT_GE(*conv2d->sequence_nr, 0);
  EXPECT_TRUE(t->notes.empty());
}

TEST(OpCollector, OneCollectionAtATimeAndNothingOutsideIt) {
  const torch::Tensor x = torch::rand({4, 4});
  (void)(x + x);  // before any collection: not recorded anywhere
  auto c = OpCollector::Start({});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(absl::IsFailedPrecondition(OpCollector::Start({}).status()));
  (void)(x * x);
  auto t = (*c)->Stop();
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(Count(*t, "aten::mul", CollectedKind::kCpuOp), 1);
  EXPECT_EQ(Count(*t, "aten::add", CollectedKind::kCpuOp), 0);
  EXPECT_EQ(Find(*t, "aten::mul")->input_dims_json, "");  // shapes off by default
  EXPECT_TRUE(absl::IsFailedPrecondition((*c)->Stop().status()));
  (void)(x - x);  // after: a new collection starts empty
  auto again = OpCollector::Start({});
  ASSERT_TRUE(again.ok()) << again.status();
  auto t2 = (*again)->Stop();
  ASSERT_TRUE(t2.ok());
  EXPECT_EQ(Count(*t2, "aten::sub", CollectedKind::kCpuOp), 0);
  EXPECT_EQ(Count(*t2, "aten::mul", CollectedKind::kCpuOp), 0);
}

TEST(OpCollector, SeesTheSameOpsAsLibTorchsProfiler) {
  torch::set_num_threads(1);
  torch::nn::Conv2d conv(torch::nn::Conv2dOptions(3, 8, 3).padding(1));
  const torch::Tensor x = torch::rand({2, 3, 16, 16});
  auto ours = OpCollector::Start({});
  ASSERT_TRUE(ours.ok()) << ours.status();
  TorchProfilerOptions po;
  po.record_shapes = po.profile_memory = po.with_flops = false;
  auto theirs = TorchProfiler::Start(po);
  ASSERT_TRUE(theirs.ok()) << theirs.status();
  for (int i = 0; i < 3; ++i) {
    torch::NoGradGuard no_grad;
    (void)conv->forward(x).relu().sum();
  }
  auto t_theirs = (*theirs)->Stop();
  auto t_ours = (*ours)->Stop();
  ASSERT_TRUE(t_theirs.ok() && t_ours.ok());
  EXPECT_EQ(Count(*t_ours, "aten::conv2d", CollectedKind::kCpuOp), 3);
  for (const char* op : {"aten::conv2d", "aten::relu", "aten::sum", "aten::convolution"}) {
    EXPECT_EQ(Count(*t_ours, op, CollectedKind::kCpuOp),
              Count(*t_theirs, op, CollectedKind::kCpuOp))
        << op;
  }
}

}  // namespace
}  // namespace libreyolo::engine
