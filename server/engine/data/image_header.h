// The pixel size an encoded image declares in its header, read before anything is decoded
// (issue 40 A.9: a 380 KB PNG of 20000 x 20000 decoded to +1.1 GiB per job). Plain C++: PNG,
// JPEG, BMP, GIF and WebP headers; other formats (TIFF, ...) are left to OpenCV's own bound.
#ifndef LIBREYOLO_SERVER_ENGINE_DATA_IMAGE_HEADER_H_
#define LIBREYOLO_SERVER_ENGINE_DATA_IMAGE_HEADER_H_

#include <cstdint>
#include <optional>

#include "absl/strings/string_view.h"

namespace libreyolo::engine {

// The most pixels the engine decodes from one image: 2^26 (8192 x 8192; 192 MiB as 8-bit BGR).
// A bigger one is refused before decoding with its size and this bound. OpenCV's own bound
// (OPENCV_IO_MAX_IMAGE_PIXELS, 2^30) still applies to formats not read here.
inline constexpr int64_t kMaxDecodedPixels = int64_t{1} << 26;

struct ImageSize {
  int64_t width = 0, height = 0;
};

// The width and height `bytes` declare; nullopt for a format not read here or a header too
// short or malformed to say (the decoder then says what is wrong).
std::optional<ImageSize> DeclaredImageSize(absl::string_view bytes);

}  // namespace libreyolo::engine

#endif  // LIBREYOLO_SERVER_ENGINE_DATA_IMAGE_HEADER_H_
