// Which files are images: the formats `profile infer` accepts (reference §7) and a dataset's
// image folders hold. One list for the client (what it uploads), the daemon (how it names an
// uploaded image) and the engine (what it lists and decodes).
#ifndef LIBREYOLO_COMMON_IO_IMAGE_EXTENSIONS_H_
#define LIBREYOLO_COMMON_IO_IMAGE_EXTENSIONS_H_

#include <array>
#include <string>

#include "absl/strings/string_view.h"

namespace libreyolo {

// Lower case, with the dot.
inline constexpr std::array<absl::string_view, 7> kImageExtensions = {
    ".jpg", ".jpeg", ".png", ".bmp", ".webp", ".tif", ".tiff"};

// Whether `path`'s extension (after its last dot, in its last component) is one of them,
// matched case-insensitively: "a/B.JPG" is; "a.jpg/b", ".jpg" (a hidden file) and "jpg" are not.
bool HasImageExtension(absl::string_view path);

// "*.jpg, *.jpeg, ..." for messages.
std::string ImageExtensionList();

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_IO_IMAGE_EXTENSIONS_H_
