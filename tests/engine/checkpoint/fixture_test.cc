// The shared LibreYOLO9-t checkpoint (../shared/fixtures/models). Every expected number below was
// computed once with Debian's python3-torch 1.13:
//   ck = torch.load("libreyolo9t_seed1234.pt"); sd = ck["model"]; items = list(sd.items())
// (shapes/dtypes/strides from the tensors, values via .item(), sums via .double().sum().item()).
#include <gtest/gtest.h>

#include <gmock/gmock.h>

#include <cmath>
#include <string>
#include <variant>

#include "absl/strings/match.h"
#include "server/engine/checkpoint/checkpoint.h"

namespace libreyolo::engine {
namespace {

using ::testing::ElementsAre;

const std::string kPath = LIBREYOLO_SHARED_DIR "/fixtures/models/libreyolo9t_seed1234.pt";

const Checkpoint& Loaded() {
  static const Checkpoint* ck = [] {
    auto r = ReadCheckpoint(kPath);
    EXPECT_TRUE(r.ok()) << r.status();
    return new Checkpoint(r.ok() ? *std::move(r) : Checkpoint{});
  }();
  return *ck;
}

const CheckpointTensor* Find(const std::string& name) {
  for (const auto& [n, t] : Loaded().tensors) {
    if (n == name) return &t;
  }
  return nullptr;
}

double Sum(const CheckpointTensor& t) {
  double s = 0;
  for (int64_t i = 0; i < t.numel(); ++i) s += t.At(i);
  return s;
}

bool IsBuffer(const std::string& name) {
  return absl::EndsWith(name, "running_mean") || absl::EndsWith(name, "running_var") ||
         absl::EndsWith(name, "num_batches_tracked");
}

TEST(CheckpointFixture, TensorCountOrderAndParameterTotal) {
  const Checkpoint& ck = Loaded();
  ASSERT_EQ(ck.tensors.size(), 1338u);  // len(sd): 1117 float32 + 221 int64
  EXPECT_EQ(ck.tensors.front().first, "backbone.conv0.conv.weight");
  EXPECT_EQ(ck.tensors[5].first, "backbone.conv0.bn.num_batches_tracked");
  EXPECT_EQ(ck.tensors.back().first, "head.cv3.2.2.bias");
  int64_t all = 0, params = 0, floats = 0;
  for (const auto& [name, t] : ck.tensors) {
    all += t.numel();
    if (!IsBuffer(name)) params += t.numel();
    floats += t.dtype == DType::kFloat32;
  }
  EXPECT_EQ(all, 2052733);
  EXPECT_EQ(params, 2036544);  // the README's parameter count
  EXPECT_EQ(floats, 1117);
}

TEST(CheckpointFixture, ShapesDtypesAndStrides) {
  const CheckpointTensor* w = Find("backbone.conv0.conv.weight");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->dtype, DType::kFloat32);
  EXPECT_THAT(w->shape, ElementsAre(16, 3, 3, 3));
  EXPECT_THAT(w->strides, ElementsAre(27, 9, 3, 1));
  EXPECT_EQ(w->storage_offset, 0);
  ASSERT_NE(w->storage, nullptr);
  EXPECT_EQ(w->storage->size(), 432u * 4);

  const CheckpointTensor* nbt = Find("backbone.conv0.bn.num_batches_tracked");
  ASSERT_NE(nbt, nullptr);
  EXPECT_EQ(nbt->dtype, DType::kInt64);
  EXPECT_TRUE(nbt->shape.empty());
  EXPECT_EQ(nbt->numel(), 1);
  EXPECT_EQ(nbt->At(0), 0.0);

  const CheckpointTensor* m = Find("neck.elan_up1.cv3.0.m.1.cv1.conv1.conv.weight");
  ASSERT_NE(m, nullptr);
  EXPECT_THAT(m->shape, ElementsAre(24, 24, 3, 3));
  const CheckpointTensor* bias = Find("head.cv3.2.2.bias");
  ASSERT_NE(bias, nullptr);
  EXPECT_THAT(bias->shape, ElementsAre(80));
}

TEST(CheckpointFixture, ExactValues) {
  const CheckpointTensor& w = *Find("backbone.conv0.conv.weight");
  // float32 values widened to double are exact, so these compare with ==.
  EXPECT_EQ(w.At(0), -0.1812959760427475);
  EXPECT_EQ(w.At(1), -0.03775925934314728);
  EXPECT_EQ(w.At(100), 0.05578954890370369);
  EXPECT_EQ(w.At(431), -0.14898501336574554);
  EXPECT_NEAR(Sum(w), 2.50030954558315, 1e-9);
  // sd[...][3, 5, 1, 2] is flat index ((3 * 24 + 5) * 3 + 1) * 3 + 2 = 698.
  const CheckpointTensor& m = *Find("neck.elan_up1.cv3.0.m.1.cv1.conv1.conv.weight");
  EXPECT_EQ(m.At(698), 0.047203533351421356);
  EXPECT_NEAR(Sum(m), 6.139663639418359, 1e-9);
  const CheckpointTensor& bias = *Find("head.cv3.2.2.bias");
  EXPECT_EQ(bias.At(0), -9.562753677368164);
  EXPECT_EQ(bias.At(1), -8.276275634765625);
  EXPECT_EQ(bias.At(2), -7.494701862335205);
  EXPECT_NEAR(Sum(bias), -696.1907453536987, 1e-9);
  const CheckpointTensor& rv = *Find("backbone.conv0.bn.running_var");
  EXPECT_EQ(rv.At(0), 1.441706657409668);
  EXPECT_NEAR(Sum(rv), 19.48612356185913, 1e-9);
}

TEST(CheckpointFixture, SumOfEveryTensorMatchesPython) {
  double total = 0;
  for (const auto& [name, t] : Loaded().tensors) total += Sum(t);
  EXPECT_NEAR(total, 15924.412000376236, 1e-6);  // sum(v.double().sum() for v in sd.values())
}

TEST(CheckpointFixture, MetadataAndClassNames) {
  const Checkpoint& ck = Loaded();
  EXPECT_EQ(std::get<std::string>(ck.metadata.at("schema_version")), "1.0");
  EXPECT_EQ(std::get<std::string>(ck.metadata.at("libreyolo_version")), "0.0.0.dev0");
  EXPECT_EQ(std::get<std::string>(ck.metadata.at("model_family")), "yolo9");
  EXPECT_EQ(std::get<std::string>(ck.metadata.at("size")), "t");
  EXPECT_EQ(std::get<std::string>(ck.metadata.at("task")), "detect");
  EXPECT_EQ(std::get<int64_t>(ck.metadata.at("nc")), 80);
  EXPECT_EQ(std::get<int64_t>(ck.metadata.at("imgsz")), 640);
  EXPECT_FALSE(ck.metadata.contains("model"));
  const std::string& names = std::get<std::string>(ck.metadata.at("names"));
  EXPECT_TRUE(absl::StartsWith(names, "{0: 'person', 1: 'bicycle', ")) << names;
  ASSERT_EQ(ck.class_names.size(), 80u);
  EXPECT_EQ(ck.class_names[0], "person");
  EXPECT_EQ(ck.class_names[79], "toothbrush");
}

TEST(CheckpointFixture, MissingFileIsNotFound) {
  auto r = ReadCheckpoint(kPath + ".does-not-exist");
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace libreyolo::engine
