#include "common/render/html_escape.h"

#include <cstdint>

#include "common/render/utf8.h"

namespace libreyolo {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

void AppendEscaped(std::string& out, std::string_view s, size_t max_chars) {
  size_t chars = 0;
  for (size_t i = 0; i < s.size();) {
    if (chars == max_chars) {
      out += "\xE2\x80\xA6";  // …
      return;
    }
    ++chars;
    const char c = s[i];
    const size_t n = Utf8Length(s, i);
    if (n == 0) {
      out += kReplacement;
      ++i;
      continue;
    }
    if (n > 1) {
      out.append(s.substr(i, n));
      i += n;
      continue;
    }
    ++i;
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      case '\t':
      case '\n':
        out += c;
        break;
      default:
        if (static_cast<uint8_t>(c) < 0x20 || c == 0x7F) {
          out += kReplacement;
        } else {
          out += c;
        }
    }
  }
}

}  // namespace

std::string HtmlEscape(std::string_view s) {
  std::string out;
  out.reserve(s.size() + s.size() / 8);
  AppendEscaped(out, s, SIZE_MAX);
  return out;
}

std::string HtmlEscapeCut(std::string_view s, size_t max_chars) {
  std::string out;
  AppendEscaped(out, s, max_chars);
  return out;
}

}  // namespace libreyolo
