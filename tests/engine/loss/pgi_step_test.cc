// One LibreYOLO9 training step with the PGI auxiliary branch, against the Python LibreYOLO's
// on the same checkpoint, input and targets (python_pgi_step.py, run here: the shared fixture,
// whose checkpoint holds no aux.* tensors, so the branch is a fresh init after
// torch.manual_seed(0) on both sides). The branch must be drawn as Python draws it, and the main,
// auxiliary and combined losses and every parameter's gradient (both heads, both necks, the
// shared backbone) must equal Python's within fixture_loss_test's bounds.
#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <stdio.h>
#include <sys/wait.h>
#include <torch/torch.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "server/engine/checkpoint/checkpoint.h"
#include "server/engine/loss/yolo9_loss.h"
#include "server/engine/model/yolo9.h"
#include "server/engine/train/trainer.h"
#include "tests/engine/loss/npy_reader.h"
#include "tests/support/json_command.h"

namespace libreyolo::engine {
namespace {

namespace fs = std::filesystem;

const std::string kDir = std::string(LIBREYOLO_SHARED_DIR) + "/fixtures/models/";
const std::string kScript =
    std::string(LIBREYOLO_SOURCE_DIR) + "/tests/engine/loss/python_pgi_step.py";

struct PythonStep {
  std::string dir;
  rapidjson::Document json;
  std::string error;
  ~PythonStep() {
    std::error_code ec;
    if (!dir.empty()) fs::remove_all(dir, ec);
  }
};

void RunPython(PythonStep* v) {
  v->dir = (fs::temp_directory_path() / absl::StrCat("pgi_step.", ::getpid())).string();
  fs::create_directories(v->dir);
  const std::string command = absl::StrCat("'", LIBREYOLO_PYTHON, "' '", kScript, "' '",
                                           LIBREYOLO_SHARED_DIR, "' '", v->dir, "'");
  v->error = test::RunJsonCommand(command, &v->json);
}

PythonStep& Python() {
  static PythonStep step;
  static const bool ran = (RunPython(&step), true);
  (void)ran;
  return step;
}

std::map<std::string, torch::Tensor> ReadTensors(const std::string& path) {
  std::map<std::string, torch::Tensor> out;
  const auto checkpoint = ReadCheckpoint(path);
  EXPECT_TRUE(checkpoint.ok()) << checkpoint.status();
  if (checkpoint.ok()) {
    for (const auto& [name, tensor] : checkpoint->tensors) out[name] = ToTorch(tensor);
  }
  return out;
}

// The fixture checkpoint with the branch attached as Python's train() attaches it.
Yolo9 FixtureModelWithAux(double weight) {
  Yolo9 model(Yolo9Options{.size = "t", .num_classes = 80});
  const absl::Status loaded =
      LoadStateDict(model, ReadTensors(kDir + "libreyolo9t_seed1234.pt"));
  EXPECT_TRUE(loaded.ok()) << loaded;
  torch::manual_seed(0);
  model->EnableAux(weight);
  model->train();
  return model;
}

double Rel(const torch::Tensor& got, double want) {
  return std::abs(got.item<double>() - want) / std::abs(want);
}

class PgiStep : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(kDir + "libreyolo9t_seed1234.pt")) GTEST_SKIP() << "no fixture in " << kDir;
    ASSERT_TRUE(Python().error.empty()) << Python().error;
    at::set_num_threads(1);
  }
  const rapidjson::Document& json() { return Python().json; }
};

TEST_F(PgiStep, TheBranchHasPythonsTensorsAndIsDrawnAsPythonDrawsIt) {
  Yolo9 model = FixtureModelWithAux(0.25);
  const auto python = ReadTensors(Python().dir + "/aux_init.pt");
  ASSERT_EQ(static_cast<int64_t>(python.size()), json()["aux_tensors"].GetInt64());
  std::map<std::string, torch::Tensor> ours;
  for (const auto& p : model->named_parameters()) {
    if (IsAuxKey(p.key())) ours.emplace(p.key(), p.value());
  }
  for (const auto& b : model->named_buffers()) {
    if (IsAuxKey(b.key())) ours.emplace(b.key(), b.value());
  }
  ASSERT_EQ(ours.size(), python.size());
  int64_t differ = 0;
  for (const auto& [name, tensor] : python) {
    const auto it = ours.find(name);
    ASSERT_NE(it, ours.end()) << name << " is Python's, not ours";
    ASSERT_EQ(it->second.sizes(), tensor.sizes()) << name;
    if (!torch::equal(it->second.to(tensor.scalar_type()), tensor)) {
      ADD_FAILURE() << name << " is not drawn as Python draws it";
      if (++differ > 5) break;
    }
  }
  // And the checkpoint's own branch tensors load into it, every one.
  EXPECT_EQ(LoadAuxTensors(model, python), static_cast<int64_t>(python.size()));
}

TEST_F(PgiStep, LossesAndGradientsEqualThePythonLibreYolos) {
  const double weight = json()["aux_weight"].GetDouble();
  EXPECT_EQ(weight, 0.25);
  Yolo9 model = FixtureModelWithAux(weight);
  // The branch as Python had it, whether or not the draws above matched.
  ASSERT_EQ(LoadAuxTensors(model, ReadTensors(Python().dir + "/aux_init.pt")),
            json()["aux_tensors"].GetInt64());
  const torch::Tensor input = testing::ReadNpyFloat32(kDir + "input_2x3x320x320.npy");
  const torch::Tensor targets = testing::ReadNpyFloat32(kDir + "targets_2x3x5.npy");

  const Yolo9Impl::TrainMaps maps = model->forward_train(input);
  ASSERT_EQ(maps.aux.size(), 3u);
  const Yolo9Loss main = ComputeYolo9Loss(maps.main, targets, 320);
  const Yolo9Loss aux = ComputeYolo9Loss(maps.aux, targets, 320);
  const Yolo9Loss combined = CombineAuxLoss(main, aux, weight);
  const rapidjson::Value& losses = json()["losses"];
  for (const auto& [part, loss] :
       {std::pair{"main", &main}, std::pair{"aux", &aux}, std::pair{"combined", &combined}}) {
    const rapidjson::Value& want = losses[part];
    std::printf("%s: total %.6f (Python %.6f) box %.6f dfl %.6f cls %.6f\n", part,
                loss->total.item<double>(), want["total_loss"].GetDouble(),
                loss->box.item<double>(), loss->dfl.item<double>(), loss->cls.item<double>());
    EXPECT_LT(Rel(loss->total, want["total_loss"].GetDouble()), 1e-4) << part;
    EXPECT_LT(Rel(loss->box, want["box_loss"].GetDouble()), 1e-4) << part;
    EXPECT_LT(Rel(loss->dfl, want["dfl_loss"].GetDouble()), 1e-4) << part;
    EXPECT_LT(Rel(loss->cls, want["cls_loss"].GetDouble()), 1e-4) << part;
  }
  // The trainer's own path (one forward_train, the combination at the model's weight).
  const Yolo9Loss trained = TrainingLoss(model, input, targets, 320, {}, /*amp=*/false);
  EXPECT_LT(Rel(trained.total, losses["combined"]["total_loss"].GetDouble()), 1e-4);
  trained.total.backward();

  // fixture_loss_test's bounds: relative 1e-3 of the tensor's gradient norm plus 1e-5 of the
  // global norm; float32 sums in another order move a gradient by ~1e-6 of its size.
  const rapidjson::Value& params = json()["params"];
  const double global = json()["global_norm"].GetDouble();
  int64_t compared = 0, compared_aux = 0;
  double worst = 0;
  std::string worst_name;
  for (const auto& p : model->named_parameters()) {
    const auto it = params.FindMember(p.key().c_str());
    ASSERT_NE(it, params.MemberEnd()) << p.key() << " has no Python gradient";
    ASSERT_TRUE(p.value().grad().defined()) << p.key();
    const torch::Tensor g = p.value().grad().to(torch::kFloat64);
    const torch::Tensor v = p.value().detach().to(torch::kFloat64);
    const double norm = g.norm().item<double>();
    const double dot = (g * v).sum().item<double>();
    const double want_norm = it->value["norm"].GetDouble();
    const double want_dot = it->value["dot_param"].GetDouble();
    const double norm_bound = 1e-3 * want_norm + 1e-5 * global;
    const double dot_bound = 1e-3 * std::abs(want_dot) + 1e-5 * global * v.norm().item<double>();
    EXPECT_NEAR(norm, want_norm, norm_bound) << p.key();
    EXPECT_NEAR(dot, want_dot, dot_bound) << p.key();
    if (std::abs(norm - want_norm) / norm_bound > worst) {
      worst = std::abs(norm - want_norm) / norm_bound;
      worst_name = p.key();
    }
    ++compared;
    compared_aux += IsAuxKey(p.key());
  }
  EXPECT_EQ(compared, static_cast<int64_t>(params.MemberCount()));
  EXPECT_GT(compared_aux, 0);
  std::printf("%lld gradients compared (%lld of the PGI branch); the worst used %.2e of its "
              "bound (%s)\n",
              static_cast<long long>(compared), static_cast<long long>(compared_aux), worst,
              worst_name.c_str());
}

// No Python run needed: libreyolo9t_meta.json's train_loss is the main head's alone.
TEST(PgiStepTest, WithoutTheBranchTheStepIsTheMainHeadsAlone) {
  if (!fs::exists(kDir + "libreyolo9t_seed1234.pt")) GTEST_SKIP() << "no fixture in " << kDir;
  at::set_num_threads(1);
  Yolo9 model = FixtureModelWithAux(0.25);
  model->DisableAux();
  EXPECT_FALSE(model->has_aux());
  for (const auto& p : model->named_parameters()) EXPECT_FALSE(IsAuxKey(p.key())) << p.key();
  const torch::Tensor input = testing::ReadNpyFloat32(kDir + "input_2x3x320x320.npy");
  const torch::Tensor targets = testing::ReadNpyFloat32(kDir + "targets_2x3x5.npy");
  const Yolo9Loss loss = TrainingLoss(model, input, targets, 320, {}, /*amp=*/false);
  EXPECT_LT(Rel(loss.total, 14.231006622314453), 1e-4);
}

}  // namespace
}  // namespace libreyolo::engine
