// The reference's own numbers: LibreYOLO9-t with the fixture weights, in train mode (BatchNorm
// on batch statistics), on the fixture input and targets, must give the training losses that
// the public Python LibreYOLO recorded in libreyolo9t_meta.json.
#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <string>

#include "server/engine/checkpoint/checkpoint.h"
#include "server/engine/loss/yolo9_loss.h"
#include "server/engine/model/yolo9.h"
#include "tests/engine/loss/npy_reader.h"

namespace libreyolo::engine {
namespace {

const std::string kDir = std::string(LIBREYOLO_SHARED_DIR) + "/fixtures/models/";

// libreyolo9t_meta.json "train_loss" (the box/dfl/cls parts already carry their gains).
constexpr double kTotal = 14.231006622314453;
constexpr double kBox = 2.6556243896484375;
constexpr double kDfl = 4.983954429626465;
constexpr double kCls = 6.591427803039551;

double Rel(const torch::Tensor& got, double want) {
  return std::abs(got.item<double>() - want) / std::abs(want);
}

TEST(FixtureLossTest, ReproducesTheReferenceTrainingLosses) {
  at::set_num_threads(2);
  const auto checkpoint = ReadCheckpoint(kDir + "libreyolo9t_seed1234.pt");
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status();
  std::map<std::string, torch::Tensor> tensors;
  for (const auto& [name, tensor] : checkpoint->tensors) tensors[name] = ToTorch(tensor);
  Yolo9 model(Yolo9Options{.size = "t", .num_classes = 80});
  const absl::Status loaded = LoadStateDict(model, tensors);
  ASSERT_TRUE(loaded.ok()) << loaded;
  model->train();

  const torch::Tensor input = testing::ReadNpyFloat32(kDir + "input_2x3x320x320.npy");
  const torch::Tensor targets = testing::ReadNpyFloat32(kDir + "targets_2x3x5.npy");
  ASSERT_EQ(input.sizes(), (std::vector<int64_t>{2, 3, 320, 320}));
  ASSERT_EQ(targets.sizes(), (std::vector<int64_t>{2, 3, 5}));

  const Yolo9Loss loss = ComputeYolo9Loss(model->forward_raw(input), targets, 320);
  std::printf("relative errors: total %.2e box %.2e dfl %.2e cls %.2e\n", Rel(loss.total, kTotal),
              Rel(loss.box, kBox), Rel(loss.dfl, kDfl), Rel(loss.cls, kCls));
  EXPECT_LT(Rel(loss.box, kBox), 1e-3) << loss.box.item<double>();
  EXPECT_LT(Rel(loss.dfl, kDfl), 1e-3) << loss.dfl.item<double>();
  EXPECT_LT(Rel(loss.cls, kCls), 1e-3) << loss.cls.item<double>();
  EXPECT_LT(Rel(loss.total, kTotal), 1e-3) << loss.total.item<double>();

  // And it trains: every parameter of the head receives a finite gradient.
  loss.total.backward();
  int64_t with_grad = 0;
  for (const auto& p : model->named_parameters()) {
    if (p.key().rfind("head.", 0) != 0) continue;
    ASSERT_TRUE(p.value().grad().defined()) << p.key();
    EXPECT_TRUE(torch::isfinite(p.value().grad()).all().item<bool>()) << p.key();
    ++with_grad;
  }
  EXPECT_GT(with_grad, 0);
}

}  // namespace
}  // namespace libreyolo::engine
