#include "server/engine/data/loader.h"

#include <ATen/ATen.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "server/engine/data/dataset.h"
#include "tests/engine/data/test_util.h"

namespace libreyolo::engine {
namespace {

using ::testing::HasSubstr;

std::vector<Batch> Drain(DataLoader* loader) {
  std::vector<Batch> out;
  for (;;) {
    auto next = loader->Next();
    EXPECT_TRUE(next.ok()) << next.status();
    if (!next.ok() || !next->has_value()) return out;
    out.push_back(std::move(**next));
  }
}

LoaderOptions SmallOptions(int workers) {
  LoaderOptions o;
  o.batch_size = 4;
  o.image_size = 128;
  o.workers = workers;
  o.seed = 1234;
  return o;
}

// drop_last as the Python LibreYOLO's create_dataloader sets it (len(sampler) >= batch): the last
// partial batch goes when the epoch has a full one, and an epoch smaller than the batch is one
// partial batch (issue 36 section 2: 12 images at --batch 16 train on 12 a step, never on none).
TEST(LoaderTest, BatchesPerEpoch) {
  EXPECT_EQ(DataLoader::BatchesPerEpoch(10, 4, true), 2);
  EXPECT_EQ(DataLoader::BatchesPerEpoch(10, 4, false), 3);
  EXPECT_EQ(DataLoader::BatchesPerEpoch(12, 4, true), 3);
  EXPECT_EQ(DataLoader::BatchesPerEpoch(12, 5, true), 2);  // the last 2 images dropped
  EXPECT_EQ(DataLoader::BatchesPerEpoch(12, 12, true), 1);
  EXPECT_EQ(DataLoader::BatchesPerEpoch(12, 16, true), 1);  // all 12, kept
  EXPECT_EQ(DataLoader::BatchesPerEpoch(3, 4, true), 1);
  EXPECT_EQ(DataLoader::BatchesPerEpoch(3, 4, false), 1);
  EXPECT_EQ(DataLoader::BatchesPerEpoch(0, 4, true), 0);
  EXPECT_EQ(DataLoader::BatchesPerEpoch(0, 4, false), 0);
}

TEST(LoaderTest, ADatasetSmallerThanTheBatchIsOneBatchOfAllOfIt) {
  auto dataset = std::make_shared<const SyntheticDataset>(12, 80, 7);
  LoaderOptions o = SmallOptions(0);
  o.batch_size = 16;
  o.image_size = 32;
  auto loader = DataLoader::Create(dataset, o);
  ASSERT_TRUE(loader.ok()) << loader.status();
  EXPECT_EQ((*loader)->BatchesPerEpoch(), 1);
  const std::vector<Batch> epoch = Drain(loader->get());
  ASSERT_EQ(epoch.size(), 1u);
  EXPECT_EQ(epoch[0].images.size(0), 12);
}

// What a window of `steps` batches takes from a source over `images` synthetic images: each
// step's batch size, grouped by epoch.
std::vector<std::vector<int64_t>> Window(int64_t images, int batch, int64_t steps) {
  auto dataset = std::make_shared<const SyntheticDataset>(images, 80, 7);
  LoaderOptions o = SmallOptions(0);
  o.batch_size = batch;
  o.image_size = 32;
  o.augment.enabled = false;  // the batches' sizes are the point, not their pixels
  auto loader = DataLoader::Create(dataset, o);
  EXPECT_TRUE(loader.ok()) << loader.status();
  if (!loader.ok()) return {};
  LoaderBatchSource source(loader->get());
  EXPECT_TRUE(source.Reserve(steps).ok());
  std::vector<std::vector<int64_t>> by_epoch;
  for (int64_t i = 0; i < steps; ++i) {
    auto b = source.Next();
    EXPECT_TRUE(b.ok()) << b.status();
    if (!b.ok()) break;
    by_epoch.resize(static_cast<size_t>(source.epoch()) + 1);
    by_epoch.back().push_back(b->images.size(0));
  }
  return by_epoch;
}

// Issue 36 section 2: the window fills across epochs as the Python LibreYOLO 1.6.0's `profile
// run` fills it. Its batches, logged at each step of its window on a 12-image dataset:
// --batch 4 --warmup 2 --steps 5: [[4, 4, 4], [4, 4, 4], [4]]; --batch 5: [[5, 5], [5, 5],
// [5, 5], [5]]; --batch 16 (warmup 5 + steps 20): 25 epochs of [12].
TEST(LoaderBatchSourceTest, FillsTheWindowAcrossEpochsAsThePythonToolDoes) {
  using Epochs = std::vector<std::vector<int64_t>>;
  EXPECT_EQ(Window(12, 4, 7), (Epochs{{4, 4, 4}, {4, 4, 4}, {4}}));
  EXPECT_EQ(Window(12, 5, 7), (Epochs{{5, 5}, {5, 5}, {5, 5}, {5}}));
  EXPECT_EQ(Window(12, 16, 25), Epochs(25, std::vector<int64_t>{12}));
  EXPECT_EQ(Window(1, 16, 3), (Epochs{{1}, {1}, {1}}));
}

// A window that fits in what is left of an epoch stays in it; one that does not begins a fresh
// epoch (restarting the workers mid-window would be one slow dataload step); one longer than
// any epoch begins at an epoch's first batch, however often it is reserved.
TEST(LoaderBatchSourceTest, AWindowStartsAnEpochOnlyWhenItMustAndOnce) {
  auto dataset = std::make_shared<const SyntheticDataset>(12, 80, 7);
  LoaderOptions o = SmallOptions(0);
  o.image_size = 32;
  o.augment.enabled = false;
  auto loader = DataLoader::Create(dataset, o);
  ASSERT_TRUE(loader.ok()) << loader.status();
  LoaderBatchSource source(loader->get());
  EXPECT_EQ(source.epoch(), -1);
  ASSERT_TRUE(source.Reserve(2).ok());
  EXPECT_EQ(source.epoch(), 0);
  ASSERT_TRUE(source.Next().ok());
  ASSERT_TRUE(source.Reserve(2).ok());  // 2 of 3 left: same epoch
  EXPECT_EQ(source.epoch(), 0);
  ASSERT_TRUE(source.Next().ok());
  ASSERT_TRUE(source.Reserve(2).ok());  // 1 left: a fresh epoch
  EXPECT_EQ(source.epoch(), 1);
  ASSERT_TRUE(source.Reserve(7).ok());  // longer than an epoch, this one untouched: kept
  EXPECT_EQ(source.epoch(), 1);
  ASSERT_TRUE(source.Next().ok());
  ASSERT_TRUE(source.Reserve(7).ok());  // begun: the window starts the next one
  EXPECT_EQ(source.epoch(), 2);
}

TEST(CollateTest, LayoutMatchesTheLossContract) {
  Sample a, b;
  a.image = cv::Mat(64, 64, CV_8UC3, cv::Scalar(10, 20, 30));  // B, G, R
  a.boxes = {Box{3, 0, 16, 32, 48}, Box{1, 8, 8, 70, 64}};
  a.path = "a";
  b.image = cv::Mat(64, 64, CV_8UC3, cv::Scalar(255, 0, 0));
  b.path = "b";
  auto batch = Collate({a, b}, 64, /*pin=*/false);
  ASSERT_TRUE(batch.ok()) << batch.status();
  EXPECT_EQ(batch->images.sizes(), (std::vector<int64_t>{2, 3, 64, 64}));
  EXPECT_EQ(batch->images.scalar_type(), at::kFloat);
  EXPECT_TRUE(batch->images.is_contiguous());
  // RGB order, / 255.
  EXPECT_FLOAT_EQ(batch->images[0][0][5][7].item<float>(), 30.0f / 255);
  EXPECT_FLOAT_EQ(batch->images[0][2][5][7].item<float>(), 10.0f / 255);
  EXPECT_FLOAT_EQ(batch->images[1][2][63][63].item<float>(), 1.0f);
  EXPECT_EQ(batch->targets.sizes(), (std::vector<int64_t>{2, 2, 5}));
  const at::Tensor expected = at::tensor({3.0f,   0.0f,   0.25f, 0.5f, 0.75f, 1.0f,
                                          0.125f, 0.125f, 1.0f,  1.0f,  // clipped to the canvas
                                          -1.0f,  0.0f,   0.0f,  0.0f, 0.0f,  -1.0f,
                                          0.0f,   0.0f,   0.0f,  0.0f})
                                  .reshape({2, 2, 5});
  EXPECT_TRUE(at::allclose(batch->targets, expected)) << batch->targets;
  EXPECT_EQ(batch->paths, (std::vector<std::string>{"a", "b"}));

  // No boxes anywhere: still one padding row, never a zero-sized dimension.
  auto empty = Collate({b}, 64, false);
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->targets.sizes(), (std::vector<int64_t>{1, 1, 5}));
  EXPECT_EQ(empty->targets[0][0][0].item<float>(), -1.0f);

  auto mismatched = Collate({a}, 32, false);
  EXPECT_FALSE(mismatched.ok());
}

TEST(CollateTest, InferencePreprocessMapsBack) {
  const cv::Mat tall(1080, 810, CV_8UC3, cv::Scalar(0, 0, 255));
  const cv::Mat wide(100, 200, CV_8UC3, cv::Scalar(255, 0, 0));
  auto batch = PreprocessForInference({tall, wide}, 320, false);
  ASSERT_TRUE(batch.ok()) << batch.status();
  EXPECT_EQ(batch->images.sizes(), (std::vector<int64_t>{2, 3, 320, 320}));
  EXPECT_FLOAT_EQ(batch->images[0][0][0][0].item<float>(), 1.0f);            // red, top-left
  EXPECT_FLOAT_EQ(batch->images[0][0][0][300].item<float>(), 114.0f / 255);  // pad on the right
  EXPECT_FLOAT_EQ(batch->images[1][2][0][0].item<float>(), 1.0f);            // blue
  EXPECT_FLOAT_EQ(batch->images[1][2][200][0].item<float>(), 114.0f / 255);  // pad below
  EXPECT_EQ(batch->geometry[0].width, 240);
  EXPECT_EQ(batch->source_sizes[1], cv::Size(200, 100));
  const Box back = MapToSource(Box{0, 32, 16, 64, 48}, batch->geometry[1], 200, 100);
  EXPECT_FLOAT_EQ(back.x1, 20.0f);
  EXPECT_FLOAT_EQ(back.y2, 30.0f);
  EXPECT_FALSE(PreprocessForInference({cv::Mat(4, 4, CV_8UC1)}, 32, false).ok());
}

// The shared fixture (what the Python reference feeds its loss) has exactly our layout.
TEST(CollateTest, ReproducesTheSharedTargetsFixture) {
  std::ifstream in(std::string(LIBREYOLO_SHARED_DIR) + "/fixtures/models/targets_2x3x5.npy",
                   std::ios::binary);
  if (!in) GTEST_SKIP() << "shared fixture targets_2x3x5.npy not present";
  std::ostringstream buffer;
  buffer << in.rdbuf();
  const std::string bytes = buffer.str();
  const size_t header = static_cast<uint8_t>(bytes[8]) | (static_cast<uint8_t>(bytes[9]) << 8);
  ASSERT_NE(bytes.find("(2, 3, 5)"), std::string::npos);
  ASSERT_EQ(bytes.size(), 10 + header + 30 * sizeof(float));
  float values[30];
  std::memcpy(values, bytes.data() + 10 + header, sizeof(values));
  const int size = 320;
  std::vector<std::vector<Box>> boxes(2);
  for (size_t i = 0; i < 2; ++i) {
    for (size_t j = 0; j < 3; ++j) {
      const float* row = values + (i * 3 + j) * 5;
      if (row[0] < 0) continue;
      boxes[i].push_back(Box{static_cast<int>(row[0]), row[1] * size, row[2] * size, row[3] * size,
                             row[4] * size});
    }
  }
  const at::Tensor ours = TargetsToTensor(boxes, size, kMaxLabelsPerImage, false);
  const at::Tensor fixture = at::from_blob(values, {2, 3, 5}, at::kFloat);
  EXPECT_TRUE(at::allclose(ours, fixture, 1e-6, 1e-6)) << ours << fixture;
}

TEST(LoaderTest, SameBatchesForAnyWorkerCount) {
  auto dataset = std::make_shared<const SyntheticDataset>(22, 80, 99);
  std::vector<std::vector<Batch>> runs;
  for (int workers : {0, 2, 4}) {
    auto loader = DataLoader::Create(dataset, SmallOptions(workers));
    ASSERT_TRUE(loader.ok()) << loader.status();
    EXPECT_EQ((*loader)->BatchesPerEpoch(), 5);
    runs.push_back(Drain(loader->get()));
    ASSERT_EQ(runs.back().size(), 5u) << workers << " workers";
  }
  for (size_t r = 1; r < runs.size(); ++r) {
    for (size_t b = 0; b < runs[0].size(); ++b) {
      EXPECT_EQ(runs[r][b].paths, runs[0][b].paths) << "run " << r << " batch " << b;
      EXPECT_TRUE(at::equal(runs[r][b].images, runs[0][b].images)) << "run " << r << " batch " << b;
      EXPECT_TRUE(at::equal(runs[r][b].targets, runs[0][b].targets))
          << "run " << r << " batch " << b;
    }
  }
  const Batch& first = runs[0][0];
  EXPECT_EQ(first.images.sizes(), (std::vector<int64_t>{4, 3, 128, 128}));
  EXPECT_EQ(first.targets.size(0), 4);
  EXPECT_EQ(first.targets.size(2), 5);
  EXPECT_GE(first.images.min().item<float>(), 0.0f);
  EXPECT_LE(first.images.max().item<float>(), 1.0f);
  const at::Tensor coords = first.targets.index(
      {at::indexing::Slice(), at::indexing::Slice(), at::indexing::Slice(1, 5)});
  EXPECT_GE(coords.min().item<float>(), 0.0f);
  EXPECT_LE(coords.max().item<float>(), 1.0f);
}

// DistributedSampler's sharding (issue 21): 22 images over 3 ranks are 8 each, the padded 24
// repeating the epoch's first two; together the ranks see every image; each rank's batches
// hold its own shard; a rank outside 0..replicas-1 is refused.
TEST(LoaderTest, RanksShardEachEpochAsDistributedSamplerDoes) {
  auto dataset = std::make_shared<const SyntheticDataset>(22, 80, 99);
  const std::vector<int64_t> whole = (*DataLoader::Create(dataset, SmallOptions(2)))->EpochOrder(3);
  std::vector<int64_t> seen;
  for (int64_t rank = 0; rank < 3; ++rank) {
    LoaderOptions o = SmallOptions(2);
    o.replicas = 3;
    o.rank = rank;
    auto loader = DataLoader::Create(dataset, o);
    ASSERT_TRUE(loader.ok()) << loader.status();
    EXPECT_EQ((*loader)->BatchesPerEpoch(), 2);  // 8 images in batches of 4
    const std::vector<int64_t> shard = (*loader)->EpochOrder(3);
    ASSERT_EQ(shard.size(), 8u);
    for (size_t k = 0; k < shard.size(); ++k) {
      EXPECT_EQ(shard[k], whole[(static_cast<size_t>(rank) + 3 * k) % whole.size()]);
    }
    seen.insert(seen.end(), shard.begin(), shard.end());
    ASSERT_TRUE((*loader)->StartEpoch(3).ok());
    const std::vector<Batch> batches = Drain(loader->get());
    ASSERT_EQ(batches.size(), 2u);
    EXPECT_EQ(batches[1].paths[0], "synthetic:" + std::to_string(shard[4]));
  }
  std::sort(seen.begin(), seen.end());
  seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
  EXPECT_EQ(seen.size(), 22u);
  EXPECT_EQ(DataLoader::ShardSize(22, 3), 8);
  EXPECT_EQ(DataLoader::ShardSize(22, 1), 22);
  LoaderOptions bad = SmallOptions(2);
  bad.replicas = 2;
  bad.rank = 2;
  EXPECT_EQ(DataLoader::Create(dataset, bad).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(LoaderTest, EpochsShuffleDifferentlyAndDropLastIsOptional) {
  auto dataset = std::make_shared<const SyntheticDataset>(22, 80, 99);
  auto loader = DataLoader::Create(dataset, SmallOptions(2));
  ASSERT_TRUE(loader.ok());
  EXPECT_NE((*loader)->EpochOrder(0), (*loader)->EpochOrder(1));
  ASSERT_TRUE((*loader)->StartEpoch(1).ok());
  const std::vector<Batch> epoch1 = Drain(loader->get());
  ASSERT_EQ(epoch1.size(), 5u);
  EXPECT_EQ(epoch1[0].paths[0], "synthetic:" + std::to_string((*loader)->EpochOrder(1)[0]));

  LoaderOptions keep = SmallOptions(3);
  keep.drop_last = false;
  keep.shuffle = false;
  auto loader2 = DataLoader::Create(dataset, keep);
  ASSERT_TRUE(loader2.ok());
  const std::vector<Batch> all = Drain(loader2->get());
  ASSERT_EQ(all.size(), 6u);
  EXPECT_EQ(all.back().images.size(0), 2);
  EXPECT_EQ(all.back().paths.back(), "synthetic:21");
}

TEST(LoaderTest, ReadsADatasetFromDisk) {
  testing::TempDir dir;
  const std::string yaml = testing::WriteTinyDataset(dir.path(), 8);
  auto spec = ResolveDataset(yaml, "/nonexistent");
  ASSERT_TRUE(spec.ok()) << spec.status();
  auto dataset = OpenDataset(*spec, Split::kTrain);
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  auto loader = DataLoader::Create(*dataset, SmallOptions(2));
  ASSERT_TRUE(loader.ok());
  const std::vector<Batch> batches = Drain(loader->get());
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_THAT(batches[0].paths[0], HasSubstr("/images/train/img"));
}

// Fails on one index: by Status or by exception, as a decode or a LibTorch call can.
class FailingDataset : public SyntheticDataset {
 public:
  FailingDataset(int64_t bad, bool throws)
      : SyntheticDataset(16, 80, 5), bad_(bad), throws_(throws) {}
  absl::StatusOr<Sample> Load(int64_t index) const override {
    if (index == bad_) {
      if (throws_) throw std::runtime_error("injected failure in sample 9");
      return absl::DataLossError("image 'broken.jpg' cannot be decoded");
    }
    return SyntheticDataset::Load(index);
  }

 private:
  int64_t bad_;
  bool throws_;
};

TEST(LoaderTest, WorkerErrorsSurfaceAsStatus) {
  for (int workers : {0, 2, 4}) {
    for (bool throws : {false, true}) {
      LoaderOptions o = SmallOptions(workers);
      o.shuffle = false;
      o.augment.enabled = false;  // sample 9 is read only for batch 2
      auto loader = DataLoader::Create(std::make_shared<const FailingDataset>(9, throws), o);
      ASSERT_TRUE(loader.ok());
      for (int b = 0; b < 2; ++b) {
        auto next = (*loader)->Next();
        ASSERT_TRUE(next.ok()) << next.status();
        ASSERT_TRUE(next->has_value());
      }
      auto failed = (*loader)->Next();
      ASSERT_FALSE(failed.ok()) << workers << " workers";
      EXPECT_THAT(failed.status().message(),
                  HasSubstr(throws ? "injected failure in sample 9" : "broken.jpg"));
      if (throws) {
        EXPECT_EQ(failed.status().code(), absl::StatusCode::kInternal);
        EXPECT_THAT(failed.status().message(), HasSubstr("batch 2 of epoch 0"));
      } else {
        EXPECT_EQ(failed.status().code(), absl::StatusCode::kDataLoss);
      }
      // Sticky until a new epoch.
      EXPECT_EQ((*loader)->Next().status(), failed.status());
    }
  }
}

TEST(LoaderTest, StopsCleanlyMidEpoch) {
  auto dataset = std::make_shared<const SyntheticDataset>(64, 80, 3);
  for (int i = 0; i < 3; ++i) {
    auto loader = DataLoader::Create(dataset, SmallOptions(4));
    ASSERT_TRUE(loader.ok());
    auto next = (*loader)->Next();
    ASSERT_TRUE(next.ok() && next->has_value());
    (*loader)->Stop();
    (*loader)->Stop();  // idempotent
  }                     // destructors join: a hang or a crash here fails the test
  auto loader = DataLoader::Create(dataset, SmallOptions(4));
  ASSERT_TRUE(loader.ok());
  ASSERT_TRUE((*loader)->StartEpoch(0).ok());  // started, never consumed, destroyed
}

TEST(LoaderTest, OptionsAndPinning) {
  auto dataset = std::make_shared<const SyntheticDataset>(4, 80, 3);
  LoaderOptions bad = SmallOptions(-1);
  EXPECT_EQ(DataLoader::Create(dataset, bad).status().code(), absl::StatusCode::kInvalidArgument);
  LoaderOptions pinned = SmallOptions(0);
  pinned.pin_memory = true;
  auto loader = DataLoader::Create(dataset, pinned);
  ASSERT_TRUE(loader.ok());
  if (!PinnedMemoryAvailable()) {
    EXPECT_FALSE((*loader)->pinned());
    EXPECT_THAT((*loader)->note(), HasSubstr("no CUDA"));
  } else {
    EXPECT_TRUE((*loader)->pinned());
    auto next = (*loader)->Next();
    ASSERT_TRUE(next.ok() && next->has_value());
    EXPECT_TRUE((*next)->images.is_pinned());
  }
  // Smaller than the batch: one batch of all of it (issue 36 section 2), from the workers too.
  LoaderOptions big = SmallOptions(2);
  big.batch_size = 16;
  auto small = DataLoader::Create(dataset, big);
  ASSERT_TRUE(small.ok());
  EXPECT_EQ((*small)->BatchesPerEpoch(), 1);
  const std::vector<Batch> all = Drain(small->get());
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].images.size(0), dataset->size());
}

}  // namespace
}  // namespace libreyolo::engine
