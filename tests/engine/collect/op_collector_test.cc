// Our RecordFunction op collector (server/engine/collect/op_collector.h): ops, named ranges,
// shapes, autograd sequence numbers, one collection at a time, and the same ops as LibTorch's
// profiler over the same window.
#include "server/engine/collect/op_collector.h"

#include <ATen/ThreadLocalState.h>
#include <ATen/record_function.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <time.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

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

// A collective's range as c10d's ProcessGroupGloo opens it (AsyncWork): created on the caller's
// thread, begun and ended on the backend's worker thread, which carries the caller's
// thread-local callbacks. It records the tensors it moves (shape and dtype, as LibTorch's
// profiler does: the cross-rank reader's all-reduce bytes); a plain range records no inputs.
TEST(OpCollector, ACollectiveRangeOnItsBackendThreadRecordsWhatItMoves) {
  OpCollectorOptions o;
  o.record_shapes = true;
  auto c = OpCollector::Start(o);
  ASSERT_TRUE(c.ok()) << c.status();
  const torch::Tensor bucket = torch::zeros({5418});
  auto collective = [&](const char* name) {
    auto rf = std::make_shared<at::RecordFunction>(at::RecordScope::USER_SCOPE);
    ASSERT_TRUE(rf->isActive());
    std::function<void()> work = at::wrapPropagateTLSState([rf, bucket, name] {
      rf->_setAsync();
      const std::vector<c10::IValue> inputs = {bucket};
      rf->before(name, c10::ArrayRef<const c10::IValue>(inputs.data(), inputs.size()));
      rf->end();
    });
    std::thread(work).join();
  };
  collective("gloo:all_reduce");
  collective("step/dataload");
  auto t = (*c)->Stop();
  ASSERT_TRUE(t.ok()) << t.status();
  const CollectedEvent* e = Find(*t, "gloo:all_reduce");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->kind, CollectedKind::kUserAnnotation);
  EXPECT_EQ(e->input_dims_json, "[[5418]]");
  EXPECT_EQ(e->extra_args_json, "\"Input type\": [\"float\"]");
  const CollectedEvent* plain = Find(*t, "step/dataload");
  ASSERT_NE(plain, nullptr);
  EXPECT_EQ(plain->input_dims_json, "");
  EXPECT_EQ(plain->extra_args_json, "");
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

int64_t RealtimeNs() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// The work both collectors record in the comparisons below: a small conv net's forward and
// backward (allocations, FLOPs of conv/addmm/mul/add, autograd links).
void ForwardBackward(torch::nn::Conv2d& conv, torch::nn::Linear& fc, const torch::Tensor& x) {
  const torch::Tensor y = fc->forward(conv->forward(x).relu().mean({2, 3}));
  (y * 2 + 1).sum().backward();
}

struct Totals {
  int64_t memory_events = 0;
  int64_t bytes_allocated = 0;  // the sum of the positive [memory] events
  int64_t bytes_net = 0;
  std::map<std::string, double> flops;  // per op name
  std::map<std::string, int64_t> ops;   // per op name
};

Totals TotalsOf(const CollectedTrace& t) {
  Totals out;
  for (const CollectedEvent& e : t.events) {
    if (e.kind == CollectedKind::kMemory) {
      ++out.memory_events;
      out.bytes_net += e.bytes;
      if (e.bytes > 0) out.bytes_allocated += e.bytes;
    } else if (e.kind == CollectedKind::kCpuOp) {
      ++out.ops[e.name];
      if (e.flops) out.flops[e.name] += *e.flops;
    }
  }
  return out;
}

// Per op name: how many carry a sequence number, and how many of those a forward thread equal
// to their own (CPU backward runs on the forward's thread here).
std::map<std::string, std::pair<int64_t, int64_t>> AutogradLinks(const CollectedTrace& t) {
  std::map<std::string, std::pair<int64_t, int64_t>> out;
  for (const CollectedEvent& e : t.events) {
    if (e.kind != CollectedKind::kCpuOp || !e.sequence_nr) continue;
    auto& [with_seq, fwd_here] = out[e.name];
    ++with_seq;
    if (e.fwd_thread && *e.fwd_thread == e.thread) ++fwd_here;
  }
  return out;
}

TEST(OpCollector, RecordsMemoryFlopsAndAutogradLinksAsLibTorchsProfilerDoes) {
  torch::manual_seed(0);
  torch::set_num_threads(1);
  torch::nn::Conv2d conv(torch::nn::Conv2dOptions(3, 8, 3).padding(1));
  torch::nn::Linear fc(8, 4);
  const torch::Tensor x = torch::rand({2, 3, 16, 16});
  ForwardBackward(conv, fc, x);  // warm: lazy initialisation is not part of either window
  conv->zero_grad();
  fc->zero_grad();

  OpCollectorOptions o;
  o.record_shapes = o.profile_memory = o.with_flops = true;
  const int64_t before = RealtimeNs();
  auto ours = OpCollector::Start(o);
  ASSERT_TRUE(ours.ok()) << ours.status();
  ForwardBackward(conv, fc, x);
  auto t_ours = (*ours)->Stop();
  const int64_t after = RealtimeNs();
  ASSERT_TRUE(t_ours.ok()) << t_ours.status();
  conv->zero_grad();
  fc->zero_grad();

  auto theirs = TorchProfiler::Start({});  // shapes, memory and FLOPs on
  ASSERT_TRUE(theirs.ok()) << theirs.status();
  ForwardBackward(conv, fc, x);
  auto t_theirs = (*theirs)->Stop();
  ASSERT_TRUE(t_theirs.ok()) << t_theirs.status();

  const Totals a = TotalsOf(*t_ours), b = TotalsOf(*t_theirs);
  EXPECT_GT(a.memory_events, 0);
  EXPECT_EQ(a.memory_events, b.memory_events);
  EXPECT_EQ(a.bytes_allocated, b.bytes_allocated);
  EXPECT_EQ(a.bytes_net, b.bytes_net);
  EXPECT_EQ(a.ops, b.ops);
  ASSERT_GT(a.flops.count("aten::conv2d"), 0u);
  EXPECT_GT(a.flops.at("aten::conv2d"), 0);
  EXPECT_EQ(a.flops, b.flops);
  for (const CollectedEvent& e : t_ours->events) {
    // One clock, the trace's: CLOCK_REALTIME nanoseconds, inside the window.
    EXPECT_GE(e.start_ns, before) << e.name;
    EXPECT_LE(e.start_ns + e.dur_ns, after) << e.name;
    if (e.kind == CollectedKind::kMemory) {
      EXPECT_EQ(e.device_type, 0);
      EXPECT_EQ(e.device_index, -1);
      EXPECT_EQ(e.dur_ns, 0);
    }
  }
  // Forward and backward ops carry their sequence number and forward thread as LibTorch
  // writes them (the autograd engine's evaluate_function ranges included).
  const auto links = AutogradLinks(*t_ours);
  ASSERT_GT(links.count("autograd::engine::evaluate_function: ConvolutionBackward0"), 0u);
  EXPECT_EQ(links.at("autograd::engine::evaluate_function: ConvolutionBackward0"),
            std::make_pair(int64_t{1}, int64_t{1}));
  EXPECT_EQ(links, AutogradLinks(*t_theirs));
}

TEST(OpCollector, APausedCollectionRecordsNothingAndResumesWhole) {
  const torch::Tensor x = torch::rand({4, 4});
  OpCollectorOptions o;
  o.profile_memory = true;
  auto c = OpCollector::Start(o);
  ASSERT_TRUE(c.ok()) << c.status();
  (void)(x * x);
  ASSERT_TRUE((*c)->Pause().ok());
  EXPECT_TRUE((*c)->paused());
  EXPECT_TRUE((*c)->Pause().ok());  // twice: still paused, no error
  (void)(x + x);
  (void)torch::ones({64, 64});
  ASSERT_TRUE((*c)->Resume().ok());
  (void)(x - x);
  auto t = (*c)->Stop();
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(Count(*t, "aten::mul", CollectedKind::kCpuOp), 1);
  EXPECT_EQ(Count(*t, "aten::add", CollectedKind::kCpuOp), 0);
  EXPECT_EQ(Count(*t, "aten::ones", CollectedKind::kCpuOp), 0);
  EXPECT_EQ(Count(*t, "aten::sub", CollectedKind::kCpuOp), 1);
  // mul's and sub's results: one allocation each, nothing from the paused ones/add.
  int64_t allocations = 0;
  for (const CollectedEvent& e : t->events) {
    if (e.kind == CollectedKind::kMemory && e.bytes > 0) {
      ++allocations;
      EXPECT_EQ(e.bytes, 4 * 4 * 4);
    }
  }
  EXPECT_EQ(allocations, 2);
  // The memory hook is off the thread again: LibTorch's profiler starts as usual afterwards.
  auto theirs = TorchProfiler::Start({});
  ASSERT_TRUE(theirs.ok()) << theirs.status();
  ASSERT_TRUE((*theirs)->Stop().ok());
}

// A tensor whose sizes cannot be read (nested) costs its op the shapes, not its record: the
// ops around it keep their nesting and their shapes.
TEST(OpCollector, AnInputWithoutReadableSizesKeepsTheRecordAndItsNesting) {
  const torch::Tensor nt = torch::nested::nested_tensor({torch::rand({2, 3}), torch::rand({4, 3})});
  const torch::Tensor x = torch::rand({4, 4});
  OpCollectorOptions o;
  o.record_shapes = true;
  auto c = OpCollector::Start(o);
  ASSERT_TRUE(c.ok()) << c.status();
  {
    ScopedRange outer("outer");
    (void)nt.relu();
    (void)(x * x);
  }
  auto t = (*c)->Stop();
  ASSERT_TRUE(t.ok()) << t.status();
  const CollectedEvent* range = Find(*t, "outer");
  const CollectedEvent* relu = Find(*t, "aten::relu");
  const CollectedEvent* mul = Find(*t, "aten::mul");
  ASSERT_NE(range, nullptr);
  ASSERT_NE(relu, nullptr);
  ASSERT_NE(mul, nullptr);
  EXPECT_EQ(relu->input_dims_json, "");
  EXPECT_EQ(mul->input_dims_json, "[[4, 4], [4, 4]]");
  // The range ends after mul: relu's end did not close it.
  EXPECT_GE(range->start_ns + range->dur_ns, mul->start_ns + mul->dur_ns);
  EXPECT_TRUE(t->notes.empty()) << t->notes[0];
}

TEST(OpCollector, OnlyTheStartingThreadStopsIt) {
  auto c = OpCollector::Start({});
  ASSERT_TRUE(c.ok()) << c.status();
  absl::Status from_other;
  std::thread other([&] { from_other = (*c)->Stop().status(); });
  other.join();
  EXPECT_TRUE(absl::IsFailedPrecondition(from_other)) << from_other;
  EXPECT_NE(from_other.message().find("thread that started"), std::string::npos) << from_other;
  EXPECT_TRUE(OpCollector::Active());
  ASSERT_TRUE((*c)->Stop().ok());
  EXPECT_FALSE(OpCollector::Active());
  OpCollectorOptions bad;
  bad.reserve_per_thread = -1;
  EXPECT_TRUE(absl::IsInvalidArgument(OpCollector::Start(bad).status()));
  EXPECT_FALSE(OpCollector::Active());
}

}  // namespace
}  // namespace libreyolo::engine
