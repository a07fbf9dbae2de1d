#include "server/engine/checkpoint/checkpoint_convert.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "common/status/status_macros.h"

namespace libreyolo::engine {
namespace {

constexpr size_t kMaxDims = 64;  // torch itself caps tensors at 64 dimensions
constexpr size_t kMaxMetaChars = 4096;
constexpr size_t kMaxMetaTotalChars = size_t{1} << 20;

std::optional<DType> StorageDType(absl::string_view cls) {
  // Before typed storages (PyTorch < 1.12) CUDA tensors named their storage torch.cuda.*.
  if (!absl::ConsumePrefix(&cls, "torch.cuda.")) absl::ConsumePrefix(&cls, "torch.");
  static constexpr std::pair<const char*, DType> kTable[] = {
      {"FloatStorage", DType::kFloat32}, {"HalfStorage", DType::kFloat16},
      {"BFloat16Storage", DType::kBFloat16}, {"DoubleStorage", DType::kFloat64},
      {"LongStorage", DType::kInt64}, {"IntStorage", DType::kInt32},
      {"ShortStorage", DType::kInt16}, {"CharStorage", DType::kInt8},
      {"ByteStorage", DType::kUInt8}, {"BoolStorage", DType::kBool}};
  for (const auto& [name, dtype] : kTable) {
    if (cls == name) return dtype;
  }
  return std::nullopt;
}

class Converter {
 public:
  Converter(const PickleGraph& g, const ZipArchive& zip, const std::string& prefix,
            const std::string& what)
      : g_(g), zip_(zip), prefix_(prefix), what_(what) {}

  absl::StatusOr<Checkpoint> Run();

 private:
  absl::Status Bad(absl::string_view why) const {
    return absl::InvalidArgumentError(absl::StrCat(what_, ": ", why));
  }
  std::string Describe(ValueId id) const {
    const PyValue& v = g_.at(id);
    if (v.kind == PyKind::kObject) return absl::StrCat("a ", v.s, " object");
    return absl::StrCat("a ", PickleGraph::KindName(v.kind));
  }
  // A non-negative int (sizes, strides and offsets all are).
  bool Count(ValueId id, int64_t* out) const {
    if (g_.at(id).kind != PyKind::kInt || g_.at(id).i < 0) return false;
    *out = g_.at(id).i;
    return true;
  }
  absl::StatusOr<CheckpointTensor> Tensor(ValueId id, absl::string_view name);
  absl::StatusOr<std::shared_ptr<const std::string>> Storage(const std::string& key,
                                                             absl::string_view tensor);
  absl::Status ClassNames(ValueId names, std::vector<std::string>* out) const;

  const PickleGraph& g_;
  const ZipArchive& zip_;
  const std::string& prefix_;
  const std::string& what_;
  // Storages shared by several tensors (views, tied weights) are read once.
  absl::flat_hash_map<std::string, std::shared_ptr<const std::string>> storages_;
};

absl::StatusOr<std::shared_ptr<const std::string>> Converter::Storage(const std::string& key,
                                                                      absl::string_view tensor) {
  if (auto it = storages_.find(key); it != storages_.end()) return it->second;
  const std::string entry = absl::StrCat(prefix_, "data/", key);
  const ZipEntry* e = zip_.Find(entry);
  if (e == nullptr) {
    return Bad(absl::StrCat(tensor, ": storage entry ", entry, " is missing from the archive"));
  }
  ASSIGN_OR_RETURN(auto bytes, zip_.Read(*e));
  auto blob = std::make_shared<const std::string>(std::move(bytes));
  storages_.emplace(key, blob);
  return blob;
}

absl::StatusOr<CheckpointTensor> Converter::Tensor(ValueId id, absl::string_view name) {
  const auto bad = [&](absl::string_view why) { return Bad(absl::StrCat(name, ": ", why)); };
  const PyValue& v = g_.at(id);
  // _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, hooks[, meta])
  if (v.items.size() < 4) return bad("_rebuild_tensor_v2 called with too few arguments");
  const PyValue& storage = g_.at(v.items[0]);
  if (storage.kind != PyKind::kStorage) return bad("the tensor's storage is not a storage");
  const PyValue& cls = g_.at(storage.items[0]);
  const std::optional<DType> dtype =
      cls.kind == PyKind::kGlobal ? StorageDType(cls.s) : std::nullopt;
  if (!dtype) return bad(absl::StrCat("unsupported storage type ", g_.Repr(storage.items[0])));
  CheckpointTensor t;
  t.dtype = *dtype;
  if (!Count(v.items[1], &t.storage_offset)) return bad("bad storage offset");
  for (auto [arg, dims] : {std::pair{v.items[2], &t.shape}, std::pair{v.items[3], &t.strides}}) {
    const PyValue& tuple = g_.at(arg);
    if ((tuple.kind != PyKind::kTuple && tuple.kind != PyKind::kList) ||
        tuple.items.size() > kMaxDims) {
      return bad("size/stride is not a tuple of at most 64 ints");
    }
    dims->resize(tuple.items.size());
    for (size_t i = 0; i < dims->size(); ++i) {
      if (!Count(tuple.items[i], &(*dims)[i])) return bad("negative or non-int size/stride");
    }
  }
  if (t.shape.size() != t.strides.size()) return bad("size and stride differ in length");
  // The highest element the view touches must lie inside the storage; all in int64 with
  // overflow checks, since every number here came from the file.
  int64_t numel = 1, last = t.storage_offset;
  bool overflow = false;
  for (size_t d = 0; d < t.shape.size(); ++d) {
    int64_t span = 0;
    overflow |= __builtin_mul_overflow(numel, t.shape[d], &numel);
    if (t.shape[d] > 0) {
      overflow |= __builtin_mul_overflow(t.shape[d] - 1, t.strides[d], &span);
      overflow |= __builtin_add_overflow(last, span, &last);
    }
  }
  int64_t needed = 0;  // bytes; an empty tensor needs none
  if (numel > 0 && !overflow) {
    overflow |= __builtin_add_overflow(last, 1, &last);
    overflow |= __builtin_mul_overflow(last, int64_t{DTypeSize(t.dtype)}, &needed);
  }
  if (overflow) return bad("size/stride/offset overflow");
  ASSIGN_OR_RETURN(auto blob, Storage(storage.s, name));
  if (static_cast<uint64_t>(needed) > blob->size()) {
    return bad(absl::StrCat("storage ", prefix_, "data/", storage.s, " holds ", blob->size(),
                            " bytes but the ", DTypeName(t.dtype), " tensor of shape [",
                            absl::StrJoin(t.shape, ", "), "], stride [",
                            absl::StrJoin(t.strides, ", "), "], offset ", t.storage_offset,
                            " needs ", needed, " (storage too small)"));
  }
  t.storage = std::move(blob);
  return t;
}

absl::Status Converter::ClassNames(ValueId id, std::vector<std::string>* out) const {
  const PyValue& names = g_.at(id);
  if (names.kind == PyKind::kList || names.kind == PyKind::kTuple) {
    for (ValueId item : names.items) {
      if (g_.at(item).kind != PyKind::kString) return Bad("'names' holds a non-string");
      out->push_back(g_.at(item).s);
    }
    return absl::OkStatus();
  }
  if (names.kind != PyKind::kDict) return Bad(absl::StrCat("'names' is ", Describe(id)));
  // {class index: name}: the indices must be exactly 0..N-1.
  std::vector<std::optional<std::string>> slots(names.entries.size());
  for (const auto& [k, v] : names.entries) {
    const PyValue& key = g_.at(k);
    if (key.kind != PyKind::kInt || key.i < 0 || static_cast<uint64_t>(key.i) >= slots.size() ||
        slots[static_cast<size_t>(key.i)].has_value()) {
      return Bad("'names' keys are not the class indices 0..N-1");
    }
    if (g_.at(v).kind != PyKind::kString) return Bad("'names' holds a non-string");
    slots[static_cast<size_t>(key.i)] = g_.at(v).s;
  }
  for (auto& s : slots) out->push_back(std::move(*s));
  return absl::OkStatus();
}

absl::StatusOr<Checkpoint> Converter::Run() {
  const ValueId root = g_.root();
  const PyValue& top = g_.at(root);
  if (top.kind != PyKind::kDict) {
    const bool script = zip_.Find(prefix_ + "constants.pkl") != nullptr;
    return Bad(absl::StrCat("the pickled object is ", Describe(root), ", not a dict",
                            script ? " (a TorchScript archive, not a torch.save checkpoint)"
                                   : ""));
  }
  // LibreYOLO (and most trainers) keep the weights under one of these keys.
  ValueId state = kNoValue;
  std::string state_key, other;
  for (const char* key : {"model", "ema", "state_dict"}) {
    const std::optional<ValueId> v = g_.DictGet(root, key);
    if (!v || g_.at(*v).kind == PyKind::kNone) continue;
    if (g_.at(*v).kind == PyKind::kDict) {
      state = *v;
      state_key = key;
      break;
    }
    if (other.empty()) other = absl::StrCat("; '", key, "' is ", Describe(*v));
  }
  bool bare = false;
  if (state == kNoValue) {
    for (const auto& [k, v] : top.entries) bare |= g_.at(v).kind == PyKind::kTensor;
    if (!bare) {
      std::string keys;
      for (size_t i = 0; i < top.entries.size() && keys.size() < 512; ++i) {
        absl::StrAppend(&keys, i > 0 ? ", " : "", g_.Repr(top.entries[i].first, 64));
      }
      return Bad(absl::StrCat("no state dict: expected a dict of tensors, or one under 'model',"
                              " 'ema' or 'state_dict'", other, " (top-level keys: ", keys, ")"));
    }
    state = root;
  }
  Checkpoint ck;
  // Containers become text, each capped by Repr; the total is capped too, so a hostile file
  // with a million keys sharing one big list cannot make gigabytes of metadata.
  size_t repr_budget = kMaxMetaTotalChars;
  absl::flat_hash_map<std::string, size_t> index;  // a repeated key keeps its first slot
  for (const auto& [k, v] : g_.at(state).entries) {
    // Non-tensor values (e.g. a module's `_extra_state`) are not weights.
    if (g_.at(k).kind != PyKind::kString || g_.at(v).kind != PyKind::kTensor) continue;
    ASSIGN_OR_RETURN(auto t, Tensor(v, g_.at(k).s));
    const auto [it, fresh] = index.try_emplace(g_.at(k).s, ck.tensors.size());
    if (fresh) {
      ck.tensors.emplace_back(g_.at(k).s, std::move(t));
    } else {
      ck.tensors[it->second].second = std::move(t);
    }
  }
  if (ck.tensors.empty()) return Bad(absl::StrCat("the state dict '", state_key, "' is empty"));
  for (const auto& [k, v] : top.entries) {
    const PyValue& key = g_.at(k);
    const PyValue& val = g_.at(v);
    if (key.kind != PyKind::kString || key.s == state_key || val.kind == PyKind::kTensor) continue;
    bool holds_tensors = false;  // e.g. "ema" or "optimizer": not metadata
    for (const auto& [ek, ev] : val.entries) holds_tensors |= g_.at(ev).kind == PyKind::kTensor;
    if (holds_tensors) continue;
    MetaValue& m = ck.metadata[key.s];
    switch (val.kind) {
      case PyKind::kNone: m = std::monostate{}; break;
      case PyKind::kBool: m = val.i != 0; break;
      case PyKind::kInt: m = val.i; break;
      case PyKind::kFloat: m = val.f; break;
      case PyKind::kString: m = val.s; break;
      default: {
        std::string text = g_.Repr(v, std::min(kMaxMetaChars, repr_budget));
        repr_budget -= std::min(repr_budget, text.size());
        m = std::move(text);
        break;
      }
    }
  }
  if (const std::optional<ValueId> names = g_.DictGet(root, "names"); names) {
    RETURN_IF_ERROR(ClassNames(*names, &ck.class_names));
  }
  return ck;
}

}  // namespace

absl::StatusOr<Checkpoint> ConvertCheckpoint(const PickleGraph& graph, const ZipArchive& zip,
                                             const std::string& prefix, const std::string& what) {
  return Converter(graph, zip, prefix, what).Run();
}

}  // namespace libreyolo::engine
