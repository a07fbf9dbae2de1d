// `profile run own.yaml --weights <80-class LibreYOLO9t>` on the user's own 2-class dataset: the
// training job loads the checkpoint with its class head re-initialised for the dataset, as the
// Python LibreYOLO's train() does (head_transfer_test.cc compares the tensors), and the profile
// and its summary say so. A checkpoint of another size than --size says what it is.
#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <filesystem>
#include <string>
#include <vector>

#include "common/load/load_profile.h"
#include "common/readers/summary_view.h"
#include "server/engine/engine.h"
#include "tests/engine/data/test_util.h"

namespace libreyolo::engine {
namespace {

namespace fs = std::filesystem;

const std::string kWeights =
    std::string(LIBREYOLO_SHARED_DIR) + "/fixtures/models/libreyolo9t_seed1234.pt";

class FinetuneJob : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(kWeights)) GTEST_SKIP() << "no fixture at " << kWeights;
    spec_.data = testing::WriteTinyDataset(dir_.path() + "/own", 4, 2);
    spec_.model.weights = kWeights;
    spec_.model.size = "t";
    spec_.model.device = "cpu";
    spec_.model.threads = 1;
    spec_.imgsz = 64;
    spec_.batch = 2;
    spec_.warmup = 1;
    spec_.steps = 1;
    spec_.workers = 0;
    // Cheap: every switch off, so one probe (the overhead) and no switch cost to measure.
    spec_.profiler.record_shapes = spec_.profiler.profile_memory = spec_.profiler.with_flops =
        false;
    spec_.profiler.with_modules = false;
    spec_.profiler.overhead_budget_pct = 1000;
    spec_.project = dir_.path() + "/runs";
  }

  test::TempDir dir_{"finetune"};
  TrainJobSpec spec_;
};

TEST_F(FinetuneJob, AnEightyClassCheckpointTrainsOnTwoClassesAndTheProfileSaysSo) {
  std::vector<std::string> notices;
  auto r = RunTrainJob(
      spec_,
      [&](const JobProgress& p) {
        if (p.stage == "loading model" && !p.message.empty()) notices.push_back(p.message);
      },
      nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_NE(notices[0].find("has 80 classes, the dataset 2"), std::string::npos) << notices[0];

  auto p = LoadProfile(r->profile_path);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->model, kWeights);
  rapidjson::Document config;
  config.Parse(p->config_json.c_str());
  ASSERT_TRUE(config.IsObject()) << p->config_json;
  ASSERT_TRUE(config.HasMember("head_reinitialised")) << p->config_json;
  const auto& h = config["head_reinitialised"];
  EXPECT_EQ(h["from_classes"].GetInt64(), 80);
  EXPECT_EQ(h["to_classes"].GetInt64(), 2);
  EXPECT_EQ(h["class_tower_width"].GetInt64(), 80);
  EXPECT_EQ(h["seed"].GetInt64(), 0);
  ASSERT_EQ(h["reinitialised"].Size(), 6u);
  EXPECT_STREQ(h["reinitialised"][0]["name"].GetString(), "head.cv3.0.2.weight");
  EXPECT_EQ(h["reinitialised"][0]["shape"].Size(), 4u);
  EXPECT_EQ(h["reinitialised"][0]["shape"][0].GetInt64(), 2);
  EXPECT_EQ(h["reset"].Size(), 3u);
  EXPECT_GT(h["kept"].GetInt64(), 1000);
  // The run trained: a finite loss on the dataset's two classes.
  EXPECT_TRUE(config["loss_first"].IsNumber());

  const std::string summary = RenderSummaryText(BuildSummary(*p, r->profile_path));
  EXPECT_NE(summary.find("class head"), std::string::npos) << summary;
  EXPECT_NE(summary.find("re-initialised from 80 to 2 classes (6 tensors new"), std::string::npos)
      << summary;
}

TEST_F(FinetuneJob, ACheckpointOfAnotherSizeSaysWhichSizeItIs) {
  spec_.model.size = "s";
  auto r = RunTrainJob(spec_, nullptr, nullptr);
  ASSERT_TRUE(absl::IsInvalidArgument(r.status())) << r.status();
  const std::string m(r.status().message());
  EXPECT_NE(m.find("this checkpoint is LibreYOLO9t (size t)"), std::string::npos) << m;
  EXPECT_EQ(m.find("head."), std::string::npos) << "lists tensors: " << m;
  EXPECT_FALSE(fs::exists(fs::path(spec_.project) / "prof" / "profile.json"));
}

}  // namespace
}  // namespace libreyolo::engine
