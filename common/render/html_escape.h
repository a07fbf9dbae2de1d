// HTML escaping: the one place every string that goes into an HTML page (text, attributes,
// inline SVG) passes through.
#ifndef LIBREYOLO_COMMON_RENDER_HTML_ESCAPE_H_
#define LIBREYOLO_COMMON_RENDER_HTML_ESCAPE_H_

#include <cstddef>
#include <string>
#include <string_view>

namespace libreyolo {

// Escapes & < > " ' so the result is safe as element text and as a quoted attribute value.
// Bytes that are not valid UTF-8 and control characters other than tab/newline become U+FFFD,
// so a hostile name cannot break the page's encoding either.
std::string HtmlEscape(std::string_view s);

// HtmlEscape of `s` cut to at most `max_chars` characters (UTF-8 aware), with "…" appended when
// cut: for names that may be thousands of characters long.
std::string HtmlEscapeCut(std::string_view s, size_t max_chars);

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_RENDER_HTML_ESCAPE_H_
