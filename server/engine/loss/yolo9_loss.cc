#include "server/engine/loss/yolo9_loss.h"

#include <cstddef>

#include "server/engine/loss/bbox_ops.h"
#include "server/engine/loss/tal_assigner.h"

namespace libreyolo::engine {
namespace {

// Same margin as the assigner: targets stop just short of the last bin so `floor + 1` exists.
constexpr double kRegMargin = 1.01;

// The head's maps flattened to one anchor axis, in the anchor grid's order.
struct Decoded {
  torch::Tensor cls;    // [B, A, nc] logits
  torch::Tensor dist;   // [B, A, 4, reg_max] DFL logits
  torch::Tensor boxes;  // [B, A, 4] xyxy pixels, decoded from the DFL expectation
};

Decoded Decode(const std::vector<torch::Tensor>& raw, const AnchorGrid& grid,
               const Yolo9LossOptions& o) {
  const int64_t box_ch = 4 * o.reg_max;
  std::vector<torch::Tensor> cls, dist;
  for (size_t i = 0; i < raw.size(); ++i) {
    const torch::Tensor& p = raw[i];
    TORCH_CHECK(p.dim() == 4 && p.size(1) == box_ch + o.num_classes, "yolo9 loss: level ", i,
                " has shape ", p.sizes(), ", expected [B, ", box_ch + o.num_classes, ", H, W]");
    const int64_t b = p.size(0), h = p.size(2), w = p.size(3);
    TORCH_CHECK(h * w == grid.level_sizes[i], "yolo9 loss: level ", i, " is ", h, "x", w,
                " but the input size gives ", grid.level_sizes[i], " anchors at stride ",
                o.strides[i]);
    dist.push_back(p.narrow(1, 0, box_ch)
                       .reshape({b, 4, o.reg_max, h, w})
                       .permute({0, 3, 4, 1, 2})
                       .reshape({b, h * w, 4, o.reg_max}));
    cls.push_back(p.narrow(1, box_ch, o.num_classes).permute({0, 2, 3, 1}).reshape({b, h * w, -1}));
  }
  Decoded d;
  d.cls = torch::cat(cls, 1);
  d.dist = torch::cat(dist, 1);
  const torch::Tensor bins = torch::arange(o.reg_max, d.dist.options());
  const torch::Tensor ltrb = (d.dist.softmax(-1) * bins).sum(-1) * grid.strides.view({1, -1, 1});
  d.boxes = Dist2Bbox(ltrb, grid.points);
  return d;
}

// Cross-entropy of each row of `log_probs` [N, R] (log-softmaxed) against integer bins [N].
torch::Tensor BinCrossEntropy(const torch::Tensor& log_probs, const torch::Tensor& label) {
  return -log_probs.gather(1, label.to(torch::kLong).unsqueeze(1)).squeeze(1);
}

}  // namespace

Yolo9Loss ComputeYolo9Loss(const std::vector<torch::Tensor>& raw, const torch::Tensor& targets,
                           int64_t width, int64_t height, const Yolo9LossOptions& o) {
  TORCH_CHECK(!raw.empty() && raw.size() == o.strides.size(), "yolo9 loss: got ", raw.size(),
              " levels for ", o.strides.size(), " strides");
  TORCH_CHECK(targets.dim() == 3 && targets.size(2) == 5 && targets.size(0) == raw[0].size(0),
              "yolo9 loss: targets must be [B, N, 5], got ", targets.sizes());
  const AnchorGrid grid = MakeAnchorGrid(width, height, o.strides, raw[0].device());
  const Decoded pred = Decode(raw, grid, o);

  const torch::Tensor to_pixels =
      torch::tensor({1.0, static_cast<double>(width), static_cast<double>(height),
                     static_cast<double>(width), static_cast<double>(height)},
                    targets.options());
  const TaskAlignedAssigner assigner(grid, {.num_classes = o.num_classes,
                                            .reg_max = o.reg_max,
                                            .topk = o.topk,
                                            .alpha = o.alpha,
                                            .beta = o.beta});
  // The assignment is a label, not part of the graph.
  const TalAssignment a =
      assigner.Assign(pred.cls.detach(), pred.boxes.detach(), targets * to_pixels);

  // Box and DFL work in stride units so every level weighs the same.
  const torch::Tensor inv_stride = (1.0 / grid.strides).view({1, -1, 1});
  const torch::Tensor pred_boxes = pred.boxes * inv_stride;
  const torch::Tensor target_boxes = a.boxes * inv_stride;

  const torch::Tensor cls_norm = a.scores.sum().clamp_min(1.0);
  const torch::Tensor box_norm = a.scores.sum(-1).index({a.fg});  // [N]

  const torch::Tensor cls =
      torch::binary_cross_entropy_with_logits(pred.cls, a.scores, {}, {}, at::Reduction::None)
          .sum() /
      cls_norm;

  const torch::Tensor iou = CompleteIou(pred_boxes.index({a.fg}), target_boxes.index({a.fg}));
  const torch::Tensor box = ((1.0 - iou) * box_norm).sum() / cls_norm;

  // DFL: the target distance t splits between bins floor(t) and floor(t) + 1.
  const torch::Tensor anchors = grid.points * inv_stride.view({-1, 1});
  const torch::Tensor t = Bbox2Dist(target_boxes, anchors)
                              .clamp(0, static_cast<double>(o.reg_max) - kRegMargin)
                              .index({a.fg})
                              .flatten();
  const torch::Tensor log_probs = pred.dist.index({a.fg}).reshape({-1, o.reg_max}).log_softmax(-1);
  const torch::Tensor left = t.floor();
  const torch::Tensor right = left + 1;
  const torch::Tensor per_side = BinCrossEntropy(log_probs, left) * (right - t) +
                                 BinCrossEntropy(log_probs, right) * (t - left);
  const torch::Tensor dfl = (per_side.view({-1, 4}).mean(-1) * box_norm).sum() / cls_norm;

  Yolo9Loss out;
  out.box = box * o.box_gain;
  out.dfl = dfl * o.dfl_gain;
  out.cls = cls * o.cls_gain;
  out.total = out.box + out.dfl + out.cls;
  out.num_foreground = a.fg.sum();
  return out;
}

Yolo9Loss CombineAuxLoss(const Yolo9Loss& main, const Yolo9Loss& aux, double aux_weight) {
  Yolo9Loss out;
  out.total = main.total + aux_weight * aux.total;
  out.box = main.box + aux_weight * aux.box;
  out.dfl = main.dfl + aux_weight * aux.dfl;
  out.cls = main.cls + aux_weight * aux.cls;
  out.num_foreground = main.num_foreground;
  return out;
}

}  // namespace libreyolo::engine
