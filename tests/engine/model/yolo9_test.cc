// The whole Yolo9: sizes, parameter counts, FLOPs, output shapes, LoadStateDict and ToTorch.
#include "server/engine/model/yolo9.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace libreyolo::engine {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

class Yolo9Test : public ::testing::Test {
 protected:
  void SetUp() override {
    torch::set_num_threads(2);
    torch::manual_seed(11);
  }
};

std::vector<int64_t> Shape(const torch::Tensor& t) { return t.sizes().vec(); }

std::map<std::string, torch::Tensor> StateOf(const Yolo9& model) {
  std::map<std::string, torch::Tensor> state;
  for (const auto& p : model->named_parameters()) state[p.key()] = p.value().detach().clone();
  for (const auto& b : model->named_buffers()) state[b.key()] = b.value().clone();
  return state;
}

TEST_F(Yolo9Test, ParameterCountsMatchLibreYolo) {
  std::map<std::string, int64_t> counts;
  for (const char* size : {"t", "s", "m", "c"}) {
    counts[size] = CountParameters(Yolo9(Yolo9Options{size, 80}));
    std::printf("YOLOv9-%s: %lld parameters\n", size, static_cast<long long>(counts[size]));
  }
  EXPECT_EQ(counts["t"], 2036544);
  EXPECT_EQ(counts["s"], 7226192);
  EXPECT_NEAR(static_cast<double>(counts["m"]), 20.0e6, 0.02 * 20.0e6);
  EXPECT_NEAR(static_cast<double>(counts["c"]), 25.3e6, 0.02 * 25.3e6);
}

TEST_F(Yolo9Test, ForwardFlopsOfTinyAt640) {
  Yolo9 model;
  std::printf("YOLOv9-t at 640: %.4g FLOPs\n", ForwardFlops(model, 640));
  EXPECT_NEAR(ForwardFlops(model, 640), 7.79e9, 0.05 * 7.79e9);
  // Convolution work scales with the pixel count.
  EXPECT_NEAR(ForwardFlops(model, 320) * 4, ForwardFlops(model, 640), 0.02 * 7.79e9);
}

TEST_F(Yolo9Test, RawMapsAndPredictionsHaveLibreYoloShapes) {
  torch::NoGradGuard no_grad;
  Yolo9 model(Yolo9Options{"t", 3});
  model->eval();
  torch::Tensor x = torch::rand({2, 3, 128, 96});
  std::vector<torch::Tensor> raw = model->forward_raw(x);
  ASSERT_EQ(raw.size(), 3U);
  EXPECT_THAT(Shape(raw[0]), ElementsAre(2, 64 + 3, 16, 12));
  EXPECT_THAT(Shape(raw[1]), ElementsAre(2, 64 + 3, 8, 6));
  EXPECT_THAT(Shape(raw[2]), ElementsAre(2, 64 + 3, 4, 3));
  torch::Tensor pred = model->predict(x);
  EXPECT_THAT(Shape(pred), ElementsAre(2, 4 + 3, 16 * 12 + 8 * 6 + 4 * 3));
  EXPECT_TRUE(torch::allclose(pred, model->decode(raw)));
  torch::Tensor scores = pred.slice(1, 4);
  EXPECT_GE(scores.min().item<float>(), 0.0F);
  EXPECT_LE(scores.max().item<float>(), 1.0F);
  EXPECT_THROW(model->forward_raw(torch::rand({1, 3, 100, 96})), c10::Error);
}

TEST_F(Yolo9Test, EverySizeRunsForward) {
  torch::NoGradGuard no_grad;
  for (const char* size : {"s", "m", "c"}) {
    Yolo9 model(Yolo9Options{size, 80});
    model->eval();
    std::vector<torch::Tensor> raw = model->forward_raw(torch::rand({1, 3, 64, 64}));
    EXPECT_THAT(Shape(raw[0]), ElementsAre(1, 144, 8, 8)) << size;
    EXPECT_THAT(Shape(raw[2]), ElementsAre(1, 144, 2, 2)) << size;
  }
}

// The PGI auxiliary branch (issue 38 §0) of every size, 3 classes: the state-dict tensors and
// trainable parameters the Python LibreYOLO 1.6's LibreYOLO9Model(config, nb_classes=3)
// .enable_aux() adds (counted there: t 432 / 746,217, s 432 / 2,548,489, m 288 / 7,427,049,
// c 288 / 10,182,089); the auxiliary maps only in training; removal leaves the model as built.
TEST_F(Yolo9Test, ThePgiBranchHasPythonsSizeAndRunsOnlyInTraining) {
  const std::map<std::string, std::pair<int64_t, int64_t>> python = {
      {"t", {432, 746217}}, {"s", {432, 2548489}}, {"m", {288, 7427049}}, {"c", {288, 10182089}}};
  for (const auto& [size, want] : python) {
    Yolo9 model(Yolo9Options{size, 3});
    const int64_t plain = CountParameters(model);
    const double plain_flops = ForwardFlops(model, 64);
    model->EnableAux(0.25);
    int64_t tensors = 0;
    for (const auto& p : model->named_parameters()) tensors += IsAuxKey(p.key());
    for (const auto& b : model->named_buffers()) tensors += IsAuxKey(b.key());
    EXPECT_EQ(tensors, want.first) << size;
    EXPECT_EQ(CountParameters(model) - plain, want.second) << size;
    EXPECT_GT(ForwardFlops(model, 64), plain_flops) << size;
    if (size == "t") {
      model->train();
      const auto maps = model->forward_train(torch::rand({2, 3, 64, 64}));
      ASSERT_EQ(maps.aux.size(), 3U);
      for (size_t i = 0; i < 3; ++i) EXPECT_EQ(Shape(maps.aux[i]), Shape(maps.main[i])) << i;
      model->eval();
      torch::NoGradGuard no_grad;
      EXPECT_TRUE(model->forward_train(torch::rand({1, 3, 64, 64})).aux.empty());
    }
    model->DisableAux();
    EXPECT_EQ(CountParameters(model), plain) << size;
    EXPECT_EQ(ForwardFlops(model, 64), plain_flops) << size;
  }
}

TEST_F(Yolo9Test, ValidateOptions) {
  EXPECT_TRUE(ValidateYolo9Options({"c", 3}).ok());
  EXPECT_EQ(ValidateYolo9Options({"x", 80}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ValidateYolo9Options({"t", 0}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THROW(Yolo9(Yolo9Options{"e", 80}), c10::Error);
}

TEST_F(Yolo9Test, LoadStateDictCopiesEveryTensor) {
  torch::NoGradGuard no_grad;
  Yolo9 source;
  source->eval();
  // Non-trivial running statistics, so that buffers are checked too.
  for (auto& b : source->named_buffers()) {
    if (b.key().find("running_var") != std::string::npos) b.value().uniform_(0.5, 2.0);
  }
  Yolo9 target;
  target->eval();
  ASSERT_TRUE(LoadStateDict(target, StateOf(source)).ok());
  torch::Tensor x = torch::rand({1, 3, 64, 64});
  EXPECT_TRUE(torch::equal(source->predict(x), target->predict(x)));
}

TEST_F(Yolo9Test, LoadStateDictNamesEveryProblemAndCopiesNothing) {
  Yolo9 model;
  std::map<std::string, torch::Tensor> state = StateOf(model);
  const torch::Tensor before = model->named_parameters()["backbone.conv0.conv.weight"].clone();
  state["backbone.conv0.conv.weight"] = torch::zeros({16, 3, 3, 3});
  state.erase("neck.elan_up1.cv4.bn.running_mean");
  state["head.extra.weight"] = torch::zeros({1});
  state["head.cv3.0.2.weight"] = torch::zeros({80, 80, 3, 3});
  // Python drops the legacy DFL projection weight silently; so does LoadStateDict.
  state["head.dfl.conv.weight"] = torch::zeros({1, 16, 1, 1});
  const absl::Status status = LoadStateDict(model, state);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("1 missing, 1 unexpected, 1 mis-shaped"));
  EXPECT_THAT(status.message(), HasSubstr("missing neck.elan_up1.cv4.bn.running_mean"));
  EXPECT_THAT(status.message(), HasSubstr("unexpected head.extra.weight"));
  EXPECT_THAT(status.message(), HasSubstr("mis-shaped head.cv3.0.2.weight (checkpoint "
                                          "[80, 80, 3, 3], model [80, 80, 1, 1])"));
  EXPECT_THAT(status.message(), Not(HasSubstr("dfl")));
  EXPECT_TRUE(torch::equal(model->named_parameters()["backbone.conv0.conv.weight"], before));
}

TEST_F(Yolo9Test, LoadStateDictCutsLongListsWithACount) {
  Yolo9 model(Yolo9Options{"t", 3});
  // 80-class weights into a 3-class model: every class-tower output tensor is mis-shaped.
  const absl::Status wrong_nc = LoadStateDict(model, StateOf(Yolo9()));
  EXPECT_THAT(wrong_nc.message(), HasSubstr("mis-shaped head.cv3.0.2.weight"));
  const absl::Status empty = LoadStateDict(model, {});
  EXPECT_THAT(empty.message(), HasSubstr("1338 missing"));
  EXPECT_THAT(empty.message(), HasSubstr("; ... and 1318 more"));
}

TEST_F(Yolo9Test, LoadStateDictLeavesWhatItIsToldAndIgnoresThePgiBranch) {
  // A 2-class model on COCO-width (80) class towers, as a fine-tune from COCO keeps them.
  Yolo9 model(Yolo9Options{"t", 2, 80});
  EXPECT_EQ(Shape(model->named_parameters()["head.cv3.0.0.conv.weight"]),
            (std::vector<int64_t>{80, 64, 3, 3}));
  EXPECT_EQ(Shape(Yolo9(Yolo9Options{"t", 2})->named_parameters()["head.cv3.0.0.conv.weight"]),
            (std::vector<int64_t>{64, 64, 3, 3}));  // a fresh 2-class build: 64 wide
  std::map<std::string, torch::Tensor> state = StateOf(Yolo9(Yolo9Options{"t", 80}));
  // The Python LibreYOLO 1.6 saves its training-only PGI branch; a single-head model drops it.
  state["aux.elan_up1.cv1.conv.weight"] = torch::zeros({3});
  state["aux_head.cv3.0.2.weight"] = torch::zeros({80, 80, 1, 1});
  const torch::Tensor own = model->named_parameters()["head.cv3.1.2.weight"].clone();
  std::set<std::string> leave;
  for (int level = 0; level < 3; ++level) {
    for (const char* p : {"weight", "bias"})
      leave.insert(absl::StrCat("head.cv3.", level, ".2.", p));
  }
  ASSERT_TRUE(LoadStateDict(model, state, leave).ok());
  EXPECT_TRUE(torch::equal(model->named_parameters()["head.cv3.1.2.weight"], own));
  EXPECT_TRUE(torch::equal(model->named_parameters()["head.cv3.1.1.conv.weight"],
                           state["head.cv3.1.1.conv.weight"]));
  // What it leaves is still its own to check: an 80-class tensor there is not copied either.
  EXPECT_EQ(LoadStateDict(model, state).code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(Yolo9Test, ToTorchHonoursStridesOffsetAndDtype) {
  // Storage of 8 floats 0..7; view = elements from offset 1, shape [2, 3], strides [1, 2]
  // (a transposed view): [[1, 3, 5], [2, 4, 6]].
  auto bytes = std::make_shared<std::string>(8 * sizeof(float), '\0');
  for (size_t i = 0; i < 8; ++i) {
    const float v = static_cast<float>(i);
    std::memcpy(bytes->data() + i * sizeof(float), &v, sizeof(float));
  }
  CheckpointTensor view;
  view.dtype = DType::kFloat32;
  view.shape = {2, 3};
  view.strides = {1, 2};
  view.storage_offset = 1;
  view.storage = bytes;
  torch::Tensor t = ToTorch(view);
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_TRUE(torch::equal(t, torch::tensor({1.0F, 3.0F, 5.0F, 2.0F, 4.0F, 6.0F}).view({2, 3})));

  CheckpointTensor scalar;
  scalar.dtype = DType::kInt64;
  auto little_endian_42 = std::make_shared<std::string>(sizeof(int64_t), '\0');
  (*little_endian_42)[0] = 42;
  scalar.storage = little_endian_42;
  EXPECT_EQ(ToTorch(scalar).item<int64_t>(), 42);
  EXPECT_EQ(ToTorch(scalar).dim(), 0);

  view.shape = {2, 4};  // last element at offset 1 + 1 + 3 x 2 = 8: past the storage
  EXPECT_THROW(ToTorch(view), c10::Error);
}

}  // namespace
}  // namespace libreyolo::engine
