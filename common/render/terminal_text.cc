#include "common/render/terminal_text.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/render/utf8.h"

namespace libreyolo {
namespace {

void AppendHex(std::string& out, std::string_view bytes) {
  for (const char c : bytes) absl::StrAppendFormat(&out, "\\x%02x", static_cast<uint8_t>(c));
}

}  // namespace

bool IsTerminalControl(uint32_t cp) {
  return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || cp == 0x061C || cp == 0x200E ||
         cp == 0x200F || (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

bool IsPrintableUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    uint32_t cp = 0;
    const size_t n = Utf8Length(s, i, &cp);
    if (n == 0 || IsTerminalControl(cp)) return false;
    i += n;
  }
  return true;
}

std::string TerminalSafe(std::string_view s, bool multiline) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    uint32_t cp = 0;
    const size_t n = Utf8Length(s, i, &cp);
    if (n == 0) {
      AppendHex(out, s.substr(i, 1));
      ++i;
      continue;
    }
    if (IsTerminalControl(cp) && !(multiline && (cp == '\n' || cp == '\t'))) {
      AppendHex(out, s.substr(i, n));
    } else {
      out.append(s.substr(i, n));
    }
    i += n;
  }
  return out;
}

std::string Excerpt(std::string_view s, size_t max_bytes) {
  if (s.size() <= max_bytes) return TerminalSafe(s);
  size_t cut = 0;
  while (cut < s.size()) {
    const size_t n = Utf8Length(s, cut);
    const size_t step = n == 0 ? 1 : n;
    if (cut + step > max_bytes) break;
    cut += step;
  }
  return absl::StrCat(TerminalSafe(s.substr(0, cut)), "\xE2\x80\xA6 (", s.size(), " bytes)");
}

}  // namespace libreyolo
