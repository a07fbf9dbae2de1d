#include "server/engine/data/image_io.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <opencv2/imgcodecs.hpp>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/io/file_reader.h"
#include "common/status/status_macros.h"
#include "server/engine/data/dataset_spec.h"
#include "server/engine/data/image_header.h"

namespace libreyolo::engine {
namespace {

namespace fs = std::filesystem;

absl::Status AddListFile(const fs::path& list, std::vector<std::string>* out) {
  std::ifstream in(list);
  if (!in) {
    return absl::NotFoundError(absl::StrCat("image list '", list.string(), "' cannot be read"));
  }
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    const absl::string_view entry = absl::StripAsciiWhitespace(line);
    if (entry.empty() || entry.front() == '#') continue;
    fs::path p{std::string(entry)};
    if (p.is_relative()) p = list.parent_path() / p;
    std::error_code ec;
    if (!fs::is_regular_file(p, ec)) {
      return absl::NotFoundError(absl::StrCat(list.string(), ":", line_no, ": image '", p.string(),
                                              "' does not exist; fix or remove "
                                              "the line"));
    }
    out->push_back(p.lexically_normal().string());
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<std::string>> ListImages(const std::string& dir, bool recursive) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return absl::NotFoundError(absl::StrCat("'", dir, "' is not a folder"));
  }
  std::vector<std::string> out;
  auto take = [&](const fs::directory_entry& entry) {
    std::error_code file_ec;
    if (entry.is_regular_file(file_ec) && HasImageExtension(entry.path().string())) {
      out.push_back(entry.path().string());
    }
  };
  if (recursive) {
    for (auto it = fs::recursive_directory_iterator(dir, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      take(*it);
    }
  } else {
    for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator();
         it.increment(ec)) {
      take(*it);
    }
  }
  if (ec) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot list folder '", dir, "': ", ec.message()));
  }
  // Directory iteration order is file-system dependent; sorting makes runs reproducible.
  std::sort(out.begin(), out.end());
  return out;
}

absl::StatusOr<std::vector<std::string>> ListSplitImages(const std::vector<std::string>& sources,
                                                         const std::string& origin) {
  std::vector<std::string> out;
  for (const std::string& source : sources) {
    std::error_code ec;
    if (fs::is_directory(source, ec)) {
      ASSIGN_OR_RETURN(std::vector<std::string> images, ListImages(source, /*recursive=*/true));
      out.insert(out.end(), images.begin(), images.end());
    } else if (fs::is_regular_file(source, ec) &&
               absl::AsciiStrToLower(fs::path(source).extension().string()) == ".txt") {
      RETURN_IF_ERROR(AddListFile(source, &out));
    } else if (fs::is_regular_file(source, ec) && HasImageExtension(source)) {
      out.push_back(source);
    } else if (fs::exists(source, ec)) {
      return absl::InvalidArgumentError(absl::StrCat(
          origin, ": '", source, "' is neither a folder, a .txt image list nor an image (",
          ImageExtensionList(), ")"));
    } else {
      return absl::NotFoundError(
          absl::StrCat(origin, ": '", source, "' does not exist; ", kNeverDownloads,
                       ": put the images there, or fix 'path' and the split in the YAML"));
    }
  }
  return out;
}

std::string LabelPathForImage(const std::string& image_path) {
  std::string path = image_path;
  const size_t pos = path.rfind("/images/");
  if (pos != std::string::npos) path.replace(pos, 8, "/labels/");
  return fs::path(path).replace_extension(".txt").string();
}

namespace {

// An image of `width` x `height` over `max_pixels`: its size, the bound, and the ways out.
absl::Status OverPixelBound(const std::string& what, int64_t width, int64_t height,
                            int64_t max_pixels) {
  const auto side = static_cast<int64_t>(std::sqrt(static_cast<double>(max_pixels)));
  return absl::InvalidArgumentError(absl::StrCat(
      "image '", what, "' is ", width, " x ", height, " pixels, over the bound of ",
      max_pixels, " decoded pixels",
      side * side == max_pixels ? absl::StrCat(" (", side, " x ", side, ")") : "",
      ": resize it (the model sees at most --imgsz anyway) or leave it out; a daemon's bound "
      "is its limits.max_decoded_pixels (--max-decoded-pixels)"));
}

}  // namespace

absl::StatusOr<cv::Mat> DecodeImageBytes(const std::string& bytes, const std::string& what,
                                         int64_t max_pixels) {
  if (bytes.empty()) {  // OpenCV's answer would be an assertion, "!buf.empty()"
    return absl::InvalidArgumentError(
        absl::StrCat("image '", what, "' is an empty file (0 bytes); replace or delete it"));
  }
  // The size its header declares, before a byte is decoded (issue 40 A.9: a few hundred KB of
  // PNG used to decode to gigabytes).
  if (const std::optional<ImageSize> size = DeclaredImageSize(bytes); size) {
    if (size->width <= 0 || size->height <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("image '", what, "' declares ", size->width, " x ", size->height,
                       " pixels: an empty image; replace or delete the file"));
    }
    if (size->width > max_pixels / size->height) {
      return OverPixelBound(what, size->width, size->height, max_pixels);
    }
  }
  cv::Mat image;
  try {
    // Wrap without copying; imdecode only reads the buffer.
    const cv::Mat raw(1, static_cast<int>(bytes.size()), CV_8UC1, const_cast<char*>(bytes.data()));
    // Pixels as stored, as the Python LibreYOLO reads them (PIL's Image.open().convert("RGB") for
    // inference, cv2.imread(IMREAD_UNCHANGED) for training: neither applies an EXIF orientation;
    // its `doctor` warns about such images). OpenCV's IMREAD_COLOR alone would rotate them, so
    // a rotated photo would give other detections than the Python tool's and boxes that no
    // longer fit its labels.
    image = cv::imdecode(raw, cv::IMREAD_COLOR | cv::IMREAD_IGNORE_ORIENTATION);
  } catch (const cv::Exception& e) {
    // OpenCV's what() spans lines ("OpenCV(4.6.0) file:line: error: (-215...) ...\n"): one line.
    const std::string why = absl::StrJoin(absl::StrSplit(e.what(), '\n', absl::SkipWhitespace()),
                                          " ");
    return absl::InvalidArgumentError(absl::StrCat("image '", what, "' cannot be decoded (",
                                                   absl::StripAsciiWhitespace(why),
                                                   "); replace or delete the file"));
  }
  if (image.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("image '", what,
                     "' cannot be decoded: the file is corrupt or not an image OpenCV "
                     "reads (",
                     ImageExtensionList(), "); replace or delete it"));
  }
  // A format whose header is not read here (TIFF, ...) was bounded by OpenCV's own 2^30 only.
  if (image.cols > max_pixels / std::max(1, image.rows)) {
    return OverPixelBound(what, image.cols, image.rows, max_pixels);
  }
  return image;
}

absl::StatusOr<cv::Mat> DecodeImageFile(const std::string& path, int64_t max_pixels) {
  // A .txt image list may name anything: a FIFO blocks, /dev/zero never ends.
  if (const std::optional<std::string> kind = NonRegularFileKind(path)) {
    return absl::InvalidArgumentError(
        absl::StrCat("image '", path, "' is ", *kind, ", not an image file"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(absl::StrCat("image '", path,
                                            "' cannot be opened; check that "
                                            "it exists and is readable"));
  }
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return DecodeImageBytes(bytes.str(), path, max_pixels);
}

}  // namespace libreyolo::engine
