#include "server/engine/job/model_loader.h"

#include <torch/torch.h>

#include <chrono>
#include <filesystem>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status/status_macros.h"
#include "server/engine/checkpoint/checkpoint.h"
#include "server/engine/checkpoint/checkpoint_model.h"
#include "server/engine/infer/torchscript_model.h"

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
  ASSIGN_OR_RETURN(auto read, ReadCheckpoint(weights));
  auto shared = std::make_shared<const Checkpoint>(std::move(read));
  if (key) {
    std::lock_guard<std::mutex> lock(mu);
    cache.emplace_front(*key, shared);
    if (cache.size() > kCheckpointCacheEntries) cache.pop_back();
  }
  return shared;
}

absl::Status SizeMismatch(const std::string& weights, const CheckpointModel& described,
                          const std::string& size) {
  return absl::InvalidArgumentError(absl::StrCat(
      "--weights ", weights, ": this checkpoint is ", described.Label(),
      described.size_from_metadata ? "" : " by its layer widths (its metadata names no size)",
      ", not the ", FamilyName(described.family), size, " that --size ", size,
      " asks for: run with --size ", described.size, ", or give a ", FamilyName(described.family),
      size, " checkpoint"));
}

// The class-dependent tensors: each class tower's final 1x1 conv ("head.cv3.<level>.2.*"),
// what LibreYOLO's _rebuild_detect_class_layers replaces.
std::set<std::string> ClassPredictorNames(Yolo9& model) {
  std::set<std::string> names;
  for (const auto& item : model->named_parameters()) {
    if (absl::StartsWith(item.key(), "head.cv3.") &&
        (absl::EndsWith(item.key(), ".2.weight") || absl::EndsWith(item.key(), ".2.bias"))) {
      names.insert(item.key());
    }
  }
  return names;
}

// Sorts the model's tensors after a re-initialisation: the `leave` names are new; any other
// whose values are no longer the checkpoint's was reset (the bias prior), the rest kept.
HeadReinit Compare(Yolo9& model, const std::map<std::string, torch::Tensor>& tensors,
                   const std::set<std::string>& leave) {
  HeadReinit h;
  auto visit = [&](const std::string& name, const torch::Tensor& value) {
    TensorShape entry{name, value.sizes().vec()};
    if (leave.count(name) > 0) {
      h.reinitialised.push_back(std::move(entry));
    } else if (!torch::equal(value, tensors.at(name).to(value.dtype()))) {
      h.reset.push_back(std::move(entry));
    } else {
      ++h.kept;
    }
  };
  torch::NoGradGuard no_grad;
  for (const auto& item : model->named_parameters()) visit(item.key(), item.value());
  for (const auto& item : model->named_buffers()) visit(item.key(), item.value());
  return h;
}

std::string HeadNotice(const std::string& weights, const HeadReinit& h) {
  return absl::StrCat(weights, " has ", h.from_classes, " classes, the dataset ", h.to_classes,
                      ": class head re-initialised as the Python LibreYOLO does (",
                      h.reinitialised.size(), " tensors new, seed ", h.seed, "; ", h.reset.size(),
                      " box biases reset to the prior; ", h.kept, " tensors kept)");
}

}  // namespace

absl::StatusOr<LoadedModel> LoadModel(const std::string& weights, const std::string& size,
                                      int64_t num_classes,
                                      const std::vector<std::string>& searched) {
  LoadedModel out;
  out.size = size;
  const bool exists = std::filesystem::exists(weights);
  if (!exists && weights != kDefaultWeights) {
    return absl::NotFoundError(absl::StrCat("--weights ", weights,
                                            ": no such file (give the path to a LibreYOLO9 "
                                            "checkpoint saved with torch.save)"));
  }
  std::shared_ptr<const Checkpoint> ckpt;
  CheckpointModel described;
  Yolo9Options options;
  options.size = size;
  if (exists && IsTorchScriptArchive(weights)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--weights ", weights, " is a TorchScript export: `libreyolo profile infer --weights ",
        weights, "` profiles it (any family the Python LibreYOLO exports); training (`profile "
        "run`) profiles LibreYOLO9 from a torch.save checkpoint"));
  }
  if (exists) {
    ASSIGN_OR_RETURN(auto read, ReadCheckpointCached(weights, &out.from_cache));
    ckpt = std::move(read);
    described = DescribeCheckpoint(*ckpt);
    if (!described.family.empty() && described.family != "yolo9") {
      const std::string stem = std::filesystem::path(weights).stem().string();
      return absl::InvalidArgumentError(absl::StrCat(
          "--weights ", weights, " is a ", described.family, " checkpoint (model_family \"",
          described.family, "\", size \"", described.size,
          "\"), not LibreYOLO9: the engine runs other families through their TorchScript "
          "export. Export it with the Python LibreYOLO: `libreyolo export --model ", weights,
          " --format torchscript` (it writes weights/", stem,
          ".torchscript), then `libreyolo profile infer --weights weights/", stem,
          ".torchscript`; training (`profile run`) profiles LibreYOLO9 only"));
    }
    if (!described.size.empty() && described.size != size) {
      return SizeMismatch(weights, described, size);
    }
    if (described.num_classes <= 0) described.num_classes = 80;
    if (num_classes <= 0) num_classes = described.num_classes;
    options.class_hidden = described.class_hidden;
    // Names of the checkpoint's classes, not the dataset's, when the head is re-initialised.
    if (num_classes == described.num_classes) out.class_names = ckpt->class_names;
  }
  out.num_classes = num_classes > 0 ? num_classes : 80;
  options.num_classes = out.num_classes;
  RETURN_IF_ERROR(ValidateYolo9Options(options));
  if (!exists) torch::manual_seed(kRandomInitSeed);
  out.model = Yolo9(options);
  if (!exists) {
    out.weights_label = "random-init";
    out.weights_searched = searched;
    if (out.weights_searched.empty()) {
      std::error_code ec;
      out.weights_searched.push_back(std::filesystem::absolute(weights, ec).string());
    }
    out.notice = absl::StrCat(weights, " not found (looked in ",
                              absl::StrJoin(out.weights_searched, ", "),
                              "): using a seeded random initialisation (seed ",
                              kRandomInitSeed, "): its detections and losses mean nothing; ",
                              "its timings are those of trained weights except what follows the ",
                              "predictions (the summary's 'weights' line says which)");
    return out;
  }
  std::map<std::string, torch::Tensor> tensors;
  for (const auto& [name, t] : ckpt->tensors) tensors.emplace(name, ToTorch(t));
  const bool new_classes = out.num_classes != described.num_classes;
  const std::set<std::string> leave =
      new_classes ? ClassPredictorNames(out.model) : std::set<std::string>{};
  if (auto loaded = LoadStateDict(out.model, tensors, leave); !loaded.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--weights ", weights, " does not fit LibreYOLO9-", size, " with ",
                     out.num_classes, " classes: ", loaded.message()));
  }
  out.weights_label = weights;
  if (new_classes) {
    out.model->head()->ReinitialiseClassPredictors(kHeadInitSeed);
    out.head_reinitialised = Compare(out.model, tensors, leave);
    HeadReinit& h = *out.head_reinitialised;
    h.from_classes = described.num_classes;
    h.to_classes = out.num_classes;
    h.class_hidden = out.model->head()->class_hidden();
    out.notice = HeadNotice(weights, h);
  }
  return out;
}

}  // namespace libreyolo::engine
