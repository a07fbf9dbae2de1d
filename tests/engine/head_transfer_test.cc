// Fine-tuning a checkpoint on a dataset of other classes, against the Python LibreYOLO on the
// same pair: the shared 80-class LibreYOLO9t fixture and a 2-class YOLO-format dataset written
// here. python_head_transfer.py runs the Python tool's own train() up to its trainer and says
// which tensors it kept, reset and re-initialised, with the values of the latter two; ours
// must be the same tensors, shapes and values. It also saves the model train() left, which
// inference must load as it is (2 classes on 80-wide towers, with Python's PGI branch).
#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <stdio.h>
#include <sys/wait.h>
#include <torch/torch.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/engine/job/model_loader.h"
#include "tests/engine/data/test_util.h"
#include "tests/support/json_command.h"

namespace libreyolo::engine {

// Beside TensorShape (argument-dependent lookup), for EXPECT_EQ on lists of them.
bool operator==(const TensorShape& a, const TensorShape& b) {
  return a.name == b.name && a.shape == b.shape;
}

void PrintTo(const TensorShape& t, std::ostream* os) {
  *os << t.name << " [" << absl::StrJoin(t.shape, ", ") << "]";
}

namespace {

namespace fs = std::filesystem;

const std::string kWeights =
    std::string(LIBREYOLO_SHARED_DIR) + "/fixtures/models/libreyolo9t_seed1234.pt";
const std::string kScript =
    std::string(LIBREYOLO_SOURCE_DIR) + "/tests/engine/python_head_transfer.py";

// One Python run for the whole suite (it imports torch and the Python LibreYOLO: seconds).
struct PythonView {
  std::unique_ptr<test::TempDir> dir;
  std::string saved;  // the model as Python's train() left it, saved by the tool
  rapidjson::Document json;
  std::string error;  // why there is no view
};

void RunPython(PythonView* v) {
  v->dir = std::make_unique<test::TempDir>("headxfer");
  const std::string yaml = testing::WriteTinyDataset(v->dir->path() + "/own", 4, 2);
  // A user's YAML names its classes (without names, Python keeps the checkpoint's 80 and its
  // save() then refuses them for nc 2).
  std::ofstream(yaml, std::ios::app) << "names: [cat, dog]\n";
  v->saved = v->dir->path() + "/python_finetune_start.pt";
  const std::string command = absl::StrCat("'", LIBREYOLO_PYTHON, "' '", kScript, "' '", kWeights,
                                           "' '", yaml, "' '", v->saved, "'");
  v->error = test::RunJsonCommand(command, &v->json);
}

PythonView& Python() {
  static PythonView view;
  static const bool ran = (RunPython(&view), true);
  (void)ran;
  return view;
}

std::vector<TensorShape> Listed(const rapidjson::Value& list) {
  std::vector<TensorShape> out;
  for (const auto& item : list.GetArray()) {
    TensorShape t{item["name"].GetString(), {}};
    for (const auto& d : item["shape"].GetArray()) t.shape.push_back(d.GetInt64());
    out.push_back(std::move(t));
  }
  return out;
}

std::map<std::string, torch::Tensor> Tensors(Yolo9& model) {
  std::map<std::string, torch::Tensor> out;
  for (const auto& p : model->named_parameters()) out.emplace(p.key(), p.value());
  for (const auto& b : model->named_buffers()) out.emplace(b.key(), b.value());
  return out;
}

class HeadTransfer : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(kWeights)) GTEST_SKIP() << "no fixture at " << kWeights;
    ASSERT_TRUE(Python().error.empty()) << Python().error;
  }
  const rapidjson::Document& json() { return Python().json; }
};

TEST_F(HeadTransfer, TheSameTensorsAreKeptResetAndReinitialisedAsByPython) {
  EXPECT_EQ(json()["checkpoint_nc"].GetInt64(), 80);
  EXPECT_EQ(json()["dataset_nc"].GetInt64(), 2);
  auto ours = LoadModel(kWeights, "t", 2);
  ASSERT_TRUE(ours.ok()) << ours.status();
  ASSERT_TRUE(ours->head_reinitialised.has_value());
  const HeadReinit& h = *ours->head_reinitialised;
  EXPECT_EQ(h.reinitialised, Listed(json()["reinitialised"]));
  EXPECT_EQ(h.reset, Listed(json()["reset"]));
  // Kept: every other tensor of ours, by name and shape, is one Python kept.
  std::set<std::string> changed;
  for (const auto* list : {&h.reinitialised, &h.reset}) {
    for (const TensorShape& t : *list) changed.insert(t.name);
  }
  std::vector<TensorShape> kept;
  for (const auto& [name, t] : Tensors(ours->model)) {
    if (changed.count(name) == 0) kept.push_back({name, t.sizes().vec()});
  }
  std::vector<TensorShape> python_kept = Listed(json()["kept"]);
  auto by_name = [](const TensorShape& a, const TensorShape& b) { return a.name < b.name; };
  std::sort(python_kept.begin(), python_kept.end(), by_name);
  EXPECT_EQ(kept, python_kept);
  EXPECT_EQ(h.kept, static_cast<int64_t>(python_kept.size()));
  // Python's training-only PGI branch is built from scratch there; this engine has none.
  EXPECT_GT(json()["training_only"].Size(), 0u);
}

TEST_F(HeadTransfer, TheNewHeadHasPythonsValuesBitForBit) {
  auto ours = LoadModel(kWeights, "t", 2);
  ASSERT_TRUE(ours.ok()) << ours.status();
  const auto tensors = Tensors(ours->model);
  const auto& values = json()["values"];
  ASSERT_EQ(values.MemberCount(), 9u);
  for (const auto& m : values.GetObject()) {
    const torch::Tensor t = tensors.at(m.name.GetString()).flatten().contiguous();
    ASSERT_EQ(t.numel(), static_cast<int64_t>(m.value.Size())) << m.name.GetString();
    const float* data = t.data_ptr<float>();
    int64_t differ = 0;
    for (rapidjson::SizeType i = 0; i < m.value.Size(); ++i) {
      differ += data[i] != static_cast<float>(m.value[i].GetDouble());
    }
    EXPECT_EQ(differ, 0) << m.name.GetString() << ": " << differ << " of " << t.numel()
                         << " values differ from Python's";
  }
}

TEST_F(HeadTransfer, PythonsFineTuneStartLoadsAsItIsForInference) {
  // 2 classes on COCO-width (80) towers, plus aux.* / aux_head.* tensors.
  auto infer = LoadModel(Python().saved, "t", 0);
  ASSERT_TRUE(infer.ok()) << infer.status();
  EXPECT_EQ(infer->num_classes, 2);
  EXPECT_EQ(infer->model->head()->class_hidden(), 80);
  EXPECT_FALSE(infer->head_reinitialised.has_value());
  EXPECT_EQ(infer->class_names.size(), 2u);
  auto start = LoadModel(kWeights, "t", 2);
  ASSERT_TRUE(start.ok());
  const auto a = Tensors(infer->model);
  const auto b = Tensors(start->model);
  for (const auto& [name, t] : a) EXPECT_TRUE(torch::equal(t, b.at(name))) << name;
  // Training it on its own 2 classes loads it as it is; on 80 again re-initialises.
  auto same = LoadModel(Python().saved, "t", 2);
  ASSERT_TRUE(same.ok()) << same.status();
  EXPECT_FALSE(same->head_reinitialised.has_value());
  auto back = LoadModel(Python().saved, "t", 80);
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_TRUE(back->head_reinitialised.has_value());
  EXPECT_EQ(back->head_reinitialised->reinitialised.front().shape,
            (std::vector<int64_t>{80, 80, 1, 1}));
}

}  // namespace
}  // namespace libreyolo::engine
