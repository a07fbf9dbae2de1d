// A bounded pickle virtual machine for the subset of the format `torch.save` emits (protocol 2,
// read liberally up to protocol 5). It builds an inert object graph instead of calling anything:
// the few globals a checkpoint needs (OrderedDict, the tensor and parameter rebuilders, the
// storage classes) are modelled, every other global becomes an opaque object.
#ifndef LIBREYOLO_SERVER_ENGINE_CHECKPOINT_PICKLE_H_
#define LIBREYOLO_SERVER_ENGINE_CHECKPOINT_PICKLE_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace libreyolo::engine {

// Values refer to each other by index into the graph, so shared and even cyclic references
// (both legal in pickle) need no ownership and cannot leak.
using ValueId = uint32_t;
inline constexpr ValueId kNoValue = 0xffffffff;

enum class PyKind {
  kNone, kBool, kInt, kFloat, kString, kBytes,
  kTuple, kList, kDict,  // sets and frozensets are read as lists
  kGlobal,   // s = "module.name"
  kObject,   // anything opaque: s = its class ("module.name"), items = constructor args
  kStorage,  // a persistent id: s = archive key, items = {storage class global}, i = numel
  kTensor,   // torch._utils._rebuild_tensor_v2: items = its arguments (storage, offset, ...)
};

struct PyValue {
  PyKind kind = PyKind::kNone;
  int64_t i = 0;  // kBool, kInt, kStorage
  double f = 0;   // kFloat
  std::string s;
  std::vector<ValueId> items;
  std::vector<std::pair<ValueId, ValueId>> entries;  // kDict, in insertion order
  ValueId state = kNoValue;  // kObject: what BUILD gave it
};

class PickleGraph {
 public:
  const PyValue& at(ValueId id) const { return values_[id]; }
  ValueId root() const { return root_; }
  // The value under string key `key` of a dict (the last one when repeated), if any.
  std::optional<ValueId> DictGet(ValueId dict, absl::string_view key) const;
  // Python-like text of a value, cut at `max_chars` and a fixed nesting depth (cycles end).
  std::string Repr(ValueId id, size_t max_chars = 4096) const;
  static const char* KindName(PyKind kind);

 private:
  friend class PickleMachine;
  void ReprInto(ValueId id, int depth, size_t max_chars, std::string* out) const;
  std::vector<PyValue> values_;
  ValueId root_ = kNoValue;
};

// Runs the pickle in `data`. INVALID_ARGUMENT naming `what`, the byte offset and the problem for
// an unsupported opcode, truncation, a stack/memo misuse, or a resource limit being exceeded.
absl::StatusOr<PickleGraph> Unpickle(absl::string_view data, absl::string_view what);

}  // namespace libreyolo::engine

#endif  // LIBREYOLO_SERVER_ENGINE_CHECKPOINT_PICKLE_H_
