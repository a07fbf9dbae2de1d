// libFuzzer target: bytes -> ReadCheckpointBytes (the torch.save zip + pickle reader).
//
// Two modes, so that mutations reach the pickle machine instead of dying at the zip CRC check:
// an input starting with "PK" is the archive itself; anything else is taken as data.pkl and
// wrapped (with valid CRCs) in an archive that also holds storages "0".."7" of 256 bytes.
// Any input may be rejected, but nothing may crash, hang or trip a sanitizer, and every tensor of
// an accepted checkpoint must lie inside its storage (checked here; a violation aborts).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "server/engine/checkpoint/checkpoint.h"
#include "server/engine/checkpoint/zip_archive.h"

namespace {

using libreyolo::engine::CheckpointTensor;
using libreyolo::engine::DType;

[[noreturn]] void Die(const std::string& name, const char* why) {
  std::fprintf(stderr, "accepted tensor %s is inconsistent: %s\n", name.c_str(), why);
  std::abort();
}

void CheckTensor(const std::string& name, const CheckpointTensor& t) {
  if (t.storage == nullptr) Die(name, "no storage");
  if (t.shape.size() != t.strides.size()) Die(name, "shape/stride rank mismatch");
  const int64_t numel = t.numel();
  if (numel < 0) Die(name, "bad numel");
  if (numel == 0) return;
  // The reader promised overflow-free sizes, so plain arithmetic in unsigned is safe here.
  uint64_t last = static_cast<uint64_t>(t.storage_offset);
  for (size_t d = 0; d < t.shape.size(); ++d) {
    last += static_cast<uint64_t>(t.shape[d] - 1) * static_cast<uint64_t>(t.strides[d]);
  }
  const auto size = static_cast<uint64_t>(libreyolo::engine::DTypeSize(t.dtype));
  if ((last + 1) * size > t.storage->size()) Die(name, "view past the end of its storage");
  const bool integral = t.dtype != DType::kFloat32 && t.dtype != DType::kFloat16 &&
                        t.dtype != DType::kBFloat16 && t.dtype != DType::kFloat64;
  const int64_t n = numel < 4096 ? numel : 4096;
  for (int64_t i = 0; i < n; ++i) {
    // At() answers NaN only for an index it refuses; an integer element is never NaN.
    if (integral && std::isnan(t.At(i))) Die(name, "At() refused an in-range element");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  if (bytes.rfind("PK", 0) != 0) {
    std::vector<std::pair<std::string, std::string>> entries = {{"archive/data.pkl", bytes}};
    for (int key = 0; key < 8; ++key) {
      std::string storage(256, '\0');
      for (size_t i = 0; i < storage.size(); ++i) {
        storage[i] = static_cast<char>((i * 37 + static_cast<size_t>(key)) & 0xff);
      }
      entries.emplace_back("archive/data/" + std::to_string(key), std::move(storage));
    }
    bytes = libreyolo::engine::WriteStoredZip(entries);
  }
  auto ck = libreyolo::engine::ReadCheckpointBytes(bytes, "fuzz");
  if (!ck.ok()) return 0;
  for (const auto& [name, tensor] : ck->tensors) CheckTensor(name, tensor);
  return 0;
}
