// Image files: which extensions count as images, listing them, finding an image's label file,
// and decoding with OpenCV into BGR uint8 (what every transform here takes).
#ifndef LIBREYOLO_SERVER_ENGINE_DATA_IMAGE_IO_H_
#define LIBREYOLO_SERVER_ENGINE_DATA_IMAGE_IO_H_

#include <array>
#include <cstdint>
#include <opencv2/core.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/io/image_extensions.h"
#include "server/engine/data/image_header.h"

namespace libreyolo::engine {

// Which files are images (kImageExtensions, HasImageExtension, ImageExtensionList): one list
// for the client, the daemon and the engine, in common/io/image_extensions.h.
using ::libreyolo::HasImageExtension;
using ::libreyolo::ImageExtensionList;

// The images in `dir`, sorted by path; `recursive` descends into sub-folders (dataset splits
// do, inference sources do not). NOT_FOUND if `dir` is not a folder; an empty result is not an
// error here (the callers word that error for their context).
absl::StatusOr<std::vector<std::string>> ListImages(const std::string& dir, bool recursive);

// The images a dataset split names: folders (recursive), .txt lists (one path a line, '#'
// comments, relative to the list's folder) and single images. NOT_FOUND naming `origin` (the
// YAML line) for a source that does not exist.
absl::StatusOr<std::vector<std::string>> ListSplitImages(const std::vector<std::string>& sources,
                                                         const std::string& origin);

// YOLO convention: the last "/images/" becomes "/labels/" and the extension ".txt"
// (".../images/train/a.jpg" -> ".../labels/train/a.txt"); without an images folder, the
// label sits beside the image.
std::string LabelPathForImage(const std::string& image_path);

// Reads and decodes an image as 3-channel BGR uint8, its pixels as stored: an EXIF orientation
// is not applied (the Python LibreYOLO does not apply it either). NOT_FOUND for a missing file,
// INVALID_ARGUMENT naming the file for one OpenCV cannot decode (corrupt or unsupported).
// `max_pixels` bounds width x height (a daemon's limits.max_decoded_pixels, else
// kMaxDecodedPixels): an image over it is INVALID_ARGUMENT naming its size, the bound and the
// daemon option that raises it, refused from its header before decoding where the header says
// (image_header.h), else after.
absl::StatusOr<cv::Mat> DecodeImageFile(const std::string& path,
                                        int64_t max_pixels = kMaxDecodedPixels);
absl::StatusOr<cv::Mat> DecodeImageBytes(const std::string& bytes, const std::string& what,
                                         int64_t max_pixels = kMaxDecodedPixels);

}  // namespace libreyolo::engine

#endif  // LIBREYOLO_SERVER_ENGINE_DATA_IMAGE_IO_H_
