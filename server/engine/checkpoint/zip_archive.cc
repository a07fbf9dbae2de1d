#include "server/engine/checkpoint/zip_archive.h"

#include <zlib.h>

#include <algorithm>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status/status_macros.h"

namespace libreyolo::engine {
namespace {

constexpr uint32_t kLocalHeaderSig = 0x04034b50;
constexpr uint32_t kCentralHeaderSig = 0x02014b50;
constexpr uint32_t kEndOfCentralDirSig = 0x06054b50;
constexpr uint32_t kZip64LocatorSig = 0x07064b50;
constexpr uint32_t kZip64EndSig = 0x06064b50;
constexpr size_t kEndOfCentralDirSize = 22;
constexpr size_t kZip64LocatorSize = 20;
constexpr size_t kZip64EndSize = 56;
constexpr size_t kCentralHeaderSize = 46;
constexpr size_t kLocalHeaderSize = 30;
constexpr size_t kMaxCommentSize = 0xffff;
// Deflate cannot expand data more than ~1032:1, so a larger claim is a lie (or a zip bomb) and
// is refused before anything is allocated for it.
constexpr uint64_t kMaxDeflateRatio = 1032;
constexpr uint64_t kMinInflateBudget = uint64_t{256} << 20;
constexpr uint64_t kInflateBudgetPerByte = 16;

// Callers bound-check first; these only assemble little-endian integers.
uint64_t Le(absl::string_view b, size_t at, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) {
    v = v << 8 | static_cast<uint8_t>(b[at + static_cast<size_t>(i)]);
  }
  return v;
}
uint16_t Le16(absl::string_view b, size_t at) { return static_cast<uint16_t>(Le(b, at, 2)); }
uint32_t Le32(absl::string_view b, size_t at) { return static_cast<uint32_t>(Le(b, at, 4)); }
uint64_t Le64(absl::string_view b, size_t at) { return Le(b, at, 8); }

void PutLe(std::string* out, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint32_t Crc32(absl::string_view data) {
  uLong crc = crc32(0L, Z_NULL, 0);
  while (!data.empty()) {
    const size_t n = std::min<size_t>(data.size(), size_t{1} << 30);
    crc = crc32(crc, reinterpret_cast<const Bytef*>(data.data()), static_cast<uInt>(n));
    data.remove_prefix(n);
  }
  return static_cast<uint32_t>(crc);
}

// Raw deflate (zip stores no zlib header) into exactly `out->size()` bytes.
bool Inflate(absl::string_view in, std::string* out) {
  z_stream zs{};
  if (inflateInit2(&zs, -MAX_WBITS) != Z_OK) return false;
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  zs.next_out = reinterpret_cast<Bytef*>(out->data());
  zs.avail_out = static_cast<uInt>(out->size());
  const int rc = inflate(&zs, Z_FINISH);
  const bool ok = rc == Z_STREAM_END && zs.total_out == out->size();
  inflateEnd(&zs);
  return ok;
}

}  // namespace

absl::StatusOr<ZipArchive> ZipArchive::Open(absl::string_view bytes, std::string what) {
  ZipArchive zip(bytes, std::move(what));
  RETURN_IF_ERROR(zip.ReadCentralDirectory());
  return zip;
}

absl::Status ZipArchive::ReadCentralDirectory() {
  const auto bad = [this](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat(what_, ": ", why));
  };
  if (bytes_.size() < kEndOfCentralDirSize || Le32(bytes_, 0) != kLocalHeaderSig) {
    return bad("not a zip archive (torch.save writes zip files starting with \"PK\")");
  }
  // The end record sits at the very end unless an archive comment follows it.
  size_t eocd = absl::string_view::npos;
  const size_t lowest = bytes_.size() > kEndOfCentralDirSize + kMaxCommentSize
                            ? bytes_.size() - kEndOfCentralDirSize - kMaxCommentSize
                            : 0;
  for (size_t at = bytes_.size() - kEndOfCentralDirSize + 1; at-- > lowest;) {
    if (Le32(bytes_, at) == kEndOfCentralDirSig) {
      eocd = at;
      break;
    }
  }
  if (eocd == absl::string_view::npos) {
    return bad("truncated zip archive: no end-of-central-directory record");
  }
  uint64_t count = Le16(bytes_, eocd + 10);
  uint64_t dir_size = Le32(bytes_, eocd + 12);
  uint64_t dir_offset = Le32(bytes_, eocd + 16);
  if (count == 0xffff || dir_size == 0xffffffff || dir_offset == 0xffffffff) {
    // Saturated fields mean zip64, unless there is no locator (then 65535 entries is real).
    if (eocd >= kZip64LocatorSize &&
        Le32(bytes_, eocd - kZip64LocatorSize) == kZip64LocatorSig) {
      const uint64_t end64 = Le64(bytes_, eocd - kZip64LocatorSize + 8);
      if (end64 > eocd || eocd - end64 < kZip64EndSize || Le32(bytes_, end64) != kZip64EndSig) {
        return bad("truncated zip archive: bad zip64 end record");
      }
      count = Le64(bytes_, end64 + 32);
      dir_size = Le64(bytes_, end64 + 40);
      dir_offset = Le64(bytes_, end64 + 48);
    }
  }
  if (dir_offset > eocd || dir_size > eocd - dir_offset ||
      count > dir_size / kCentralHeaderSize) {
    return bad("truncated zip archive: central directory out of range");
  }
  const absl::string_view dir = bytes_.substr(dir_offset, dir_size);
  entries_.reserve(count);
  size_t at = 0;
  for (uint64_t i = 0; i < count; ++i) {
    if (dir.size() - at < kCentralHeaderSize || Le32(dir, at) != kCentralHeaderSig) {
      return bad(absl::StrCat("corrupt zip central directory at entry ", i));
    }
    ZipEntry e;
    e.method = Le16(dir, at + 10);
    e.crc32 = Le32(dir, at + 16);
    e.compressed_size = Le32(dir, at + 20);
    e.uncompressed_size = Le32(dir, at + 24);
    const size_t name_len = Le16(dir, at + 28);
    const size_t extra_len = Le16(dir, at + 30);
    const size_t comment_len = Le16(dir, at + 32);
    e.local_header_offset = Le32(dir, at + 42);
    const size_t record = kCentralHeaderSize + name_len + extra_len + comment_len;
    if (dir.size() - at < record) {
      return bad(absl::StrCat("corrupt zip central directory at entry ", i));
    }
    e.name = std::string(dir.substr(at + kCentralHeaderSize, name_len));
    // Zip64 extra field: 64-bit values for exactly those fields saturated above, in this order.
    absl::string_view extra = dir.substr(at + kCentralHeaderSize + name_len, extra_len);
    while (extra.size() >= 4) {
      const uint16_t id = Le16(extra, 0);
      const size_t len = std::min<size_t>(Le16(extra, 2), extra.size() - 4);
      if (id == 0x0001) {
        absl::string_view f = extra.substr(4, len);
        for (uint64_t* field : {&e.uncompressed_size, &e.compressed_size,
                                &e.local_header_offset}) {
          if (*field != 0xffffffff) continue;
          if (f.size() < 8) return bad(absl::StrCat("corrupt zip64 field of ", e.name));
          *field = Le64(f, 0);
          f.remove_prefix(8);
        }
      }
      extra.remove_prefix(4 + len);
    }
    by_name_.try_emplace(e.name, entries_.size());
    entries_.push_back(std::move(e));
    at += record;
  }
  return absl::OkStatus();
}

const ZipEntry* ZipArchive::Find(absl::string_view name) const {
  const auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &entries_[it->second];
}

absl::StatusOr<std::string> ZipArchive::Read(const ZipEntry& e) const {
  const auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat(what_, ": zip entry ", e.name, " ", why));
  };
  const uint64_t size = bytes_.size();
  if (e.local_header_offset > size || size - e.local_header_offset < kLocalHeaderSize ||
      Le32(bytes_, e.local_header_offset) != kLocalHeaderSig) {
    return bad("is truncated (local header out of range)");
  }
  // torch pads the local extra field to align data, so its length must come from the local
  // header, not from the central directory.
  const size_t at = static_cast<size_t>(e.local_header_offset);
  const uint64_t start = e.local_header_offset + kLocalHeaderSize + Le16(bytes_, at + 26) +
                         Le16(bytes_, at + 28);
  if (start > size || e.compressed_size > size - start) return bad("is truncated");
  const absl::string_view raw = bytes_.substr(start, e.compressed_size);
  std::string out;
  if (e.method == 0) {
    if (e.compressed_size != e.uncompressed_size) return bad("has inconsistent sizes");
    out.assign(raw.data(), raw.size());
  } else if (e.method == 8) {
    if (e.uncompressed_size > e.compressed_size * kMaxDeflateRatio + 64 ||
        e.compressed_size > std::numeric_limits<uInt>::max() ||
        e.uncompressed_size > std::numeric_limits<uInt>::max()) {
      return bad("has an implausible deflate size");
    }
    const uint64_t budget = std::max(kMinInflateBudget, kInflateBudgetPerByte * size);
    if (e.uncompressed_size > budget - std::min(budget, inflated_)) {
      return bad("would inflate the archive beyond 16x its size (a zip bomb?)");
    }
    inflated_ += e.uncompressed_size;
    out.resize(e.uncompressed_size);
    if (!Inflate(raw, &out)) return bad("has corrupt deflate data");
  } else {
    return bad(absl::StrCat("uses unsupported compression method ", e.method,
                            " (only stored and deflate are read)"));
  }
  if (Crc32(out) != e.crc32) return bad("fails its CRC check (the file is corrupt)");
  return out;
}

std::string WriteStoredZip(const std::vector<std::pair<std::string, std::string>>& entries) {
  std::string out;
  std::string dir;
  for (const auto& [name, data] : entries) {
    const uint32_t crc = Crc32(data);
    const size_t offset = out.size();
    for (std::string* h : {&out, &dir}) {
      const bool central = h == &dir;
      PutLe(h, central ? kCentralHeaderSig : kLocalHeaderSig, 4);
      if (central) PutLe(h, 20, 2);  // version made by
      PutLe(h, 20, 2);               // version needed
      PutLe(h, 0, 2);                // flags
      PutLe(h, 0, 2);                // method: stored
      PutLe(h, 0, 4);                // time, date
      PutLe(h, crc, 4);
      PutLe(h, data.size(), 4);
      PutLe(h, data.size(), 4);
      PutLe(h, name.size(), 2);
      PutLe(h, 0, 2);  // extra length
      if (central) {
        PutLe(h, 0, 8);  // comment length, disk, internal and external attributes
        PutLe(h, 0, 2);
        PutLe(h, offset, 4);
      }
      h->append(name);
    }
    out.append(data);
  }
  const size_t dir_offset = out.size();
  out.append(dir);
  PutLe(&out, kEndOfCentralDirSig, 4);
  PutLe(&out, 0, 4);  // disk numbers
  PutLe(&out, entries.size(), 2);
  PutLe(&out, entries.size(), 2);
  PutLe(&out, dir.size(), 4);
  PutLe(&out, dir_offset, 4);
  PutLe(&out, 0, 2);  // comment length
  return out;
}

}  // namespace libreyolo::engine
