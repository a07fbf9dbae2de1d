#include "server/engine/checkpoint/checkpoint.h"

#include <bit>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <system_error>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/status/status_macros.h"
#include "server/engine/checkpoint/checkpoint_convert.h"
#include "server/engine/checkpoint/pickle.h"
#include "server/engine/checkpoint/zip_archive.h"

namespace libreyolo::engine {
namespace {

// What the pre-1.6 (non-zip) torch.save format starts with: pickle protocol 2, then LONG1 with
// torch's magic number 0x1950a86a20f9469cfc6c.
constexpr char kLegacyMagic[] = "\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19";

template <typename T>
T Load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);  // storages are little-endian, like every host we build for
  return v;
}

float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0) {  // zero or subnormal: mant * 2^-24
    const float mag = std::ldexp(static_cast<float>(mant), -24);
    return sign != 0 ? -mag : mag;
  }
  const uint32_t bits = exp == 31 ? sign | 0x7f800000u | mant << 13
                                  : sign | (exp + 112) << 23 | mant << 13;
  return std::bit_cast<float>(bits);
}

// The archive's data.pkl: "<archive name>/data.pkl", the name being whatever torch.save chose
// (the file's stem), so it is found rather than guessed.
const ZipEntry* FindDataPickle(const ZipArchive& zip) {
  for (const ZipEntry& e : zip.entries()) {
    if (!absl::EndsWith(e.name, "data.pkl")) continue;
    const absl::string_view prefix =
        absl::string_view(e.name).substr(0, e.name.size() - std::strlen("data.pkl"));
    if (prefix.empty() || (prefix.back() == '/' && prefix.find('/') == prefix.size() - 1)) {
      return &e;
    }
  }
  return nullptr;
}

}  // namespace

int DTypeSize(DType t) {
  switch (t) {
    case DType::kFloat64:
    case DType::kInt64: return 8;
    case DType::kFloat32:
    case DType::kInt32: return 4;
    case DType::kFloat16:
    case DType::kBFloat16:
    case DType::kInt16: return 2;
    case DType::kInt8:
    case DType::kUInt8:
    case DType::kBool: return 1;
  }
  return 1;
}

const char* DTypeName(DType t) {
  switch (t) {
    case DType::kFloat32: return "float32";
    case DType::kFloat16: return "float16";
    case DType::kBFloat16: return "bfloat16";
    case DType::kFloat64: return "float64";
    case DType::kInt64: return "int64";
    case DType::kInt32: return "int32";
    case DType::kInt16: return "int16";
    case DType::kInt8: return "int8";
    case DType::kUInt8: return "uint8";
    case DType::kBool: return "bool";
  }
  return "?";
}

int64_t CheckpointTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0 || __builtin_mul_overflow(n, d, &n)) return -1;
  }
  return n;
}

double CheckpointTensor::At(int64_t i) const {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  if (storage == nullptr || i < 0 || i >= numel() || strides.size() != shape.size()) return kNaN;
  // Tensors from ReadCheckpoint are range-checked; a hand-built one gets NaN, not a bad read.
  uint64_t offset = static_cast<uint64_t>(storage_offset);
  for (size_t d = shape.size(); d-- > 0;) {
    offset += static_cast<uint64_t>(i % shape[d]) * static_cast<uint64_t>(strides[d]);
    i /= shape[d];
  }
  const auto size = static_cast<uint64_t>(DTypeSize(dtype));
  if (storage_offset < 0 || offset >= storage->size() / size) return kNaN;
  const char* p = storage->data() + offset * size;
  switch (dtype) {
    case DType::kFloat32: return static_cast<double>(Load<float>(p));
    case DType::kFloat16: return static_cast<double>(HalfToFloat(Load<uint16_t>(p)));
    case DType::kBFloat16:
      return static_cast<double>(std::bit_cast<float>(uint32_t{Load<uint16_t>(p)} << 16));
    case DType::kFloat64: return Load<double>(p);
    case DType::kInt64: return static_cast<double>(Load<int64_t>(p));
    case DType::kInt32: return Load<int32_t>(p);
    case DType::kInt16: return Load<int16_t>(p);
    case DType::kInt8: return Load<int8_t>(p);
    case DType::kUInt8: return Load<uint8_t>(p);
    case DType::kBool: return Load<uint8_t>(p) != 0 ? 1.0 : 0.0;
  }
  return kNaN;
}

absl::StatusOr<Checkpoint> ReadCheckpointBytes(const std::string& bytes, const std::string& what) {
  if (absl::StartsWith(bytes, absl::string_view(kLegacyMagic, sizeof kLegacyMagic - 1))) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": legacy (pre-1.6, non-zip) torch.save format is not supported; re-save it with "
              "torch.save from PyTorch >= 1.6"));
  }
  ASSIGN_OR_RETURN(auto zip, ZipArchive::Open(bytes, what));
  const ZipEntry* pkl = FindDataPickle(zip);
  if (pkl == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": no <archive>/data.pkl entry: a zip, but not one torch.save wrote"));
  }
  const std::string prefix = pkl->name.substr(0, pkl->name.size() - std::strlen("data.pkl"));
  if (const ZipEntry* order = zip.Find(prefix + "byteorder"); order != nullptr) {
    ASSIGN_OR_RETURN(auto text, zip.Read(*order));
    if (text != "little") {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": storages are ", text, "-endian; only little-endian is read"));
    }
  }
  ASSIGN_OR_RETURN(auto pickle, zip.Read(*pkl));
  ASSIGN_OR_RETURN(auto graph, Unpickle(pickle, absl::StrCat(what, ": ", pkl->name)));
  return ConvertCheckpoint(graph, zip, prefix, what);
}

absl::StatusOr<Checkpoint> ReadCheckpoint(const std::string& path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (!std::filesystem::exists(status)) {
    return absl::NotFoundError(absl::StrCat("no such checkpoint: ", path));
  }
  if (!std::filesystem::is_regular_file(status)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a regular file"));
  }
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot open ", path, ": ", std::strerror(errno)));
  }
  // The magic bytes first (issue 40 A.9: 2 GiB of zeros was read whole, 8.8 s and +2 GiB of
  // memory, before it was refused): a torch.save file is a zip ("PK\3\4") or, before
  // PyTorch 1.6, a pickle (refused with its own message below).
  char magic[4] = {};
  const size_t got = std::fread(magic, 1, sizeof magic, f);
  const absl::string_view head(magic, got);
  if (head != absl::string_view("PK\x03\x04", 4) &&
      !absl::StartsWith(absl::string_view(kLegacyMagic, sizeof kLegacyMagic - 1), head.substr(0, 2))) {
    std::fclose(f);
    return absl::InvalidArgumentError(absl::StrCat(
        path, " is not a torch.save checkpoint: it starts with bytes ",
        absl::BytesToHexString(head), " where a checkpoint (a zip archive) starts with 504b0304; "
        "give a .pt saved by torch.save (or a TorchScript export to `profile infer`)"));
  }
  std::rewind(f);
  // Whole-file read: checkpoints are tens of MB and every storage is copied out anyway.
  std::string bytes;
  char buf[1 << 16];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) bytes.append(buf, n);
  const bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (failed) return absl::DataLossError(absl::StrCat("read error on ", path));
  return ReadCheckpointBytes(bytes, path);
}

}  // namespace libreyolo::engine
