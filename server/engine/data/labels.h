// YOLO label files: one object per line, `class cx cy w h`, all normalised to the image
// (a segmentation line `class x1 y1 x2 y2 x3 y3 ...` is accepted and reduced to its bounding
// box, as the reference does). Errors name the file and line and what is wrong, because a bad
// line found mid-training is far harder to trace back than one reported at load time.
#ifndef LIBREYOLO_SERVER_ENGINE_DATA_LABELS_H_
#define LIBREYOLO_SERVER_ENGINE_DATA_LABELS_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace libreyolo::engine {

// Values may exceed [0, 1] by this much (rounding in converters); they are clipped after.
inline constexpr double kLabelCoordTolerance = 1e-3;

// One object, normalised centre/size, as in the file; cx, cy, w, h already clipped to [0, 1].
struct LabelBox {
  int cls = 0;
  float cx = 0, cy = 0, w = 0, h = 0;
};

// Parses a label file's text. `path` names the file in messages; `num_classes` bounds the
// class ids. Blank lines are skipped. INVALID_ARGUMENT "<path>:<line>: ..." for a wrong field
// count, a non-numeric or non-finite field, a class id that is not an integer in
// [0, num_classes), a coordinate outside [0, 1] beyond the tolerance, or a negative size.
absl::StatusOr<std::vector<LabelBox>> ParseLabelText(std::string_view text, const std::string& path,
                                                     int num_classes);

// Reads and parses a label file. A missing file is an image without objects (a background
// image), not an error; an unreadable one is.
absl::StatusOr<std::vector<LabelBox>> ReadLabelFile(const std::string& path, int num_classes);

}  // namespace libreyolo::engine

#endif  // LIBREYOLO_SERVER_ENGINE_DATA_LABELS_H_
