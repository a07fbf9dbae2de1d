// Detection postprocess: multi-label candidates over a confidence threshold, a cap on the
// candidates, class-aware NMS (written here, not torchvision's), and the max-det cut.
#ifndef LIBREYOLO_SERVER_ENGINE_INFER_POSTPROCESS_H_
#define LIBREYOLO_SERVER_ENGINE_INFER_POSTPROCESS_H_

#include <torch/types.h>

#include <vector>

namespace libreyolo::engine {

struct PostprocessOptions {
  double conf = 0.25;
  double iou = 0.45;
  int64_t max_det = 300;
  int64_t max_candidates = 30000;  // the cap is max(max_det, this)
};

// One image's detections: boxes [N, 4] xyxy (input pixels), scores [N], classes [N] (int64),
// sorted by score, descending.
struct Detections {
  torch::Tensor boxes, scores, classes;
};

// Greedy NMS over boxes [N, 4] xyxy sorted or not; returns kept indices by descending score.
// IoU strictly greater than `iou` suppresses (the torchvision convention).
torch::Tensor Nms(const torch::Tensor& boxes, const torch::Tensor& scores, double iou);

// predictions: [B, 4 + nc, A] (xyxy boxes, then per-class scores in [0, 1]).
std::vector<Detections> Postprocess(const torch::Tensor& predictions, const PostprocessOptions& o);

}  // namespace libreyolo::engine

#endif  // LIBREYOLO_SERVER_ENGINE_INFER_POSTPROCESS_H_
