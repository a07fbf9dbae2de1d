// Issue 36 §6: `libreyolo profile run coco128` on this machine. A bare dataset name the private
// daemon's datasets directory lacks is looked up where the Python LibreYOLO looks (./NAME.yaml,
// then its built-in libreyolo/config/datasets/NAME.yaml, whose `path:` names a folder under its
// datasets directory); one that is not downloaded says so, with the command that downloads it.
// A fake install in a temp dir stands for the Python tool (<prefix>/bin/libreyolo,
// <prefix>/lib/python3.X/site-packages/libreyolo/config/datasets/).
#include "client/commands/dataset_name.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "tests/support/test_files.h"

namespace libreyolo::cli {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// The Python tool's own coco128.yaml, abridged (config/datasets/coco128.yaml of 1.6.0).
constexpr char kCoco128Yaml[] =
    "# COCO128 Dataset (128 images for quick testing)\n"
    "path: coco128\n"
    "train: images/train2017  # 128 images\n"
    "val: images/train2017\n"
    "nc: 80\n"
    "download: https://huggingface.co/datasets/LibreYOLO/coco128/resolve/main/coco128.zip\n";

class DatasetNameTest : public ::testing::Test {
 protected:
  void SetUp() override {
    places_.ours = dir_.File("ours");
    places_.python_datasets = dir_.File("datasets");
    places_.cwd = dir_.File("work");
    places_.python_cli = dir_.Write("py/bin/libreyolo", "#!/bin/sh\n");
    builtin_ = dir_.Write("py/lib/python3.11/site-packages/libreyolo/config/datasets/coco128.yaml",
                          kCoco128Yaml);
    fs::create_directories(places_.cwd);
  }
  libreyolo::test::TempDir dir_;
  DatasetPlaces places_;
  std::string builtin_;
};

TEST_F(DatasetNameTest, NotDownloadedSaysSoAndTheCommand) {
  const auto r = ResolveDatasetName("coco128", places_);
  ASSERT_EQ(r.status().code(), absl::StatusCode::kNotFound) << r.status();
  const std::string m(r.status().message());
  EXPECT_THAT(m, HasSubstr("dataset 'coco128' is not downloaded"));
  EXPECT_THAT(m, HasSubstr(builtin_));                                 // which YAML
  EXPECT_THAT(m, HasSubstr(places_.python_datasets + "/coco128"));     // where it belongs
  EXPECT_THAT(m, HasSubstr("`libreyolo doctor coco128 --download`"));  // the one command
  EXPECT_THAT(m, HasSubstr("libreyolo never downloads a dataset"));
  EXPECT_THAT(m, HasSubstr("'synthetic'"));
  // "coco128.yaml", as the Python tool also accepts it.
  EXPECT_THAT(std::string(ResolveDatasetName("coco128.yaml", places_).status().message()),
              HasSubstr("`libreyolo doctor coco128 --download`"));
  // An empty folder is not a download either.
  fs::create_directories(places_.python_datasets + "/coco128");
  EXPECT_EQ(ResolveDatasetName("coco128", places_).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(DatasetNameTest, DownloadedResolvesToThePythonToolsYaml) {
  dir_.Write("datasets/coco128/images/train2017/000000000009.jpg", "jpeg");
  const auto r = ResolveDatasetName("coco128", places_);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*r, builtin_);
  // Beside the YAML counts too (the Python tool's second place for a relative path).
  fs::remove_all(places_.python_datasets);
  dir_.Write("py/lib/python3.11/site-packages/libreyolo/config/datasets/coco128/images/a.jpg", "");
  EXPECT_EQ(*ResolveDatasetName("coco128", places_), builtin_);
}

TEST_F(DatasetNameTest, OursAndTheCurrentDirectoryComeFirst) {
  // The daemon's datasets directory holds it: sent as the name, the daemon resolves it.
  dir_.Write("ours/coco128/data.yaml", "train: images\nnc: 1\n");
  EXPECT_EQ(*ResolveDatasetName("coco128", places_), "coco128");
  fs::remove_all(places_.ours);
  // ./coco128.yaml, as the Python tool looks in the current directory first.
  const std::string here = dir_.Write("work/coco128.yaml", "train: images\nnc: 1\n");
  EXPECT_EQ(*ResolveDatasetName("coco128", places_), here);
}

TEST_F(DatasetNameTest, UnknownNamesAndPathsAreLeftToTheDaemon) {
  EXPECT_EQ(*ResolveDatasetName("mydata", places_), "mydata");  // no built-in YAML of that name
  EXPECT_EQ(*ResolveDatasetName("a/b.yaml", places_), "a/b.yaml");
  // No Python tool: not found, the places named, and how its datasets come.
  places_.python_cli.reset();
  const auto none = ResolveDatasetName("coco128", places_);
  ASSERT_EQ(none.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(none.status().message(), HasSubstr(places_.ours + "/coco128/data.yaml"));
  EXPECT_THAT(none.status().message(), HasSubstr(places_.cwd + "/coco128.yaml"));
  EXPECT_THAT(none.status().message(), HasSubstr("`libreyolo doctor coco128 --download`"));
  EXPECT_THAT(none.status().message(), HasSubstr("pip install libreyolo"));
}

}  // namespace
}  // namespace libreyolo::cli
