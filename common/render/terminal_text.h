// Text that came from elsewhere (a daemon's answers, a profile's names) made safe to print to a
// terminal, and the character set the daemon accepts for text that users print (labels).
// The client prints every remote string through TerminalSafe; the daemon echoes request values
// in error messages through Excerpt.
#ifndef LIBREYOLO_COMMON_RENDER_TERMINAL_TEXT_H_
#define LIBREYOLO_COMMON_RENDER_TERMINAL_TEXT_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace libreyolo {

// Code points a terminal interprets rather than shows: C0 controls (U+0000..U+001F), DEL,
// C1 controls (U+0080..U+009F), and the bidirectional formatting characters that reorder what
// is shown (U+061C, U+200E, U+200F, U+202A..U+202E, U+2066..U+2069).
bool IsTerminalControl(uint32_t cp);

// Valid UTF-8 without any IsTerminalControl code point (so also no tab, CR or newline).
bool IsPrintableUtf8(std::string_view s);

// `s` with every byte of an invalid UTF-8 sequence and of an IsTerminalControl code point
// written as \xNN. With `multiline`, newline and tab stay as they are (rendered tables).
std::string TerminalSafe(std::string_view s, bool multiline = false);

// For error messages that echo a value: TerminalSafe of at most the first `max_bytes` bytes
// of `s` (cut at a character boundary), followed by "… (N bytes)" when `s` is longer.
std::string Excerpt(std::string_view s, size_t max_bytes = 64);

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_RENDER_TERMINAL_TEXT_H_
