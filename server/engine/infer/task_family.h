// The tasks other than detection that the Python LibreYOLO 1.6.0 exports to TorchScript
// (classification, semantic segmentation, depth, pose, instance segmentation): what its
// TorchScript backend does with such an export (backends/base.py: _preprocess and its
// _preprocess_classify / _preprocess_semantic / _preprocess_depth, _build_*_result), read from the
// export's metadata. Torch-free: ParseExportMetadata (export_family.h) calls it for an export whose
// `task` is not "detect"; task_postprocess.h runs it.
#ifndef LIBREYOLO_SERVER_ENGINE_INFER_TASK_FAMILY_H_
#define LIBREYOLO_SERVER_ENGINE_INFER_TASK_FAMILY_H_

#include <array>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace libreyolo::engine {

enum class ExportTask { kDetect, kClassify, kSemantic, kDepth, kPose, kSegment };

// How a task export's input is made (the backend's preprocessing for it).
enum class TaskInputKind {
  kDetection,     // the detection family's own (its row in export_family.h)
  kClassifyEval,  // torchvision eval transform: Resize(floor(S / crop_pct)) + CenterCrop(S), or
                  // Resize((S, S)) for resize_mode "stretch"; PIL's filter; / 255; mean, std
  kStretchCv,     // cv2.resize(rgb, (W, H), INTER_LINEAR), / 255, then mean/std when set
  kStretchCubic,  // cv2.resize(rgb / 255 as float32, (W, H), INTER_CUBIC) (MiDaS, Depth Anything)
  kSemanticLetterbox,  // PIDNet, SegFormer, GTR semantic (models/{pidnet,segformer}/model.py
                       // preprocess_numpy): ratio min(H / h, W / w), int() sides (at least 1),
                       // cv2 INTER_LINEAR, top-left on a 114 canvas, R, G, B, / 255
  kDekrLetterbox,  // DEKR pose (preprocess/dekr.py preprocess_numpy): ratio min(H / h, W / w),
                   // int(side * ratio + 0.5) (no resize at ratio 1), cv2 INTER_LINEAR, top-left
                   // on a 127 canvas, R, G, B, / 255, ImageNet mean/std
  kHrnetCrop,  // HRNet pose (models/hrnet/utils.py preprocess_numpy; backends/base.py has no person
               // detector): the whole image as one person box, widened to the canvas's aspect and
               // x 1.25, cv2.warpAffine INTER_LINEAR on black, R, G, B, / 255, ImageNet mean/std
  kPoseLetterbox,  // YOLO-NAS pose: the longest side to min(640, S) (round()), PIL BILINEAR,
                   // pasted top-left on a 127 canvas, B, G, R, / 255
};

struct TaskSettings {
  ExportTask task = ExportTask::kDetect;
  std::string task_name = "detect";
  TaskInputKind input = TaskInputKind::kDetection;
  // kClassifyEval: the backend's classification eval settings (metadata crop_pct, interpolation,
  // norm_mean, norm_std, resize_mode; the backend's legacy table, then ImageNet defaults).
  double crop_pct = 0.875;
  std::string interpolation = "bilinear";  // "bilinear" | "bicubic"
  bool stretch = false;                    // resize_mode "stretch": no centre crop
  // (x - mean) / std after / 255, R, G, B; std 0: none.
  std::array<float, 3> mean = {0, 0, 0}, std = {0, 0, 0};
  // kSemanticLetterbox: the upsampling of the cropped logits uses align_corners (PIDNet's).
  bool align_corners = false;
  // Why the engine does not decode this export's outputs (the postprocess stage is then null
  // and the profile says why); empty: it does.
  std::string no_postprocess;
};

// The settings for an export of `family` with `task` (its metadata `json`); `what` names the file
// in errors. INVALID_ARGUMENT naming the problem and the way out: a task this engine does not run,
// a family of it whose preprocessing it does not reproduce, malformed classification settings.
absl::StatusOr<TaskSettings> ParseTaskSettings(absl::string_view json, absl::string_view family,
                                               absl::string_view task, absl::string_view what);

// "classify", "semantic", ...: the tasks an export of which this engine profiles besides detect.
std::string TaskNames();

}  // namespace libreyolo::engine

#endif  // LIBREYOLO_SERVER_ENGINE_INFER_TASK_FAMILY_H_
