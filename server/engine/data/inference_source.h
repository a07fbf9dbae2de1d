// What `profile infer [<source>]` reads: one image file, a folder of images (not recursive,
// sorted by name), or, with no source, the project's own sample image (synthetic.h).
#ifndef LIBREYOLO_SERVER_ENGINE_DATA_INFERENCE_SOURCE_H_
#define LIBREYOLO_SERVER_ENGINE_DATA_INFERENCE_SOURCE_H_

#include <cstddef>
#include <cstdint>
#include <opencv2/core.hpp>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/engine/data/image_header.h"

namespace libreyolo::engine {

struct InferenceSource {
  // Image paths in order; for the sample image, the single entry kSampleImageName.
  std::vector<std::string> paths;
  bool sample = false;
  size_t size() const { return paths.size(); }
};

// "" -> the sample image. An image file (by extension) -> itself. A folder -> its images,
// sorted; none -> INVALID_ARGUMENT naming the folder and the extensions looked for. A path
// that does not exist -> NOT_FOUND; a file of another type -> INVALID_ARGUMENT listing the
// accepted extensions.
absl::StatusOr<InferenceSource> ResolveInferenceSource(const std::string& source);

// Image `index` of the source, decoded as BGR uint8 (the sample is generated); an image over
// `max_pixels` (width x height: InferJobSpec.max_decoded_pixels) is refused (image_io.h).
absl::StatusOr<cv::Mat> LoadInferenceImage(const InferenceSource& source, size_t index,
                                           int64_t max_pixels = kMaxDecodedPixels);

}  // namespace libreyolo::engine

#endif  // LIBREYOLO_SERVER_ENGINE_DATA_INFERENCE_SOURCE_H_
