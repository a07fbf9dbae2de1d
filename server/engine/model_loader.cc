#include "server/engine/model_loader.h"

#include <torch/torch.h>

#include <chrono>
#include <filesystem>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <variant>

#include "absl/strings/str_cat.h"
#include "server/engine/checkpoint/checkpoint.h"

namespace libreyolo::engine {
namespace {

// The daemon runs many jobs on the same weights: parsed checkpoints are kept, keyed by path,
// size and modification time (a rewritten file is read again), most recently used first.
constexpr size_t kCheckpointCacheEntries = 4;

struct CacheKey {
  std::string path;
  uintmax_t size = 0;
  int64_t mtime_ns = 0;
  bool operator==(const CacheKey&) const = default;
};

std::optional<CacheKey> KeyFor(const std::string& weights) {
  std::error_code ec;
  const auto canonical = std::filesystem::canonical(weights, ec);
  if (ec) return std::nullopt;
  CacheKey k;
  k.path = canonical.string();
  k.size = std::filesystem::file_size(canonical, ec);
  if (ec) return std::nullopt;
  const auto mtime = std::filesystem::last_write_time(canonical, ec);
  if (ec) return std::nullopt;
  k.mtime_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(mtime.time_since_epoch()).count();
  return k;
}

absl::StatusOr<std::shared_ptr<const Checkpoint>> ReadCheckpointCached(const std::string& weights,
                                                                       bool* hit) {
  static std::mutex mu;
  static std::list<std::pair<CacheKey, std::shared_ptr<const Checkpoint>>> cache;
  const std::optional<CacheKey> key = KeyFor(weights);
  if (key) {
    std::lock_guard<std::mutex> lock(mu);
    for (auto it = cache.begin(); it != cache.end(); ++it) {
      if (it->first == *key) {
        cache.splice(cache.begin(), cache, it);
        *hit = true;
        return cache.front().second;
      }
    }
  }
  *hit = false;
  auto read = ReadCheckpoint(weights);
  if (!read.ok()) return read.status();
  auto shared = std::make_shared<const Checkpoint>(*std::move(read));
  if (key) {
    std::lock_guard<std::mutex> lock(mu);
    cache.emplace_front(*key, shared);
    if (cache.size() > kCheckpointCacheEntries) cache.pop_back();
  }
  return shared;
}

}  // namespace

absl::StatusOr<LoadedModel> LoadModel(const std::string& weights, const std::string& size,
                                      int64_t num_classes) {
  LoadedModel out;
  out.size = size;
  const bool exists = std::filesystem::exists(weights);
  if (!exists && weights != kDefaultWeights) {
    return absl::NotFoundError(absl::StrCat("--weights ", weights,
                                            ": no such file (give the path to a LibreYOLO9 "
                                            "checkpoint saved with torch.save)"));
  }
  std::shared_ptr<const Checkpoint> ckpt;
  if (exists) {
    auto read = ReadCheckpointCached(weights, &out.from_cache);
    if (!read.ok()) return read.status();
    ckpt = *std::move(read);
    if (num_classes <= 0) {
      auto it = ckpt->metadata.find("nc");
      if (it != ckpt->metadata.end() && std::holds_alternative<int64_t>(it->second)) {
        num_classes = std::get<int64_t>(it->second);
      }
    }
    out.class_names = ckpt->class_names;
  }
  out.num_classes = num_classes > 0 ? num_classes : 80;
  Yolo9Options options;
  options.size = size;
  options.num_classes = out.num_classes;
  if (auto valid = ValidateYolo9Options(options); !valid.ok()) return valid;
  if (!exists) torch::manual_seed(kRandomInitSeed);
  out.model = Yolo9(options);
  if (!exists) {
    out.weights_label = "random-init";
    out.notice = absl::StrCat(weights, " not found: using a seeded random initialisation (seed ",
                              kRandomInitSeed, "); timings are valid, detections are not");
    return out;
  }
  std::map<std::string, torch::Tensor> tensors;
  for (const auto& [name, t] : ckpt->tensors) tensors.emplace(name, ToTorch(t));
  if (auto loaded = LoadStateDict(out.model, tensors); !loaded.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--weights ", weights, " does not fit LibreYOLO9-", size, " with ",
                     out.num_classes, " classes: ", loaded.message()));
  }
  out.weights_label = weights;
  return out;
}

}  // namespace libreyolo::engine
