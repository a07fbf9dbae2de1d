// Task-aligned assignment (TOOD, Feng et al. 2021) as LibreYOLO's YOLOv9 BoxMatcher does it:
// each ground truth takes the top-k anchors that lie inside it (within the DFL range) by
// alignment = CIoU^beta * p(class)^alpha; an anchor claimed by several ground truths keeps the
// one it overlaps most; class targets are soft, scaled so that each ground truth's best anchor
// gets that ground truth's best IoU.
#ifndef LIBREYOLO_SERVER_ENGINE_LOSS_TAL_ASSIGNER_H_
#define LIBREYOLO_SERVER_ENGINE_LOSS_TAL_ASSIGNER_H_

#include <torch/types.h>

#include <cstdint>
#include <utility>

#include "server/engine/loss/bbox_ops.h"

namespace libreyolo::engine {

struct TalOptions {
  int64_t num_classes = 80;
  int64_t reg_max = 16;
  int64_t topk = 10;
  double alpha = 0.5;  // exponent of the class probability
  double beta = 6.0;   // exponent of the CIoU
};

struct TalAssignment {
  torch::Tensor boxes;     // [B, A, 4] the assigned ground truth's xyxy (pixels); junk where !fg
  torch::Tensor scores;    // [B, A, nc] soft class targets, zero for background anchors
  torch::Tensor fg;        // [B, A] bool, anchors that were assigned a ground truth
  torch::Tensor gt_index;  // [B, A] int64, the assigned ground truth's row; 0 where !fg
};

class TaskAlignedAssigner {
 public:
  TaskAlignedAssigner(AnchorGrid anchors, TalOptions options)
      : anchors_(std::move(anchors)), options_(options) {}

  // `cls_logits` [B, A, nc] and `boxes` [B, A, 4] (xyxy pixels) are the detached predictions;
  // `targets` [B, T, 5] holds (class, x1, y1, x2, y2) in pixels, class < 0 marking padding rows,
  // which never take an anchor.
  TalAssignment Assign(const torch::Tensor& cls_logits, const torch::Tensor& boxes,
                       const torch::Tensor& targets) const;

  const AnchorGrid& anchors() const { return anchors_; }

 private:
  // [B, T, A]: the anchor's centre lies inside the box and every side is within reg_max - 1.01
  // strides, i.e. the anchor can express the box with its DFL bins.
  torch::Tensor InsideMask(const torch::Tensor& gt_boxes) const;

  AnchorGrid anchors_;
  TalOptions options_;
};

}  // namespace libreyolo::engine

#endif  // LIBREYOLO_SERVER_ENGINE_LOSS_TAL_ASSIGNER_H_
