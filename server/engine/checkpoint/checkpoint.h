// Reads checkpoints written by `torch.save` (the zip format) without LibTorch: Debian's
// LibTorch 1.13 `torch::pickle_load` rejects real LibreYOLO checkpoints (an OrderedDict state
// dict carrying `_metadata`), so the archive and its pickle are read here.
#ifndef LIBREYOLO_SERVER_ENGINE_CHECKPOINT_CHECKPOINT_H_
#define LIBREYOLO_SERVER_ENGINE_CHECKPOINT_CHECKPOINT_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"

namespace libreyolo::engine {

enum class DType { kFloat32, kFloat16, kBFloat16, kFloat64, kInt64, kInt32, kInt16, kInt8, kUInt8,
                   kBool };

// Bytes per element of a dtype.
int DTypeSize(DType t);
const char* DTypeName(DType t);

// One tensor of the state dict: a view into a storage blob of the archive.
struct CheckpointTensor {
  DType dtype = DType::kFloat32;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;  // in elements
  int64_t storage_offset = 0;    // in elements
  std::shared_ptr<const std::string> storage;  // the raw little-endian bytes of the storage
  int64_t numel() const;
  // Element i (row-major over `shape`) as double, honouring strides and offset.
  double At(int64_t i) const;
};

// A scalar of the checkpoint's metadata (everything in the top-level dict that is not a tensor).
using MetaValue = std::variant<std::monostate, bool, int64_t, double, std::string>;

struct Checkpoint {
  // The state dict, by parameter/buffer name, in file order of insertion.
  std::vector<std::pair<std::string, CheckpointTensor>> tensors;
  // Top-level scalars (LibreYOLO: schema_version, libreyolo_version, model_family, size, task,
  // nc, imgsz, ...); lists such as `names` are flattened to their string form.
  std::map<std::string, MetaValue> metadata;
  std::vector<std::string> class_names;  // `names`, when present
};

// Reads a torch.save zip archive: a bare state dict, or LibreYOLO's dict holding it under
// "model" (also "ema" / "state_dict" when "model" is absent) with metadata beside it.
// NOT_FOUND for a missing file; INVALID_ARGUMENT naming the problem for anything malformed
// (not a zip, truncated, an unsupported pickle opcode, a storage that is missing or too small).
absl::StatusOr<Checkpoint> ReadCheckpoint(const std::string& path);
absl::StatusOr<Checkpoint> ReadCheckpointBytes(const std::string& bytes, const std::string& what);

}  // namespace libreyolo::engine

#endif  // LIBREYOLO_SERVER_ENGINE_CHECKPOINT_CHECKPOINT_H_
