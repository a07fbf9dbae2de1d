#include "server/engine/loss/tal_assigner.h"

#include <algorithm>

namespace libreyolo::engine {
namespace {

// Keeps the max-normalisation of the soft targets finite for ground truths with no anchor.
constexpr double kNormEps = 1e-9;
// The DFL bins reach reg_max - 1; the reference keeps a margin below it, here and in the DFL
// target clamp, so that the right-hand bin of a target always exists.
constexpr double kRegMargin = 1.01;

}  // namespace

torch::Tensor TaskAlignedAssigner::InsideMask(const torch::Tensor& gt_boxes) const {
  const torch::Tensor ax = anchors_.points.select(1, 0).view({1, 1, -1});
  const torch::Tensor ay = anchors_.points.select(1, 1).view({1, 1, -1});
  const torch::Tensor x1 = gt_boxes.select(-1, 0).unsqueeze(-1);
  const torch::Tensor y1 = gt_boxes.select(-1, 1).unsqueeze(-1);
  const torch::Tensor x2 = gt_boxes.select(-1, 2).unsqueeze(-1);
  const torch::Tensor y2 = gt_boxes.select(-1, 3).unsqueeze(-1);
  const torch::Tensor dist = torch::stack({ax - x1, ay - y1, x2 - ax, y2 - ay}, -1) *
                             (1.0 / anchors_.strides).view({1, 1, -1, 1});
  return (std::get<0>(dist.min(-1)) >= 0) &
         (std::get<0>(dist.max(-1)) <= static_cast<double>(options_.reg_max) - kRegMargin);
}

TalAssignment TaskAlignedAssigner::Assign(const torch::Tensor& cls_logits,
                                          const torch::Tensor& boxes,
                                          const torch::Tensor& targets) const {
  const int64_t batch = cls_logits.size(0);
  const int64_t num_anchors = cls_logits.size(1);
  const int64_t num_gt = targets.size(1);
  const auto bool_opts = torch::TensorOptions().dtype(torch::kBool).device(boxes.device());
  if (num_gt == 0) {
    return {torch::zeros_like(boxes), torch::zeros_like(cls_logits),
            torch::zeros({batch, num_anchors}, bool_opts),
            torch::zeros({batch, num_anchors}, bool_opts.dtype(torch::kLong))};
  }

  const torch::Tensor gt_cls_raw = targets.select(-1, 0);
  const torch::Tensor gt_real = (gt_cls_raw >= 0).unsqueeze(-1);  // [B, T, 1]
  const torch::Tensor gt_cls =
      gt_cls_raw.to(torch::kLong).clamp(0, options_.num_classes - 1);  // [B, T]
  const torch::Tensor gt_boxes = targets.narrow(-1, 1, 4);

  const torch::Tensor inside = InsideMask(gt_boxes) & gt_real;
  const torch::Tensor iou = PairwiseCompleteIou(gt_boxes, boxes).clamp(0, 1);  // [B, T, A]
  const torch::Tensor cls_prob = cls_logits.sigmoid().transpose(1, 2).gather(
      1, gt_cls.unsqueeze(-1).expand({-1, -1, num_anchors}));
  const torch::Tensor cls_term =
      options_.alpha == 0.5 ? cls_prob.sqrt() : cls_prob.pow(options_.alpha);
  // Padding rows are zeroed so that the "at least one anchor" rule below cannot revive them.
  const torch::Tensor align = iou.pow(options_.beta) * cls_term * gt_real;

  // Top-k anchors per ground truth among those inside it; zero scores are not matches.
  const auto [top_vals, top_idx] = (inside * align).topk(std::min(options_.topk, num_anchors), -1);
  torch::Tensor mask = torch::zeros_like(align, bool_opts).scatter(-1, top_idx, top_vals > 0);

  // A ground truth with no anchor inside still gets its best-aligned anchor anywhere.
  const auto [best_vals, best_idx] = align.max(-1);
  const torch::Tensor best_anchor =
      torch::zeros_like(align, bool_opts).scatter(-1, best_idx.unsqueeze(-1), true);
  const torch::Tensor orphan = (mask.sum(-1) == 0) & (best_vals > 0);
  mask = torch::where(orphan.unsqueeze(-1), best_anchor, mask);

  // An anchor claimed by several ground truths keeps the one with the highest IoU.
  const torch::Tensor shared = mask.sum(1, /*keepdim=*/true) > 1;  // [B, 1, A]
  const torch::Tensor best_gt = (mask * iou).argmax(1).unsqueeze(1);
  const torch::Tensor best_gt_mask = torch::zeros_like(mask).scatter(1, best_gt, true);
  mask = torch::where(shared, best_gt_mask, mask);

  TalAssignment out;
  out.gt_index = mask.to(torch::kUInt8).argmax(1);  // [B, A]
  out.fg = mask.any(1);
  out.boxes = gt_boxes.gather(1, out.gt_index.unsqueeze(-1).expand({-1, -1, 4}));
  const torch::Tensor assigned_cls = gt_cls.gather(1, out.gt_index);
  const torch::Tensor one_hot =
      torch::zeros({batch, num_anchors, options_.num_classes}, cls_logits.options())
          .scatter(-1, assigned_cls.unsqueeze(-1), 1.0);

  // Soft targets: alignment rescaled per ground truth so its best anchor scores its best IoU.
  const torch::Tensor kept_iou = iou * mask;
  const torch::Tensor kept_align = align * mask;
  const torch::Tensor ratio = std::get<0>(kept_iou.max(-1, /*keepdim=*/true)) /
                              (std::get<0>(kept_align.max(-1, /*keepdim=*/true)) + kNormEps);
  const torch::Tensor norm =
      (kept_align * ratio).permute({0, 2, 1}).gather(2, out.gt_index.unsqueeze(-1));  // [B, A, 1]
  out.scores = one_hot * norm * out.fg.unsqueeze(-1);
  return out;
}

}  // namespace libreyolo::engine
