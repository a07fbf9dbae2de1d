// What a checkpoint says it is (checkpoint_model.h): the shared LibreYOLO9-t fixture by its
// metadata, and hand-made tensor lists by their widths, as Python's detect_size reads them.
#include "server/engine/checkpoint/checkpoint_model.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "server/engine/checkpoint/checkpoint.h"

namespace libreyolo::engine {
namespace {

const std::string kWeights =
    std::string(LIBREYOLO_SHARED_DIR) + "/fixtures/models/libreyolo9t_seed1234.pt";

// A checkpoint of shapes only (DescribeCheckpoint reads no values).
Checkpoint Shapes(const std::vector<std::pair<std::string, std::vector<int64_t>>>& tensors) {
  Checkpoint c;
  for (const auto& [name, shape] : tensors) {
    CheckpointTensor t;
    t.shape = shape;
    c.tensors.emplace_back(name, t);
  }
  return c;
}

TEST(CheckpointModel, TheFixtureIsAnEightyClassLibreYolo9tByItsMetadata) {
  if (!std::filesystem::exists(kWeights)) GTEST_SKIP() << "no fixture at " << kWeights;
  auto c = ReadCheckpoint(kWeights);
  ASSERT_TRUE(c.ok()) << c.status();
  const CheckpointModel m = DescribeCheckpoint(*c);
  EXPECT_EQ(m.family, "yolo9");
  EXPECT_EQ(m.size, "t");
  EXPECT_TRUE(m.size_from_metadata);
  EXPECT_EQ(m.num_classes, 80);
  EXPECT_EQ(m.class_hidden, 80);  // COCO-width class towers
  EXPECT_EQ(m.Label(), "LibreYOLO9t (size t)");
}

TEST(CheckpointModel, WithoutMetadataTheWidthsTellTheSizeAndTheHeadTheClasses) {
  const CheckpointModel s =
      DescribeCheckpoint(Shapes({{"backbone.conv0.conv.weight", {32, 3, 3, 3}},
                                 {"backbone.elan1.cv1.conv.weight", {64, 64, 1, 1}},
                                 {"head.cv3.0.0.conv.weight", {80, 64, 3, 3}},
                                 {"head.cv3.0.2.weight", {2, 80, 1, 1}}}));
  EXPECT_EQ(s.size, "s");
  EXPECT_FALSE(s.size_from_metadata);
  EXPECT_EQ(s.num_classes, 2);    // the predictor's rows, a fine-tune from COCO...
  EXPECT_EQ(s.class_hidden, 80);  // ...that kept COCO's tower width
  EXPECT_EQ(s.Label(), "LibreYOLO9s (size s)");
  EXPECT_EQ(DescribeCheckpoint(Shapes({{"backbone.conv0.conv.weight", {32, 3, 3, 3}},
                                       {"backbone.elan1.cv1.conv.weight", {128, 64, 1, 1}}}))
                .size,
            "m");
  EXPECT_EQ(DescribeCheckpoint(Shapes({{"backbone.conv0.conv.weight", {64, 3, 3, 3}}})).size, "c");
  EXPECT_EQ(DescribeCheckpoint(Shapes({{"backbone.conv0.conv.weight", {16, 3, 3, 3}}})).size, "t");
  const CheckpointModel unknown = DescribeCheckpoint(Shapes({{"something", {3}}}));
  EXPECT_EQ(unknown.size, "");
  EXPECT_EQ(unknown.num_classes, 0);
  EXPECT_EQ(unknown.class_hidden, 0);
}

TEST(CheckpointModel, MetadataWinsOverWidthsAndNamesItsFamily) {
  Checkpoint c = Shapes({{"backbone.conv0.conv.weight", {16, 3, 3, 3}}});
  c.metadata["size"] = std::string("s");
  c.metadata["nc"] = int64_t{5};
  c.metadata["model_family"] = std::string("yolox");
  const CheckpointModel m = DescribeCheckpoint(c);
  EXPECT_EQ(m.size, "s");
  EXPECT_TRUE(m.size_from_metadata);
  EXPECT_EQ(m.num_classes, 5);  // no class predictor: the metadata's nc
  EXPECT_EQ(m.Label(), "yolox (size s)");
  EXPECT_EQ(FamilyName(""), "LibreYOLO9");
}

}  // namespace
}  // namespace libreyolo::engine
