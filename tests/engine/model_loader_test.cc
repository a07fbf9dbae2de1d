// The model loader: its checkpoint cache (the daemon's jobs reuse a parsed checkpoint while the
// file is unchanged, and read it again once it is rewritten), a checkpoint of another size, and
// one of other classes than the training dataset's (the class head re-initialised; the Python
// LibreYOLO's view of the same pair is head_transfer_test.cc).
#include "server/engine/job/model_loader.h"

#include <torch/torch.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace libreyolo::engine {
namespace {

namespace fs = std::filesystem;

const std::string kWeights =
    std::string(LIBREYOLO_SHARED_DIR) + "/fixtures/models/libreyolo9t_seed1234.pt";

TEST(ModelLoaderCache, ReusesAnUnchangedCheckpointAndRereadsARewrittenOne) {
  if (!fs::exists(kWeights)) GTEST_SKIP() << "no fixture at " << kWeights;
  const fs::path copy =
      fs::temp_directory_path() / ("ml-cache-" + std::to_string(::getpid()) + ".pt");
  fs::copy_file(kWeights, copy, fs::copy_options::overwrite_existing);
  auto first = LoadModel(copy.string(), "t", 0);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_FALSE(first->from_cache);
  auto second = LoadModel(copy.string(), "t", 0);
  ASSERT_TRUE(second.ok());
  EXPECT_TRUE(second->from_cache);
  // Same weights either way.
  const auto a = first->model->named_parameters();
  const auto b = second->model->named_parameters();
  ASSERT_EQ(a.size(), b.size());
  for (const auto& p : a) EXPECT_TRUE(torch::equal(p.value(), b[p.key()])) << p.key();
  // A rewritten file (new modification time) is parsed again.
  fs::last_write_time(copy, fs::last_write_time(copy) + std::chrono::seconds(5));
  auto third = LoadModel(copy.string(), "t", 0);
  ASSERT_TRUE(third.ok());
  EXPECT_FALSE(third->from_cache);
  // A file that turned into garbage fails, naming the problem, even after a cached read.
  { std::ofstream(copy, std::ios::trunc) << "not a checkpoint"; }
  auto broken = LoadModel(copy.string(), "t", 0);
  EXPECT_FALSE(broken.ok());
  fs::remove(copy);
}

TEST(ModelLoaderSize, ACheckpointOfAnotherSizeSaysWhatItIsNotEveryTensor) {
  if (!fs::exists(kWeights)) GTEST_SKIP() << "no fixture at " << kWeights;
  for (int64_t classes : {int64_t{0}, int64_t{2}}) {
    auto r = LoadModel(kWeights, "s", classes);
    ASSERT_TRUE(absl::IsInvalidArgument(r.status())) << r.status();
    const std::string m(r.status().message());
    EXPECT_NE(m.find("this checkpoint is LibreYOLO9t (size t)"), std::string::npos) << m;
    EXPECT_NE(m.find("run with --size t"), std::string::npos) << m;
    EXPECT_EQ(m.find("mis-shaped"), std::string::npos) << m;
    EXPECT_LT(m.size(), 300u) << m;
  }
}

// Every tensor of the model, by name.
std::map<std::string, torch::Tensor> Tensors(Yolo9& model) {
  std::map<std::string, torch::Tensor> out;
  for (const auto& p : model->named_parameters()) out.emplace(p.key(), p.value());
  for (const auto& b : model->named_buffers()) out.emplace(b.key(), b.value());
  return out;
}

TEST(ModelLoaderClasses, InferenceAndAFittingDatasetLoadTheCheckpointAsItIs) {
  if (!fs::exists(kWeights)) GTEST_SKIP() << "no fixture at " << kWeights;
  for (int64_t classes : {int64_t{0}, int64_t{80}}) {
    auto r = LoadModel(kWeights, "t", classes);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->num_classes, 80);
    EXPECT_FALSE(r->head_reinitialised.has_value());
    EXPECT_EQ(r->class_names.size(), 80u);
    EXPECT_TRUE(r->notice.empty()) << r->notice;
  }
}

TEST(ModelLoaderClasses, AnotherDatasetReinitialisesOnlyTheClassPredictorsDeterministically) {
  if (!fs::exists(kWeights)) GTEST_SKIP() << "no fixture at " << kWeights;
  auto r = LoadModel(kWeights, "t", 2);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->num_classes, 2);
  EXPECT_TRUE(r->class_names.empty());  // the checkpoint's 80 names are not the dataset's
  ASSERT_TRUE(r->head_reinitialised.has_value());
  const HeadReinit& h = *r->head_reinitialised;
  EXPECT_EQ(h.from_classes, 80);
  EXPECT_EQ(h.to_classes, 2);
  EXPECT_EQ(h.class_hidden, 80);  // the towers keep the checkpoint's width (a fresh build: 64)
  std::vector<std::string> names;
  for (const TensorShape& t : h.reinitialised) {
    names.push_back(t.name);
    EXPECT_EQ(t.shape, t.name.ends_with("weight") ? std::vector<int64_t>({2, 80, 1, 1})
                                                  : std::vector<int64_t>({2}))
        << t.name;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"head.cv3.0.2.weight", "head.cv3.0.2.bias",
                                             "head.cv3.1.2.weight", "head.cv3.1.2.bias",
                                             "head.cv3.2.2.weight", "head.cv3.2.2.bias"}));
  names.clear();
  for (const TensorShape& t : h.reset) names.push_back(t.name);
  EXPECT_EQ(names, (std::vector<std::string>{"head.cv2.0.2.bias", "head.cv2.1.2.bias",
                                             "head.cv2.2.2.bias"}));
  auto tensors = Tensors(r->model);
  EXPECT_EQ(h.kept + 9, static_cast<int64_t>(tensors.size()));
  EXPECT_TRUE(torch::all(tensors.at("head.cv3.1.2.bias") == -10).item<bool>());
  EXPECT_TRUE(torch::all(tensors.at("head.cv2.1.2.bias") == 1).item<bool>());
  EXPECT_NE(r->notice.find("80 classes, the dataset 2"), std::string::npos) << r->notice;
  // The same head again, whatever the global generator did in between (a private one draws).
  torch::manual_seed(7);
  auto again = LoadModel(kWeights, "t", 2);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(torch::equal(Tensors(again->model).at("head.cv3.2.2.weight"),
                           tensors.at("head.cv3.2.2.weight")));
  // It trains: the raw maps carry 64 box + 2 class channels.
  const auto raw = r->model->forward_raw(torch::rand({1, 3, 64, 64}));
  EXPECT_EQ(raw[0].size(1), 64 + 2);
}

}  // namespace
}  // namespace libreyolo::engine
