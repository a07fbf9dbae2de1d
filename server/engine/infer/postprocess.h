// Detection postprocess: multi-label candidates over a confidence threshold, a cap on the
// candidates, class-aware NMS (written here, not torchvision's), and the max-det cut.
#ifndef LIBREYOLO_SERVER_ENGINE_INFER_POSTPROCESS_H_
#define LIBREYOLO_SERVER_ENGINE_INFER_POSTPROCESS_H_

#include <ATen/core/ivalue.h>
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

// A module's output tensors (the tensor, or the tensors of its tuple or list, in order),
// detached, on the CPU, as `type`: what every decode starts from.
std::vector<torch::Tensor> OutputTensors(const torch::IValue& output, torch::ScalarType type);

// Greedy NMS over boxes [N, 4] xyxy sorted or not; returns kept indices by descending score.
// IoU strictly greater than `iou` suppresses (the torchvision convention).
torch::Tensor Nms(const torch::Tensor& boxes, const torch::Tensor& scores, double iou);

// predictions: [B, 4 + nc, A] (xyxy boxes, then per-class scores in [0, 1]).
std::vector<Detections> Postprocess(const torch::Tensor& predictions, const PostprocessOptions& o);

// The steps of the Python LibreYOLO's TorchScript backend (tests/engine/torchscript/FAMILIES.md),
// which a TorchScript export's detections follow: candidates, mapped to the source image and
// clipped by the caller, then FinishCandidates. float32 throughout, as the backend's numpy.
struct Candidates {
  torch::Tensor boxes;    // [K, 4] xyxy
  torch::Tensor scores;   // [K]
  torch::Tensor classes;  // [K] int64
  torch::Tensor anchors = {};  // [K] int64: the row each came from (PairCandidates); else undefined
};
// One image of [4 + nc, N] (xyxy, sigmoided class scores): every (anchor, class) pair with a
// score > conf in row-major order, the best max(max_det, max_candidates) kept when there are more.
Candidates DenseCandidates(const torch::Tensor& image_pred, const PostprocessOptions& o);
// One image of [N, 5 + nc] (cxcywh, objectness, class scores): the best class of each anchor,
// scored objectness x its score, kept when > conf; boxes as xyxy.
Candidates YoloxCandidates(const torch::Tensor& image_pred, double conf);
// Boxes [N, 4] xyxy and scores [N, nc] (the [N, 4 + nc] rows of RTMDet, PicoDet; PP-YOLOE's
// and YOLO-NAS's two outputs): multi-label, every (box, class) pair with a score > conf, the best
// `cap` kept when there are more (0: no cap); or single-label, the best class of each box.
Candidates PairCandidates(const torch::Tensor& boxes, const torch::Tensor& scores, double conf,
                          int64_t cap);
// The candidates of each level (rows [bounds[l], bounds[l + 1])) cut to the best `cap` of that
// level (PicoDet's nms_pre per FPN level, postprocess/picodet.py); the order is kept otherwise.
Candidates CapPerLevel(const Candidates& c, const std::vector<int64_t>& bounds, int64_t cap);
// The candidates of each group g = 0 .. groups - 1 (`group`: each candidate's), each cut to its
// best `cap` by score when it has more, concatenated in group order; a candidate of no such group
// is dropped (FCOS: the FPN level id its row carries, the backend's _parse_fcos).
Candidates CapPerGroup(const Candidates& c, const torch::Tensor& group, int64_t groups,
                       int64_t cap);
Candidates BestClassCandidates(const torch::Tensor& boxes, const torch::Tensor& scores,
                               double conf, int64_t cap);
// YOLO9-E2E (the backend's _parse_yolo9, e2e branch): of [4 + nc, N], the top max_det anchors by
// their best score, then the top max_det (anchor, class) pairs among them, kept when > conf.
Candidates TopKAnchorCandidates(const torch::Tensor& image_pred, double conf, int64_t max_det);
// [K, 6] rows x1, y1, x2, y2, score, class (EfficientDet): score > conf and class >= 0.
Candidates Rows6Candidates(const torch::Tensor& rows, double conf);
// Drops boxes without area, then greedy NMS (per class in ascending class order when
// `class_aware`, else over all), the kept boxes by descending score, the first max_det.
// `drop_empty` false keeps them (PicoDet's parse has no such filter).
Detections FinishCandidates(const Candidates& c, double iou, int64_t max_det, bool class_aware,
                            bool drop_empty = true);
// DETR-style heads: logits [Q, C], boxes [Q, 4] normalised cxcywh. Sigmoid (computed in
// float64), the top min(top_k, Q * C) (query, class) pairs by score, boxes xyxy scaled by
// (width, height), then score > conf. No NMS and no clipping (the backend's _parse_dfine).
Detections DetrDetections(const torch::Tensor& logits, const torch::Tensor& boxes, double conf,
                          int64_t top_k, double width, double height);
// DETR (the backend's _parse_detr): softmax over logits [Q, C + 1] (float32), the last column
// (no object) dropped, then `columns` kept when given (COCO-91 ids of 80 classes), each query's
// best class, the top min(top_k, Q) queries, boxes as DetrDetections, score > conf.
Detections DetrSoftmaxDetections(const torch::Tensor& logits, const torch::Tensor& boxes,
                                 const torch::Tensor& columns, double conf, int64_t top_k,
                                 double width, double height);

}  // namespace libreyolo::engine

#endif  // LIBREYOLO_SERVER_ENGINE_INFER_POSTPROCESS_H_
