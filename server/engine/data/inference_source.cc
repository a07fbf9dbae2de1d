#include "server/engine/data/inference_source.h"

#include <filesystem>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/io/file_reader.h"
#include "server/engine/data/image_io.h"
#include "common/status/status_macros.h"
#include "server/engine/data/synthetic.h"

namespace libreyolo::engine {

absl::StatusOr<InferenceSource> ResolveInferenceSource(const std::string& source) {
  InferenceSource out;
  if (source.empty()) {
    out.sample = true;
    out.paths.push_back(kSampleImageName);
    return out;
  }
  std::error_code ec;
  const std::filesystem::path path(source);
  if (std::filesystem::is_directory(path, ec)) {
    ASSIGN_OR_RETURN(out.paths, ListImages(source, /*recursive=*/false));
    if (out.paths.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("no images in folder '", source,
                                                     "' (looked for ", ImageExtensionList(),
                                                     "); put images there or pass an image file"));
    }
    return out;
  }
  if (!std::filesystem::exists(path, ec)) {
    return absl::NotFoundError(
        absl::StrCat("source '", source,
                     "' does not exist; pass an image, a folder of images, or nothing "
                     "for the built-in sample image"));
  }
  if (!HasImageExtension(source)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "source '", source, "' is not an image (accepted: ", ImageExtensionList(), ")"));
  }
  // A FIFO named x.jpg would block the job until a writer came; a device would never end.
  if (const std::optional<std::string> kind = NonRegularFileKind(source)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "source '", source, "' is ", *kind, ", not an image file: pass an image, a folder of "
        "images, or nothing for the built-in sample image"));
  }
  out.paths.push_back(source);
  return out;
}

absl::StatusOr<cv::Mat> LoadInferenceImage(const InferenceSource& source, size_t index,
                                           int64_t max_pixels) {
  if (index >= source.paths.size()) {
    return absl::OutOfRangeError(
        absl::StrCat("inference image ", index, " of ", source.paths.size()));
  }
  if (source.sample) return MakeSampleImage();
  return DecodeImageFile(source.paths[index], max_pixels);
}

}  // namespace libreyolo::engine
