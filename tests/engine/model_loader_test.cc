// The model loader's checkpoint cache: the daemon's jobs reuse a parsed checkpoint while the
// file is unchanged, and read it again once it is rewritten.
#include "server/engine/model_loader.h"

#include <torch/torch.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

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

}  // namespace
}  // namespace libreyolo::engine
