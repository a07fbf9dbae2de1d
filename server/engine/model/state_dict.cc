// LoadStateDict and ToTorch: the bridge from a LibreYOLO checkpoint to the LibTorch module.
#include <torch/utils.h>

#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/engine/model/yolo9.h"

namespace libreyolo::engine {
namespace {

// Long enough to see a pattern (e.g. every class-tower tensor), short enough to read.
constexpr size_t kMaxListed = 20;

// Older LibreYOLO checkpoints carry the DFL's fixed projection as a conv weight; Python drops
// it on load (DFL._load_from_state_dict), and so do we.
constexpr const char* kIgnoredKeys[] = {"head.dfl.conv.weight"};

// Checkpoints the Python LibreYOLO 1.6 trains carry its PGI auxiliary branch ("aux.*" neck,
// "aux_head.*"), a training-only branch: Python drops those tensors when it loads them into a
// single-head model (LibreYOLO9._filter_incoming_state_dict), and so do we. A model with the
// branch attached lists them among its own names, so they load (or are missing) as any other.
bool Ignored(const std::string& name) {
  for (const char* key : kIgnoredKeys) {
    if (name == key) return true;
  }
  return IsAuxKey(name);
}

std::string ShapeString(torch::IntArrayRef sizes) {
  return absl::StrCat("[", absl::StrJoin(sizes, ", "), "]");
}

torch::ScalarType ToScalarType(DType t) {
  switch (t) {
    case DType::kFloat32:
      return torch::kFloat32;
    case DType::kFloat16:
      return torch::kFloat16;
    case DType::kBFloat16:
      return torch::kBFloat16;
    case DType::kFloat64:
      return torch::kFloat64;
    case DType::kInt64:
      return torch::kInt64;
    case DType::kInt32:
      return torch::kInt32;
    case DType::kInt16:
      return torch::kInt16;
    case DType::kInt8:
      return torch::kInt8;
    case DType::kUInt8:
      return torch::kUInt8;
    case DType::kBool:
      return torch::kBool;
  }
  TORCH_CHECK(false, "unknown checkpoint dtype ", static_cast<int>(t));
}

}  // namespace

torch::Tensor ToTorch(const CheckpointTensor& tensor) {
  const torch::ScalarType type = ToScalarType(tensor.dtype);
  const auto options = torch::TensorOptions().dtype(type);
  TORCH_CHECK(tensor.strides.size() == tensor.shape.size(), "checkpoint tensor has ",
              tensor.shape.size(), " dims but ", tensor.strides.size(), " strides");
  int64_t numel = 1;
  int64_t last = tensor.storage_offset;  // highest element index the view touches
  for (size_t i = 0; i < tensor.shape.size(); ++i) {
    TORCH_CHECK(tensor.shape[i] >= 0 && tensor.strides[i] >= 0,
                "checkpoint tensor has a negative size or stride");
    numel *= tensor.shape[i];
    if (tensor.shape[i] > 0) last += (tensor.shape[i] - 1) * tensor.strides[i];
  }
  if (numel == 0) return torch::empty(tensor.shape, options);
  const auto element = static_cast<int64_t>(c10::elementSize(type));
  const int64_t stored =
      tensor.storage == nullptr ? 0 : static_cast<int64_t>(tensor.storage->size()) / element;
  TORCH_CHECK(tensor.storage_offset >= 0 && last < stored, "checkpoint tensor of shape ",
              ShapeString(tensor.shape), " does not fit its storage of ", stored, " elements");
  // from_blob only views the bytes (never written through); clone() makes the owning,
  // contiguous copy, so the result outlives the checkpoint.
  void* data = const_cast<char*>(tensor.storage->data() + tensor.storage_offset * element);
  return torch::from_blob(data, tensor.shape, tensor.strides, options)
      .clone(torch::MemoryFormat::Contiguous);
}

absl::Status LoadStateDict(Yolo9& model, const std::map<std::string, torch::Tensor>& tensors,
                           const std::set<std::string>& leave) {
  std::vector<std::pair<std::string, torch::Tensor>> targets;
  std::set<std::string> known = leave;  // present in the model, and left as it is
  auto add = [&](const std::string& name, const torch::Tensor& t) {
    if (leave.count(name) == 0) targets.emplace_back(name, t);
  };
  for (const auto& item : model->named_parameters()) add(item.key(), item.value());
  for (const auto& item : model->named_buffers()) add(item.key(), item.value());

  std::vector<std::string> missing;
  std::vector<std::string> misshaped;
  for (const auto& [name, target] : targets) {
    known.insert(name);
    auto it = tensors.find(name);
    if (it == tensors.end()) {
      missing.push_back(absl::StrCat("missing ", name));
    } else if (!it->second.defined() || it->second.sizes() != target.sizes()) {
      misshaped.push_back(
          absl::StrCat("mis-shaped ", name, " (checkpoint ",
                       it->second.defined() ? ShapeString(it->second.sizes()) : "undefined",
                       ", model ", ShapeString(target.sizes()), ")"));
    }
  }
  std::vector<std::string> unexpected;
  for (const auto& [name, tensor] : tensors) {
    if (known.count(name) == 0 && !Ignored(name)) unexpected.push_back("unexpected " + name);
  }

  const size_t problems = missing.size() + unexpected.size() + misshaped.size();
  if (problems > 0) {
    std::vector<std::string> listed;
    for (const auto* group : {&missing, &unexpected, &misshaped}) {
      for (const auto& entry : *group) {
        if (listed.size() < kMaxListed) listed.push_back(entry);
      }
    }
    std::string message = absl::StrCat(
        "state dict does not match YOLOv9-", model->options().size, " with ",
        model->options().num_classes, " classes (", missing.size(), " missing, ", unexpected.size(),
        " unexpected, ", misshaped.size(), " mis-shaped): ", absl::StrJoin(listed, "; "));
    if (problems > listed.size()) {
      absl::StrAppend(&message, "; ... and ", problems - listed.size(), " more");
    }
    return absl::InvalidArgumentError(message);
  }

  torch::NoGradGuard no_grad;
  for (auto& [name, target] : targets) target.copy_(tensors.at(name));
  return absl::OkStatus();
}

}  // namespace libreyolo::engine
