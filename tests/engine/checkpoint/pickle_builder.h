// Writes small pickles and torch.save-shaped archives by hand, so tests can build exactly the
// malformed input they need (the tiny .pt fixtures cover what torch itself writes).
#ifndef LIBREYOLO_TESTS_ENGINE_CHECKPOINT_PICKLE_BUILDER_H_
#define LIBREYOLO_TESTS_ENGINE_CHECKPOINT_PICKLE_BUILDER_H_

#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "server/engine/checkpoint/zip_archive.h"

namespace libreyolo::engine::testing {

inline std::string Le(uint64_t v, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  return out;
}

// Opcodes, protocol 2 as torch.save writes them.
inline std::string Str(const std::string& s) { return "X" + Le(s.size(), 4) + s; }
inline std::string Int(int64_t v) {  // LONG1 with 8 bytes: any int64
  return std::string("\x8a\x08", 2) + Le(static_cast<uint64_t>(v), 8);
}
inline std::string Global(const std::string& module, const std::string& name) {
  return "c" + module + "\n" + name + "\n";
}
inline std::string Tuple(const std::vector<std::string>& items) {
  std::string out = "(";
  for (const std::string& i : items) out += i;
  return out + "t";
}
inline std::string IntTuple(const std::vector<int64_t>& v) {
  std::vector<std::string> items;
  for (int64_t i : v) items.push_back(Int(i));
  return Tuple(items);
}
inline std::string Dict(const std::vector<std::pair<std::string, std::string>>& kv) {
  std::string out = "}(";
  for (const auto& [k, v] : kv) out += k + v;
  return out + "u";
}
inline std::string Pickle(const std::string& body) { return "\x80\x02" + body + "."; }

struct TensorSpec {
  std::string storage_type = "FloatStorage";
  std::string key = "0";
  int64_t numel = 4;
  int64_t offset = 0;
  std::vector<int64_t> shape = {4};
  std::vector<int64_t> stride = {1};
};

// torch._utils._rebuild_tensor_v2(storage, offset, size, stride, False, OrderedDict())
inline std::string Tensor(const TensorSpec& t) {
  const std::string pid = Tuple({Str("storage"), Global("torch", t.storage_type), Str(t.key),
                                 Str("cpu"), Int(t.numel)});
  return Global("torch._utils", "_rebuild_tensor_v2") + "(" + pid + "Q" + Int(t.offset) +
         IntTuple(t.shape) + IntTuple(t.stride) + "\x89" + Global("collections", "OrderedDict") +
         ")R" + "tR";
}

inline std::string Floats(const std::vector<float>& v) {
  std::string out(v.size() * sizeof(float), '\0');
  if (!v.empty()) std::memcpy(out.data(), v.data(), out.size());
  return out;
}

// A torch.save-shaped zip: archive/data.pkl plus archive/data/<key> for each storage.
inline std::string Archive(const std::string& pickle,
                           const std::vector<std::pair<std::string, std::string>>& storages) {
  std::vector<std::pair<std::string, std::string>> entries = {{"archive/data.pkl", pickle}};
  for (const auto& [key, bytes] : storages) entries.emplace_back("archive/data/" + key, bytes);
  entries.emplace_back("archive/version", "3\n");
  return WriteStoredZip(entries);
}

}  // namespace libreyolo::engine::testing

#endif  // LIBREYOLO_TESTS_ENGINE_CHECKPOINT_PICKLE_BUILDER_H_
