// Tasks other than detection, run as the Python LibreYOLO's TorchScript backend runs their
// exports (task_family.h says which and how): the input (classification's eval transform, the
// dense tasks' stretch, PIDNet / SegFormer / GTR semantic's, YOLO-NAS and DEKR pose's
// letterboxes, HRNet's crop of the whole image as its one person box) and the decode where it is
// simple: classification's softmax top-k, semantic segmentation's upsampled argmax (the
// letterboxed families' logits cropped to the image first), depth's upsampled map, YOLO-NAS
// pose's boxes and keypoints (score >= conf, class-aware NMS, max_det), HRNet's heatmap maxima
// back through its crop (one person, the image as its box).
#ifndef LIBREYOLO_SERVER_ENGINE_INFER_TASK_POSTPROCESS_H_
#define LIBREYOLO_SERVER_ENGINE_INFER_TASK_POSTPROCESS_H_

#include <torch/types.h>

#include <opencv2/core.hpp>
#include <vector>

#include "absl/status/statusor.h"
#include "server/engine/infer/export_family.h"
#include "server/engine/infer/postprocess.h"

namespace libreyolo::engine {

struct ExportGeometry;

// profile.json's `model` for a task export: "LibreResNet18 classify (resnet, size 18, 80
// classes, 224x224 export)".
std::string TaskLabel(const ExportMetadata& meta);
// Whether the task's input is its own (not the detection family's row).
bool TaskOwnsInput(const ExportMetadata& meta);
// The canvas of one BGR image: 8-bit BGR (classification, cv2 stretch), or float BGR in [0, 1]
// (kStretchCubic). `geometry` gets the source size.
cv::Mat TaskCanvas(const ExportMetadata& meta, const cv::Mat& bgr, ExportGeometry* geometry);
// Canvases -> [B, 3, H, W] in R, G, B, / 255, (x - mean) / std where set, as `dtype`.
absl::StatusOr<torch::Tensor> TaskInput(const ExportMetadata& meta,
                                        const std::vector<cv::Mat>& canvases,
                                        torch::ScalarType dtype);

// One image's decoded output.
struct TaskOutput {
  torch::Tensor classes, scores;  // classification: the top-k classes, their probabilities;
                                  // pose: each person's class and score
  torch::Tensor boxes;            // pose: [N, 4] xyxy source pixels, by descending score
  torch::Tensor keypoints;        // pose: [N, K, 3] x, y (source pixels), confidence
  torch::Tensor map;              // semantic: [H, W] int64 class ids; depth: [H, W] float
  // classes kept (classify), classes present (semantic), pixels (depth), persons (pose)
  int64_t count = 0;
};
// The backend's decode of the module's outputs, one per image (the backend's
// _parse_classify_probs + top-k, _parse_semantic_output, _parse_depth_output,
// _parse_yolonas_pose + _build_result with `o`'s conf, iou, max_det; _parse_hrnet_pose). INVALID_ARGUMENT
// naming the shapes when they are not the task's; FAILED_PRECONDITION when the task's decode is
// not reproduced (meta.task_settings.no_postprocess).
absl::StatusOr<std::vector<TaskOutput>> TaskPostprocess(
    const ExportMetadata& meta, const torch::IValue& output,
    const std::vector<ExportGeometry>& geometry, const PostprocessOptions& o, int64_t top_k);

}  // namespace libreyolo::engine

#endif  // LIBREYOLO_SERVER_ENGINE_INFER_TASK_POSTPROCESS_H_
