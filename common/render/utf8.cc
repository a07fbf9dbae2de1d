#include "common/render/utf8.h"

namespace libreyolo {

size_t Utf8Length(std::string_view s, size_t i, uint32_t* cp_out) {
  const auto b0 = static_cast<uint8_t>(s[i]);
  size_t n = 0;
  uint32_t cp = 0;
  if (b0 < 0x80) {
    if (cp_out != nullptr) *cp_out = b0;
    return 1;
  }
  if ((b0 & 0xE0) == 0xC0) {
    n = 2;
    cp = b0 & 0x1Fu;
  } else if ((b0 & 0xF0) == 0xE0) {
    n = 3;
    cp = b0 & 0x0Fu;
  } else if ((b0 & 0xF8) == 0xF0) {
    n = 4;
    cp = b0 & 0x07u;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    const auto b = static_cast<uint8_t>(s[i + k]);
    if ((b & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b & 0x3Fu);
  }
  if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
      (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) {
    return 0;
  }
  if (cp_out != nullptr) *cp_out = cp;
  return n;
}

}  // namespace libreyolo
