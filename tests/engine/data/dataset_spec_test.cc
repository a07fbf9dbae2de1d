#include "server/engine/data/dataset_spec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "server/engine/data/dataset.h"
#include "tests/engine/data/test_util.h"

namespace libreyolo::engine {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::TempDir;

TEST(DatasetYamlTest, ListNamesAndRelativeSplits) {
  auto spec = ParseDatasetYamlText(
      "path: /data/coco8\ntrain: images/train\nval: [images/val, extra/val.txt]\n"
      "names: [person, bicycle, car]\n",
      "/cfg/coco8.yaml", "/nonexistent");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->root, "/data/coco8");
  EXPECT_THAT(spec->train.sources, ElementsAre("/data/coco8/images/train"));
  EXPECT_THAT(spec->val.sources,
              ElementsAre("/data/coco8/images/val", "/data/coco8/extra/val.txt"));
  EXPECT_EQ(spec->train.origin, "/cfg/coco8.yaml:2");
  EXPECT_THAT(spec->names, ElementsAre("person", "bicycle", "car"));
  EXPECT_EQ(spec->nc(), 3);
  EXPECT_FALSE(spec->synthetic());
}

TEST(DatasetYamlTest, DictNamesFillGaps) {
  auto spec =
      ParseDatasetYamlText("train: images\nnames:\n  2: car\n  0: person\n", "/cfg/d.yaml", "");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_THAT(spec->names, ElementsAre("person", "class_1", "car"));
  // No `path`: relative to the YAML's folder.
  EXPECT_EQ(spec->root, "/cfg");
  EXPECT_THAT(spec->train.sources, ElementsAre("/cfg/images"));
}

TEST(DatasetYamlTest, NcOnly) {
  auto spec = ParseDatasetYamlText("train: images\nnc: 4\n", "/cfg/d.yaml", "");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->nc(), 4);
  EXPECT_EQ(spec->names[3], "class_3");
}

TEST(DatasetYamlTest, PathRelativeToDatasetsDirWhenThere) {
  TempDir datasets;
  std::filesystem::create_directories(datasets.path() + "/coco8");
  auto spec =
      ParseDatasetYamlText("path: coco8\ntrain: images\nnc: 1\n", "/cfg/d.yaml", datasets.path());
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->root, datasets.path() + "/coco8");
  // Not under the datasets dir: beside the YAML.
  spec = ParseDatasetYamlText("path: ../other\ntrain: images\nnc: 1\n", "/cfg/d.yaml",
                              datasets.path());
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->root, "/other");
}

TEST(DatasetYamlTest, MissingKeysAndBadValuesNameTheFileAndLine) {
  auto no_train = ParseDatasetYamlText("names: [a]\n", "/cfg/d.yaml", "");
  EXPECT_EQ(no_train.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(no_train.status().message(), HasSubstr("/cfg/d.yaml: missing 'train'"));

  auto no_names = ParseDatasetYamlText("train: images\n", "/cfg/d.yaml", "");
  EXPECT_THAT(no_names.status().message(), HasSubstr("missing 'names' (or 'nc')"));

  auto mismatch = ParseDatasetYamlText("train: images\nnames: [a, b]\nnc: 3\n", "/cfg/d.yaml", "");
  EXPECT_THAT(mismatch.status().message(), HasSubstr("/cfg/d.yaml:3: 'nc' is 3 but 'names'"));

  auto bad_id = ParseDatasetYamlText("train: images\nnames:\n  x: a\n", "/cfg/d.yaml", "");
  EXPECT_THAT(bad_id.status().message(), HasSubstr("/cfg/d.yaml:3: class id 'x'"));

  auto bad_nc = ParseDatasetYamlText("train: images\nnc: many\n", "/cfg/d.yaml", "");
  EXPECT_THAT(bad_nc.status().message(), HasSubstr("/cfg/d.yaml:2: 'nc' must be"));

  auto not_yaml = ParseDatasetYamlText("train: [a,\n", "/cfg/d.yaml", "");
  EXPECT_EQ(not_yaml.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(not_yaml.status().message(), HasSubstr("/cfg/d.yaml:"));
  EXPECT_THAT(not_yaml.status().message(), HasSubstr("not valid YAML"));

  auto not_map = ParseDatasetYamlText("- a\n- b\n", "/cfg/d.yaml", "");
  EXPECT_THAT(not_map.status().message(), HasSubstr("must be a mapping"));
}

TEST(DatasetResolveTest, FindsTheThreeLayouts) {
  TempDir dir;
  dir.Write("flat.yaml", "train: images\nnc: 1\n");
  dir.Write("nested/nested.yaml", "train: images\nnc: 2\n");
  dir.Write("coco8/data.yaml", "train: images\nnc: 3\n");
  auto flat = ResolveDataset("flat", dir.path());
  ASSERT_TRUE(flat.ok()) << flat.status();
  EXPECT_EQ(flat->yaml_path, dir.path() + "/flat.yaml");
  EXPECT_EQ(flat->name, "flat");
  auto nested = ResolveDataset("nested", dir.path());
  ASSERT_TRUE(nested.ok()) << nested.status();
  EXPECT_EQ(nested->nc(), 2);
  auto coco8 = ResolveDataset("coco8", dir.path());
  ASSERT_TRUE(coco8.ok()) << coco8.status();
  EXPECT_EQ(coco8->nc(), 3);
  EXPECT_EQ(coco8->root, dir.path() + "/coco8");
  // A dataset folder given directly.
  auto by_folder = ResolveDataset(dir.path() + "/coco8/", "/nonexistent");
  ASSERT_TRUE(by_folder.ok()) << by_folder.status();
  EXPECT_EQ(by_folder->yaml_path, dir.path() + "/coco8/data.yaml");
  auto nested_folder = ResolveDataset(dir.path() + "/nested", "/nonexistent");
  ASSERT_TRUE(nested_folder.ok()) << nested_folder.status();
  EXPECT_EQ(nested_folder->nc(), 2);
  // A path to a YAML works from anywhere.
  auto by_path = ResolveDataset(dir.path() + "/coco8/data.yaml", "/nonexistent");
  ASSERT_TRUE(by_path.ok()) << by_path.status();
  EXPECT_EQ(by_path->nc(), 3);
}

TEST(DatasetResolveTest, MissingDatasetSaysWhereToPutIt) {
  TempDir dir;
  auto missing = ResolveDataset("coco128", dir.path());
  ASSERT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  const std::string message(missing.status().message());
  EXPECT_THAT(message, HasSubstr("dataset 'coco128' not found"));
  EXPECT_THAT(message, HasSubstr(dir.path() + "/coco128.yaml"));
  EXPECT_THAT(message, HasSubstr(dir.path() + "/coco128/coco128.yaml"));
  EXPECT_THAT(message, HasSubstr(dir.path() + "/coco128/data.yaml"));
  EXPECT_THAT(message, HasSubstr("$LIBREYOLO_DATASETS"));
  EXPECT_THAT(message, HasSubstr("synthetic"));
  // Issue 20 section 6: offline, the Python tools' habit (coco128 fetched on first use) meets
  // a tool that never downloads, and is told so.
  EXPECT_THAT(message, HasSubstr("libreyolo never downloads a dataset"));

  auto missing_yaml = ResolveDataset("no/such/data.yaml", dir.path());
  EXPECT_EQ(missing_yaml.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing_yaml.status().message(), HasSubstr("'no/such/data.yaml' not found"));
}

TEST(DatasetResolveTest, DatasetsDirFromEnvironment) {
  const char* old = std::getenv("LIBREYOLO_DATASETS");
  const std::string saved = old ? old : "";
  ::setenv("LIBREYOLO_DATASETS", "/srv/datasets", 1);
  EXPECT_EQ(DefaultDatasetsDir(), "/srv/datasets");
  ::unsetenv("LIBREYOLO_DATASETS");
  const char* home = std::getenv("HOME");
  if (home != nullptr) {
    EXPECT_EQ(DefaultDatasetsDir(), std::string(home) + "/.cache/libreyolo/datasets");
  }
  if (old != nullptr) ::setenv("LIBREYOLO_DATASETS", saved.c_str(), 1);
}

// Issue 36 §6: the Python LibreYOLO's built-in YAMLs name `path: coco128`, a folder under its
// datasets directory ($LIBREYOLO_DATASETS_DIR, else ~/datasets): found there, after ours.
TEST(DatasetResolveTest, RelativePathUnderThePythonToolsDatasetsDir) {
  TempDir dir;
  const std::string python = dir.path() + "/python-datasets", ours = dir.path() + "/ours";
  std::filesystem::create_directories(python + "/coco128/images/train2017");
  std::filesystem::create_directories(dir.path() + "/package");
  const std::string yaml = dir.path() + "/package/coco128.yaml";
  std::ofstream(yaml) << "path: coco128\ntrain: images/train2017\nnc: 80\n";
  const char* old = std::getenv("LIBREYOLO_DATASETS_DIR");
  const std::string saved = old ? old : "";
  ::setenv("LIBREYOLO_DATASETS_DIR", python.c_str(), 1);
  EXPECT_EQ(PythonDatasetsDir(), python);
  auto spec = ParseDatasetYaml(yaml, ours);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->root, python + "/coco128");
  // Ours first, when it holds the folder too.
  std::filesystem::create_directories(ours + "/coco128");
  EXPECT_EQ(ParseDatasetYaml(yaml, ours)->root, ours + "/coco128");
  // Neither: beside the YAML, as before.
  std::filesystem::remove_all(python + "/coco128");
  std::filesystem::remove_all(ours + "/coco128");
  EXPECT_EQ(ParseDatasetYaml(yaml, ours)->root, dir.path() + "/package/coco128");
  ::unsetenv("LIBREYOLO_DATASETS_DIR");
  if (const char* home = std::getenv("HOME"); home != nullptr) {
    EXPECT_EQ(PythonDatasetsDir(), std::string(home) + "/datasets");
  }
  if (old != nullptr) ::setenv("LIBREYOLO_DATASETS_DIR", saved.c_str(), 1);
}

TEST(DatasetResolveTest, Synthetic) {
  auto plain = ResolveDataset("synthetic", "/nonexistent");
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_TRUE(plain->synthetic());
  EXPECT_EQ(plain->synthetic_count, kDefaultSyntheticCount);
  EXPECT_EQ(plain->nc(), 80);
  auto seven = ResolveDataset("synthetic:7", "/nonexistent");
  ASSERT_TRUE(seven.ok()) << seven.status();
  EXPECT_EQ(seven->synthetic_count, 7);
  for (const char* bad : {"synthetic:", "synthetic:0", "synthetic:x", "synthetic:-3"}) {
    auto status = ResolveDataset(bad, "/nonexistent").status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(status.message(), HasSubstr("positive integer")) << bad;
  }
  auto dataset = OpenDataset(*seven, Split::kTrain);
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  EXPECT_EQ((*dataset)->size(), 7);
}

TEST(OpenDatasetTest, TinyDatasetOnDisk) {
  TempDir dir;
  const std::string yaml = testing::WriteTinyDataset(dir.path(), 5);
  auto spec = ResolveDataset(yaml, "/nonexistent");
  ASSERT_TRUE(spec.ok()) << spec.status();
  auto dataset = OpenDataset(*spec, Split::kTrain);
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  ASSERT_EQ((*dataset)->size(), 5);
  auto sample = (*dataset)->Load(1);
  ASSERT_TRUE(sample.ok()) << sample.status();
  EXPECT_THAT(sample->path, HasSubstr("images/train/img1.png"));
  ASSERT_EQ(sample->boxes.size(), 2u);
  // Image 1 is 80x48; its first rectangle is [4, 4 + 26) x [6, 6 + 24).
  EXPECT_NEAR(sample->boxes[0].x1, 4, 1e-3);
  EXPECT_NEAR(sample->boxes[0].y1, 6, 1e-3);
  EXPECT_NEAR(sample->boxes[0].x2, 30, 1e-3);
  EXPECT_NEAR(sample->boxes[0].y2, 30, 1e-3);
  // A .txt list of images as the split.
  dir.Write("list.txt", "# two images\nimages/train/img0.png\n\nimages/train/img3.png\n");
  auto listed = ParseDatasetYamlText("train: list.txt\nnc: 3\n", dir.path() + "/d.yaml", "");
  ASSERT_TRUE(listed.ok()) << listed.status();
  auto listed_dataset = OpenDataset(*listed, Split::kVal);  // no val: falls back to train
  ASSERT_TRUE(listed_dataset.ok()) << listed_dataset.status();
  EXPECT_EQ((*listed_dataset)->size(), 2);
}

TEST(OpenDatasetTest, MissingSplitFolderNamesTheYamlLine) {
  TempDir dir;
  const std::string yaml = dir.Write("d.yaml", "nc: 1\ntrain: images/train\n");
  auto spec = ResolveDataset(yaml, "/nonexistent");
  ASSERT_TRUE(spec.ok()) << spec.status();
  auto dataset = OpenDataset(*spec, Split::kTrain);
  ASSERT_EQ(dataset.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(dataset.status().message(), HasSubstr(yaml + ":2: '"));
  EXPECT_THAT(dataset.status().message(), HasSubstr("images/train' does not exist"));
  EXPECT_THAT(dataset.status().message(), HasSubstr("libreyolo never downloads a dataset"));

  std::filesystem::create_directories(dir.path() + "/images/train");
  dataset = OpenDataset(*spec, Split::kTrain);
  ASSERT_EQ(dataset.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(dataset.status().message(), HasSubstr("no images found"));
}

}  // namespace
}  // namespace libreyolo::engine
