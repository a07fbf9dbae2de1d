// UTF-8 decoding for the escapers (HTML pages, terminals) and the daemon's text checks.
#ifndef LIBREYOLO_COMMON_RENDER_UTF8_H_
#define LIBREYOLO_COMMON_RENDER_UTF8_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace libreyolo {

// Length of the valid UTF-8 sequence starting at s[i] (1..4), its code point in `*cp` when
// given; 0 when the bytes there are not valid UTF-8 (overlong forms, surrogates and values past
// U+10FFFF are invalid).
size_t Utf8Length(std::string_view s, size_t i, uint32_t* cp = nullptr);

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_RENDER_UTF8_H_
