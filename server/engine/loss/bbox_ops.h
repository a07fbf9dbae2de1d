// Box geometry shared by the YOLOv9 loss and its assigner: CIoU, the LTRB <-> xyxy conversions
// around anchor points, and the anchor grid. Every function is plain tensor math so gradients
// flow through it (CIoU's aspect-ratio weight excepted, see CompleteIou).
#ifndef LIBREYOLO_SERVER_ENGINE_LOSS_BBOX_OPS_H_
#define LIBREYOLO_SERVER_ENGINE_LOSS_BBOX_OPS_H_

#include <torch/types.h>

#include <cstdint>
#include <vector>

namespace libreyolo::engine {

// Complete IoU (Zheng et al. 2020) of xyxy boxes `a` and `b` ([..., 4]) that broadcast against
// each other: IoU - centre distance^2 / enclosing diagonal^2 - alpha * v. Computed in float32
// with eps 1e-7 like LibreYOLO's compute_iou; alpha is treated as a constant (no gradient), as
// in the reference. Returns the broadcast shape without the last dimension, in a's dtype.
torch::Tensor CompleteIou(const torch::Tensor& a, const torch::Tensor& b);

// CIoU of every box of `a` [B, N, 4] against every box of `b` [B, M, 4] -> [B, N, M].
torch::Tensor PairwiseCompleteIou(const torch::Tensor& a, const torch::Tensor& b);

// Distances (left, top, right, bottom) from `points` [A, 2] to the sides -> xyxy, [..., A, 4].
torch::Tensor Dist2Bbox(const torch::Tensor& ltrb, const torch::Tensor& points);

// The inverse: xyxy boxes [..., A, 4] -> (left, top, right, bottom) distances from `points`.
// Not clamped; the DFL target clamps it to its bin range itself.
torch::Tensor Bbox2Dist(const torch::Tensor& xyxy, const torch::Tensor& points);

// Anchor points of all pyramid levels, level by level and row-major within a level (the order
// in which the head's maps are flattened).
struct AnchorGrid {
  torch::Tensor points;              // [A, 2] float32 (x, y) cell centres in input pixels
  torch::Tensor strides;             // [A] float32, the stride of each point's level
  std::vector<int64_t> level_sizes;  // anchors per level
};

// Cell centres at stride * cell + stride / 2 (integer half, as the reference), one grid per
// stride covering a width x height input.
AnchorGrid MakeAnchorGrid(int64_t width, int64_t height, const std::vector<int64_t>& strides,
                          const torch::Device& device = torch::kCPU);

}  // namespace libreyolo::engine

#endif  // LIBREYOLO_SERVER_ENGINE_LOSS_BBOX_OPS_H_
