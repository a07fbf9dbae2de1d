// The LibreYOLO9 (YOLOv9) training loss: task-aligned assignment, then CIoU box loss,
// distribution focal loss over the 16 DFL bins and BCE class loss, all normalised by the sum of
// the soft class targets. Reproduces LibreYOLO's YOLO9Loss (libreyolo/models/yolo9/loss.py).
#ifndef LIBREYOLO_SERVER_ENGINE_LOSS_YOLO9_LOSS_H_
#define LIBREYOLO_SERVER_ENGINE_LOSS_YOLO9_LOSS_H_

#include <torch/types.h>

#include <cstdint>
#include <vector>

namespace libreyolo::engine {

struct Yolo9LossOptions {
  int64_t num_classes = 80;
  int64_t reg_max = 16;
  std::vector<int64_t> strides = {8, 16, 32};
  double box_gain = 7.5;
  double dfl_gain = 1.5;
  double cls_gain = 0.5;
  int64_t topk = 10;
  double alpha = 0.5;  // assigner: exponent of the class probability
  double beta = 6.0;   // assigner: exponent of the CIoU
};

// Scalars. The three parts already carry their gains and total = box + dfl + cls (the
// reference's "total_loss", which its trainer back-propagates as is: no batch-size factor).
struct Yolo9Loss {
  torch::Tensor total;
  torch::Tensor box, dfl, cls;
  torch::Tensor num_foreground;  // int64 scalar: anchors given a ground truth, whole batch
};

// `raw`: the head's train-mode maps, one per stride, each [B, 4 * reg_max + nc, H, W] with the
// DFL logits first (side-major: left's 16 bins, then top's, right's, bottom's).
// `targets`: [B, N, 5] rows (class, x1, y1, x2, y2), coordinates normalised to [0, 1];
// class -1 marks padding. The input was `width` x `height` pixels.
// Throws c10::Error (TORCH_CHECK) when the shapes disagree with the options.
Yolo9Loss ComputeYolo9Loss(const std::vector<torch::Tensor>& raw, const torch::Tensor& targets,
                           int64_t width, int64_t height, const Yolo9LossOptions& o = {});

// Square input of imgsz x imgsz pixels.
inline Yolo9Loss ComputeYolo9Loss(const std::vector<torch::Tensor>& raw,
                                  const torch::Tensor& targets, int64_t imgsz,
                                  const Yolo9LossOptions& o = {}) {
  return ComputeYolo9Loss(raw, targets, imgsz, imgsz, o);
}

// LibreYOLO9Model.combine_aux_losses: the PGI auxiliary head's loss (its own assignment, on
// its own maps: a second YOLO9Loss in Python) added at `aux_weight` to the main head's, part by
// part: total, box, dfl and cls are each main + aux_weight * aux. num_foreground is the main
// head's.
Yolo9Loss CombineAuxLoss(const Yolo9Loss& main, const Yolo9Loss& aux, double aux_weight);

}  // namespace libreyolo::engine

#endif  // LIBREYOLO_SERVER_ENGINE_LOSS_YOLO9_LOSS_H_
