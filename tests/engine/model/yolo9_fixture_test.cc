// The reproduction test: LibreYOLO's YOLOv9-t checkpoint (seeded, every BN perturbed) loaded
// through ReadCheckpoint + ToTorch + LoadStateDict must give Python's eval `predictions` for
// the same input (boxes within 1e-2 px, scores within 1e-3 relative).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>

#include "server/engine/checkpoint/checkpoint.h"
#include "server/engine/model/yolo9.h"
#include "tests/engine/model/npy_reader.h"

namespace libreyolo::engine {
namespace {

const std::string kModels = std::string(LIBREYOLO_SHARED_DIR) + "/fixtures/models/";

TEST(Yolo9FixtureTest, ReproducesLibreYoloEvalPredictions) {
  torch::set_num_threads(2);
  const absl::StatusOr<Checkpoint> checkpoint = ReadCheckpoint(kModels + "libreyolo9t_seed1234.pt");
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status();
  std::map<std::string, torch::Tensor> tensors;
  for (const auto& [name, tensor] : checkpoint->tensors) tensors[name] = ToTorch(tensor);

  Yolo9 model(Yolo9Options{"t", 80});
  const absl::Status loaded = LoadStateDict(model, tensors);
  ASSERT_TRUE(loaded.ok()) << loaded;
  EXPECT_EQ(CountParameters(model), 2036544);
  model->eval();

  const model_testing::Npy input = model_testing::ReadNpy(kModels + "input_2x3x320x320.npy");
  const model_testing::Npy expected =
      model_testing::ReadNpy(kModels + "libreyolo9t_eval_predictions.npy");
  ASSERT_TRUE(input.tensor.defined()) << input.error;
  ASSERT_TRUE(expected.tensor.defined()) << expected.error;
  ASSERT_EQ(expected.tensor.sizes(), torch::IntArrayRef({2, 84, 2100}));

  torch::NoGradGuard no_grad;
  const torch::Tensor got = model->predict(input.tensor);
  ASSERT_EQ(got.sizes(), expected.tensor.sizes());

  const torch::Tensor box_error = (got.slice(1, 0, 4) - expected.tensor.slice(1, 0, 4)).abs();
  const torch::Tensor want_scores = expected.tensor.slice(1, 4);
  const torch::Tensor score_error =
      (got.slice(1, 4) - want_scores).abs() / want_scores.abs().clamp_min(1e-30);
  const double max_box = box_error.max().item<double>();
  const double max_score = score_error.max().item<double>();
  std::printf("max abs box error %.3g px, max relative score error %.3g\n", max_box, max_score);
  EXPECT_LE(max_box, 1e-2);
  EXPECT_LE(max_score, 1e-3);
  // The comparison is not vacuous: the perturbed weights spread scores over decades and boxes
  // over hundreds of pixels.
  EXPECT_GT((want_scores.max() / want_scores.min()).item<float>(), 100.0F);
  EXPECT_GT(expected.tensor.slice(1, 0, 4).std().item<float>(), 10.0F);
}

}  // namespace
}  // namespace libreyolo::engine
