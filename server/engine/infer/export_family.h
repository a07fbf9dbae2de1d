// The model families the Python LibreYOLO 1.6.0 exports to TorchScript, and what each export
// wants: one row per family, read from the Python tool's own TorchScript backend
// (tests/engine/torchscript/FAMILIES.md has the contract with file:line, and check_spec.py an
// independent re-implementation). Torch-free: the metadata a `.torchscript` archive carries
// (its extra file libreyolo_metadata.json) is parsed here too.
#ifndef LIBREYOLO_SERVER_ENGINE_INFER_EXPORT_FAMILY_H_
#define LIBREYOLO_SERVER_ENGINE_INFER_EXPORT_FAMILY_H_

#include <array>
#include <cstdint>
#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/status/statusor.h"
#include "server/engine/infer/task_family.h"

namespace libreyolo::engine {

// How the image becomes the module's input canvas.
enum class ExportResize {
  kLetterboxCv,         // scale to fit, cv2 INTER_LINEAR, pad (yolo9: letterbox_pad picks where)
  kLetterboxPil,        // scale to fit (int()), PIL BILINEAR, pad in the top-left
  kLetterboxPilCenter,  // scale to fit within min(fit_cap, canvas) (round()), PIL, centred (YOLO-NAS)
  kStretchPil,          // stretch to the canvas, PIL BILINEAR
  kStretchCv,           // stretch to the canvas, cv2 INTER_LINEAR
  // CenterNet (models/centernet/utils.py): cv2.warpAffine of the image's centred square (side its
  // longer edge) onto the canvas, INTER_LINEAR, black outside; boxes go back through the inverse.
  kAffineCentre,
  // FCOS (models/fcos/utils.py, torchvision's transform): normalised in float, resized by one
  // scale factor (the shorter edge to imgsz, the longer at most imgsz * 1333 / 800; bilinear,
  // sizes floored), zero-padded bottom-right to a multiple of 32: the canvas is the image's own.
  kScaleFloat,
};
// What the module returns: one decoder per layout, whichever family returns it.
enum class ExportOutput {
  kDenseXyxy,     // [B, 4 + nc, N]: xyxy canvas pixels, class scores in [0, 1]; multi-label
  kDenseTopK,     // [B, 4 + nc, N] end to end: the top max_det anchors, then top-k pairs; no NMS
  kRowsXyxy,      // [B, N, 4 + nc]: xyxy canvas pixels, class scores; multi-label
  kYoloxCxcywh,   // [B, N, 5 + nc]: cxcywh canvas pixels, objectness, class scores; single-label
  kBoxesScores,   // ([B, N, 4] xyxy canvas pixels, [B, N, nc] scores), either order
  kRows6,         // [B, K, 6]: x1, y1, x2, y2, score, class (decoded, ranked in the graph)
  kRowsLevelXyxy,  // [B, N, 5 + nc]: xyxy canvas pixels, an FPN level id, class scores; multi-label,
                   // the best `candidates` of each level 0..level_count-1
  kDetr,          // (logits [B, Q, nc], boxes [B, Q, 4] normalised cxcywh): sigmoid, top-k pairs
  kDetrSoftmax,   // the same with softmax logits [B, Q, nc + 1] (the last: no object), per query
};
enum class ExportNms { kClassAware, kAgnostic, kNone };

struct ExportFamily {
  absl::string_view name;    // metadata's model_family
  absl::string_view prefix;  // the Python tool's file name prefix: LibreYOLOX + size
  ExportResize resize;
  bool bgr;         // channels B, G, R (YOLOX, RTMDet); otherwise R, G, B
  bool unit_range;  // / 255 before the mean and std
  ExportOutput output;
  ExportNms nms;
  bool rectangular = false;  // a canvas may be H != W
  // (x - mean) / std per channel, in the model's channel order and the units after unit_range;
  // std 0: none.
  std::array<float, 3> mean = {0, 0, 0}, std = {0, 0, 0};
  absl::string_view norm_sizes = "";  // "s,m,l,x": the mean and std only for these sizes
  std::array<uint8_t, 3> pad = {114, 114, 114};  // the letterbox fill, R, G, B
  bool multi_label = true;   // kRowsXyxy / kBoxesScores: every (box, class) pair over conf
  int64_t candidates = 30000;  // the pre-NMS cap: max(max_det, this) for kDenseXyxy (0: none)
  // The cap applies per FPN level where the rows are these strides' grids (ceil(H/s) x ceil(W/s)
  // each, in order) and over all rows otherwise (PicoDet: 8, 16, 32, 64); 0: one cap.
  std::array<int, 4> level_strides = {0, 0, 0, 0};
  int64_t max_det_cap = 0;     // the backend's own max_det ceiling (SSD 200), 0: none
  bool drop_empty = true;  // drop boxes without area after clipping (not PicoDet's parse)
  // DETR: the top-k cap of the family's t size besides max_det (LW-DETR t: 100; other sizes 300),
  // and COCO-91 logits cut to 80 ids.
  int64_t small_size_top_k = 0;
  bool coco91_logits = false;
  int fit_cap = 0;  // kLetterboxPilCenter: the fitted size's ceiling (YOLO-NAS: 636)
  // kRows6: the graph ranked its rows and the backend takes the first min(max_det, cap) before
  // --conf (CenterNet's top-100 peaks); kRowsLevelXyxy: the levels.
  bool ranked_rows = false;
  int level_count = 0;
  // Not run: why (preprocessing or decoding this engine does not reproduce); empty: runs.
  absl::string_view unsupported = "";
};

// nullptr for a family not in the table (a family the Python tool added after 1.6.0).
const ExportFamily* FindExportFamily(absl::string_view model_family);
// The row for a family not in the table: its forward runs (RGB stretch, / 255), its outputs
// have no decoder (TorchScriptModel::Postprocess says so, with their shapes).
const ExportFamily& UnknownExportFamily();
// Every family of the table, the ones it does not decode included, in table order.
std::vector<std::string> ExportFamilyTable();
// The COCO category ids (1..90) of the 80 classes, in class order (LW-DETR's 91 logits).
const std::vector<int64_t>& Coco91CategoryIds();

// What a LibreYOLO export says about itself (libreyolo_metadata.json).
struct ExportMetadata {
  const ExportFamily* family = nullptr;
  std::string family_name;    // metadata's model_family (also one the table lacks)
  std::string size;           // "t", "n", "r18" ...
  std::string task;           // "detect", or another task (task_family.h)
  TaskSettings task_settings;  // what the backend does for a task other than detect
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
