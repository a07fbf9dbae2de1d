// The reference's own numbers: LibreYOLO9-t with the fixture weights, in train mode (BatchNorm
// on batch statistics), on the fixture input and targets, must give the training losses that
// the public Python LibreYOLO recorded in libreyolo9t_meta.json, and the gradients its trainer
// back-propagates (tests/fixtures/reference/libreyolo9t_fixture_grads.json, written by
// make_fixture_grads.py beside this file with the Python LibreYOLO 1.6.0).
#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
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

Yolo9 FixtureModel() {
  const auto checkpoint = ReadCheckpoint(kDir + "libreyolo9t_seed1234.pt");
  EXPECT_TRUE(checkpoint.ok()) << checkpoint.status();
  std::map<std::string, torch::Tensor> tensors;
  if (checkpoint.ok()) {
    for (const auto& [name, tensor] : checkpoint->tensors) tensors[name] = ToTorch(tensor);
  }
  Yolo9 model(Yolo9Options{.size = "t", .num_classes = 80});
  const absl::Status loaded = LoadStateDict(model, tensors);
  EXPECT_TRUE(loaded.ok()) << loaded;
  model->train();
  return model;
}

TEST(FixtureLossTest, ReproducesTheReferenceTrainingLosses) {
  at::set_num_threads(2);
  Yolo9 model = FixtureModel();

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

// One step's gradients, parameter by parameter, against the Python LibreYOLO's. Float32 sums
// in another order (other CPU kernels, other thread counts) move a gradient by ~1e-6 of its
// size; a wrong term in the loss or a missing path through the model moves it by far more than
// the bounds below (relative 1e-3 of the tensor's norm, plus 1e-5 of the global norm for the
// tensors whose gradient is nearly zero).
TEST(FixtureLossTest, GradientsEqualThePythonLibreYolos) {
  at::set_num_threads(1);
  std::ifstream in(std::string(LIBREYOLO_FIXTURES_DIR) +
                   "/reference/libreyolo9t_fixture_grads.json");
  ASSERT_TRUE(in) << "tests/fixtures/reference/libreyolo9t_fixture_grads.json";
  std::stringstream text;
  text << in.rdbuf();
  rapidjson::Document ref;
  ref.Parse(text.str().c_str());
  ASSERT_TRUE(ref.IsObject() && ref.HasMember("params"));
  const double global = ref["global_norm"].GetDouble();

  Yolo9 model = FixtureModel();
  const torch::Tensor input = testing::ReadNpyFloat32(kDir + "input_2x3x320x320.npy");
  const torch::Tensor targets = testing::ReadNpyFloat32(kDir + "targets_2x3x5.npy");
  const Yolo9Loss loss = ComputeYolo9Loss(model->forward_raw(input), targets, 320);
  EXPECT_LT(Rel(loss.total, ref["losses"]["total_loss"].GetDouble()), 1e-4);
  loss.total.backward();

  const rapidjson::Value& params = ref["params"];
  int64_t compared = 0;
  double worst = 0;
  std::string worst_name;
  for (const auto& p : model->named_parameters()) {
    const auto it = params.FindMember(p.key().c_str());
    ASSERT_NE(it, params.MemberEnd()) << p.key() << " has no reference gradient";
    ASSERT_TRUE(p.value().grad().defined()) << p.key();
    const torch::Tensor g = p.value().grad().to(torch::kFloat64);
    const double norm = g.norm().item<double>();
    const double dot = (g * p.value().detach().to(torch::kFloat64)).sum().item<double>();
    const double want_norm = it->value["norm"].GetDouble();
    const double want_dot = it->value["dot_param"].GetDouble();
    const double norm_bound = 1e-3 * want_norm + 1e-5 * global;
    const double dot_bound =
        1e-3 * std::abs(want_dot) +
        1e-5 * global * p.value().detach().to(torch::kFloat64).norm().item<double>();
    EXPECT_NEAR(norm, want_norm, norm_bound) << p.key();
    EXPECT_NEAR(dot, want_dot, dot_bound) << p.key();
    const double err = std::abs(norm - want_norm) / norm_bound;
    if (err > worst) {
      worst = err;
      worst_name = p.key();
    }
    ++compared;
  }
  EXPECT_EQ(compared, static_cast<int64_t>(params.MemberCount()));
  std::printf("%lld gradients compared; the worst used %.2e of its bound (%s)\n",
              static_cast<long long>(compared), worst, worst_name.c_str());
}

}  // namespace
}  // namespace libreyolo::engine
