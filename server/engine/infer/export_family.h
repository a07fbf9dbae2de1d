// The model families the Python LibreYOLO 1.6.0 exports to TorchScript, and what each export
// wants: one row per family, read from the Python tool's own TorchScript backend
// (tests/engine/torchscript/FAMILIES.md has the contract with file:line, and check_spec.py an
// independent re-implementation). Torch-free: the metadata a `.torchscript` archive carries
// (its extra file libreyolo_metadata.json) is parsed here too.
#ifndef LIBREYOLO_SERVER_ENGINE_INFER_EXPORT_FAMILY_H_
#define LIBREYOLO_SERVER_ENGINE_INFER_EXPORT_FAMILY_H_

#include <cstdint>
#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/status/statusor.h"

namespace libreyolo::engine {

// How the image becomes the module's input canvas.
enum class ExportResize {
  kLetterboxCv,   // scale to fit, cv2 INTER_LINEAR, pad 114 (yolo9: letterbox_pad picks where)
  kLetterboxPil,  // scale to fit, PIL BILINEAR, pad 114 in the top-left
  kStretchPil,    // stretch to the canvas, PIL BILINEAR
  kStretchCv,     // stretch to the canvas, cv2 INTER_LINEAR
};
// What the module returns and how detections come out of it.
enum class ExportOutput {
  kDenseXyxy,    // [B, 4 + nc, N]: xyxy canvas pixels, sigmoided class scores; multi-label
  kYoloxCxcywh,  // [B, N, 5 + nc]: cxcywh canvas pixels, objectness, class scores; single-label
  kDetr,         // (logits [B, Q, nc], boxes [B, Q, 4] normalised cxcywh): top-k, no NMS
};
enum class ExportNms { kClassAware, kAgnostic, kNone };

struct ExportFamily {
  absl::string_view name;    // metadata's model_family
  absl::string_view prefix;  // the Python tool's file name prefix: LibreYOLOX + size
  ExportResize resize;
  bool bgr;            // channels B, G, R (YOLOX); otherwise R, G, B
  bool unit_range;     // / 255
  bool imagenet_norm;  // (x - mean) / std after / 255 (LW-DETR)
  ExportOutput output;
  ExportNms nms;
  bool rectangular;  // a canvas may be H != W
  // DETR: the top-k cap of the family's t size besides max_det (LW-DETR t: 100; other sizes 300),
  // and COCO-91 logits cut to 80 ids.
  int64_t small_size_top_k = 0;
  bool coco91_logits = false;
};

// nullptr for a family this engine does not run.
const ExportFamily* FindExportFamily(absl::string_view model_family);
// "yolo9, yolox, ..." for messages.
std::string ExportFamilyNames();
// The COCO category ids (1..90) of the 80 classes, in class order (LW-DETR's 91 logits).
const std::vector<int64_t>& Coco91CategoryIds();

// What a LibreYOLO export says about itself (libreyolo_metadata.json).
struct ExportMetadata {
  const ExportFamily* family = nullptr;
  std::string size;           // "t", "n", "r18" ...
  std::string task;           // "detect"
  std::string precision;      // "fp32" / "fp16"
  std::string letterbox_pad;  // "topleft" (default) / "center"
  std::string libreyolo_version;
  int64_t num_classes = 80;
  std::vector<std::string> class_names;
  int64_t height = 640, width = 640;  // the traced input canvas
  std::string Label() const;          // "LibreYOLOXn"
};

// `json`: the extra file's text; `what` names the file in errors. INVALID_ARGUMENT naming the
// problem: not JSON, no model_family, a family or task this engine does not run (with the ones
// it does), sizes out of 32..4096, a class count out of 1..100000.
absl::StatusOr<ExportMetadata> ParseExportMetadata(absl::string_view json, absl::string_view what);

}  // namespace libreyolo::engine

#endif  // LIBREYOLO_SERVER_ENGINE_INFER_EXPORT_FAMILY_H_
