#include "server/engine/data/image_header.h"

#include <cstddef>

namespace libreyolo::engine {
namespace {

uint32_t Be16(absl::string_view b, size_t at) {
  return (static_cast<uint32_t>(static_cast<uint8_t>(b[at])) << 8) |
         static_cast<uint8_t>(b[at + 1]);
}
uint32_t Be32(absl::string_view b, size_t at) { return (Be16(b, at) << 16) | Be16(b, at + 2); }
uint32_t Le16(absl::string_view b, size_t at) {
  return static_cast<uint8_t>(b[at]) | (static_cast<uint32_t>(static_cast<uint8_t>(b[at + 1])) << 8);
}
uint32_t Le24(absl::string_view b, size_t at) {
  return Le16(b, at) | (static_cast<uint32_t>(static_cast<uint8_t>(b[at + 2])) << 16);
}
uint32_t Le32(absl::string_view b, size_t at) { return Le16(b, at) | (Le16(b, at + 2) << 16); }

std::optional<ImageSize> Png(absl::string_view b) {
  // Signature, then the IHDR chunk: length, "IHDR", width, height (big-endian).
  if (b.size() < 24 || b.substr(12, 4) != "IHDR") return std::nullopt;
  return ImageSize{Be32(b, 16), Be32(b, 20)};
}

std::optional<ImageSize> Jpeg(absl::string_view b) {
  // Segments from offset 2: 0xFF, a marker, a big-endian length (standalone markers have none)
  // until a start-of-frame (C0-CF but C4 DHT, C8 JPG, CC DAC): precision, height, width.
  size_t at = 2;
  while (at + 4 <= b.size()) {
    if (static_cast<uint8_t>(b[at]) != 0xFF) return std::nullopt;
    const uint8_t marker = static_cast<uint8_t>(b[at + 1]);
    if (marker == 0xFF) {  // fill byte
      ++at;
      continue;
    }
    if (marker == 0xD8 || marker == 0x01 || (marker >= 0xD0 && marker <= 0xD7)) {
      at += 2;
      continue;
    }
    const uint32_t length = Be16(b, at + 2);
    if (length < 2) return std::nullopt;
    const bool sof = marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 &&
                     marker != 0xCC;
    if (sof) {
      if (at + 9 > b.size()) return std::nullopt;
      return ImageSize{Be16(b, at + 7), Be16(b, at + 5)};
    }
    at += 2 + length;
  }
  return std::nullopt;
}

std::optional<ImageSize> Bmp(absl::string_view b) {
  if (b.size() < 26) return std::nullopt;
  const uint32_t header = Le32(b, 14);
  if (header == 12) return ImageSize{Le16(b, 18), Le16(b, 20)};  // OS/2 BITMAPCOREHEADER
  const int32_t w = static_cast<int32_t>(Le32(b, 18)), h = static_cast<int32_t>(Le32(b, 22));
  return ImageSize{w < 0 ? -int64_t{w} : w, h < 0 ? -int64_t{h} : h};  // top-down: negative
}

std::optional<ImageSize> WebP(absl::string_view b) {
  if (b.size() < 30) return std::nullopt;
  const absl::string_view chunk = b.substr(12, 4);
  if (chunk == "VP8 ") {  // lossy: 14-bit sizes after the frame tag and start code
    return ImageSize{Le16(b, 26) & 0x3FFF, Le16(b, 28) & 0x3FFF};
  }
  if (chunk == "VP8L") {  // lossless: 0x2F, then 14-bit width-1 and height-1
    const uint32_t bits = Le32(b, 21);
    return ImageSize{(bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1};
  }
  if (chunk == "VP8X") {  // extended: 24-bit canvas width-1 and height-1
    return ImageSize{Le24(b, 24) + 1, Le24(b, 27) + 1};
  }
  return std::nullopt;
}

}  // namespace

std::optional<ImageSize> DeclaredImageSize(absl::string_view b) {
  if (b.substr(0, 8) == absl::string_view("\x89PNG\r\n\x1a\n", 8)) return Png(b);
  if (b.size() >= 3 && b.substr(0, 3) == absl::string_view("\xFF\xD8\xFF", 3)) return Jpeg(b);
  if (b.substr(0, 2) == "BM") return Bmp(b);
  if (b.size() >= 10 && (b.substr(0, 6) == "GIF87a" || b.substr(0, 6) == "GIF89a")) {
    return ImageSize{Le16(b, 6), Le16(b, 8)};
  }
  if (b.size() >= 12 && b.substr(0, 4) == "RIFF" && b.substr(8, 4) == "WEBP") return WebP(b);
  return std::nullopt;
}

}  // namespace libreyolo::engine
