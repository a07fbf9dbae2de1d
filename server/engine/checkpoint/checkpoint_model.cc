#include "server/engine/checkpoint/checkpoint_model.h"

#include <variant>

#include "absl/strings/str_cat.h"

namespace libreyolo::engine {
namespace {

// Rows (output channels) of a named tensor; 0 when it is absent or a scalar.
int64_t Rows(const Checkpoint& c, const std::string& name) {
  for (const auto& [key, tensor] : c.tensors) {
    if (key == name) return tensor.shape.empty() ? 0 : tensor.shape[0];
  }
  return 0;
}

template <typename T>
const T* Meta(const Checkpoint& c, const std::string& key) {
  auto it = c.metadata.find(key);
  return it == c.metadata.end() ? nullptr : std::get_if<T>(&it->second);
}

// LibreYOLO9.detect_size: the stem's width (16 t, 64 c; 32 is s or m by elan1's).
std::string DetectSize(const Checkpoint& c) {
  switch (Rows(c, "backbone.conv0.conv.weight")) {
    case 16:
      return "t";
    case 64:
      return "c";
    case 32:
      switch (Rows(c, "backbone.elan1.cv1.conv.weight")) {
        case 64:
          return "s";
        case 128:
          return "m";
        default:
          return "";
      }
    default:
      return "";
  }
}

}  // namespace

std::string FamilyName(const std::string& family) {
  return family.empty() || family == "yolo9" ? "LibreYOLO9" : family;
}

std::string CheckpointModel::Label() const {
  // LibreYOLO9's own names carry the size ("LibreYOLO9t"); another family's is shown as it is.
  const std::string name = FamilyName(family);
  return absl::StrCat(name, name == "LibreYOLO9" ? size : "", " (size ",
                      size.empty() ? "unknown" : size, ")");
}

CheckpointModel DescribeCheckpoint(const Checkpoint& checkpoint) {
  CheckpointModel m;
  if (const auto* family = Meta<std::string>(checkpoint, "model_family")) m.family = *family;
  if (const auto* size = Meta<std::string>(checkpoint, "size"); size != nullptr && !size->empty()) {
    m.size = *size;
    m.size_from_metadata = true;
  } else {
    m.size = DetectSize(checkpoint);
  }
  m.num_classes = Rows(checkpoint, "head.cv3.0.2.weight");
  if (m.num_classes == 0) {
    if (const auto* nc = Meta<int64_t>(checkpoint, "nc"); nc != nullptr && *nc > 0) {
      m.num_classes = *nc;
    }
  }
  m.class_hidden = Rows(checkpoint, "head.cv3.0.0.conv.weight");
  return m;
}

}  // namespace libreyolo::engine
