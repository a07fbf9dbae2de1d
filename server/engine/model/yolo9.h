// LibreYOLO9 (YOLOv9 t/s/m/c) in LibTorch. Module and parameter names reproduce LibreYOLO's
// state-dict keys ("backbone.*", "neck.*", "head.cv2|cv3.*"), so its checkpoints load by name
// and the raw head maps feed a loss written against LibreYOLO's.
#ifndef LIBREYOLO_SERVER_ENGINE_MODEL_YOLO9_H_
#define LIBREYOLO_SERVER_ENGINE_MODEL_YOLO9_H_

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "server/engine/checkpoint/checkpoint.h"
#include "server/engine/model/head.h"
#include "server/engine/model/yolo9_parts.h"

namespace libreyolo::engine {

struct Yolo9Options {
  std::string size = "t";  // t, s, m or c
  int64_t num_classes = 80;
  // The class towers' hidden width; 0 = LibreYOLO9's rule for a fresh build (ClassTowerWidth).
  int64_t class_hidden = 0;
};

// INVALID_ARGUMENT for an unknown size or a non-positive class count; the module constructor
// throws c10::Error on those, so check first at an API edge.
absl::Status ValidateYolo9Options(const Yolo9Options& options);

class Yolo9Impl : public torch::nn::Module {
 public:
  explicit Yolo9Impl(const Yolo9Options& options = {});

  // Per level (strides 8, 16, 32) the raw head maps [B, 4*16 + nc, H/s, W/s]: 64 DFL box
  // logits (side-major: l, t, r, b x 16 bins) then nc class logits. H and W must be multiples
  // of 32. This is the training output; BatchNorm follows the module's train/eval mode.
  std::vector<torch::Tensor> forward_raw(const torch::Tensor& x);

  // LibreYOLO's eval `predictions`: [B, 4 + nc, A] with xyxy boxes in input pixels and sigmoid
  // class scores, A = sum of H/s * W/s. Call eval() first (BatchNorm running statistics) and
  // wrap in a no-grad / inference-mode guard as the caller sees fit. It updates the head's
  // anchor cache, so a model is used by one thread at a time.
  torch::Tensor predict(const torch::Tensor& x);

  // The decode half of predict(), for callers that time forward and decode apart.
  torch::Tensor decode(const std::vector<torch::Tensor>& raw) { return head_->Decode(raw); }

  const Yolo9Options& options() const { return options_; }
  DDetect& head() { return head_; }
  // FLOPs of every convolution at batch 1 for an h x w input (see ForwardFlops), the PGI
  // branch's included while it is attached (a training step runs it).
  double Flops(int64_t h, int64_t w) const;

  // ---- The PGI auxiliary branch (training only) -----------------------------------------------
  // LibreYOLO9Model.enable_aux: attaches the auxiliary neck "aux" (AuxNeck9) and a second
  // DDetect "aux_head" (the main head's level widths, a fresh class-tower width for the class
  // count), drawn from the global generator in Python's construction order, so that after
  // torch::manual_seed(s) its values are those of Python's enable_aux after torch.manual_seed(s).
  // On the CPU; move the model after. Already attached: only the weight changes. `weight` > 0.
  void EnableAux(double weight);
  // LibreYOLO9Model.disable_aux: drops the branch (its parameters leave the model).
  void DisableAux();
  bool has_aux() const { return !aux_.is_empty(); }
  double aux_weight() const { return aux_weight_; }

  // The training forward: the main head's raw maps (forward_raw's) and, while the branch is
  // attached with a positive weight and the module is in training mode, the auxiliary head's
  // on the same backbone features (else `aux` is empty), as Python's forward with targets.
  struct TrainMaps {
    std::vector<torch::Tensor> main;
    std::vector<torch::Tensor> aux;
  };
  TrainMaps forward_train(const torch::Tensor& x);

 private:
  void CheckInput(const torch::Tensor& x) const;

  Yolo9Options options_;
  Backbone9 backbone_{nullptr};
  Neck9 neck_{nullptr};
  DDetect head_{nullptr};
  AuxNeck9 aux_{nullptr};
  DDetect aux_head_{nullptr};
  double aux_weight_ = 0.0;
};
TORCH_MODULE(Yolo9);

// Copies `tensors` into the model's parameters and buffers by name. Every missing, unexpected
// or mis-shaped name is listed in one INVALID_ARGUMENT message (the first 20, then a count),
// and nothing is copied unless all match. Values are converted to each parameter's dtype and
// device.
// Names in `leave` are skipped: neither checked nor copied (the model keeps its own values).
// The DFL's fixed conv of a checkpoint is ignored, and so is its PGI branch (aux.*, aux_head.*)
// while the model has none, as Python ignores it in a single-head model; with the branch
// attached its tensors load as the others do.
absl::Status LoadStateDict(Yolo9& model, const std::map<std::string, torch::Tensor>& tensors,
                           const std::set<std::string>& leave = {});

// LibreYOLO9._load_aux_tensors: copies the checkpoint's PGI tensors (aux.*, aux_head.*) whose
// name and shape match the attached branch's; the others are skipped, as Python skips them.
// Returns how many were copied (0 without a branch or without such tensors).
int64_t LoadAuxTensors(Yolo9& model, const std::map<std::string, torch::Tensor>& tensors);

// True for a PGI branch tensor's name ("aux." or "aux_head." prefix).
bool IsAuxKey(const std::string& name);

// A checkpoint tensor as an owning, contiguous CPU tensor of the same dtype, shape and values
// (strides and storage offset honoured). Throws c10::Error when the view does not fit in its
// storage (the checkpoint reader rejects such files first).
torch::Tensor ToTorch(const CheckpointTensor& tensor);

// Number of trainable parameters (BN running statistics excluded), as Python's
// sum(p.numel() for p in model.parameters()).
int64_t CountParameters(const Yolo9& model);

// FLOPs of one forward at batch 1 on an imgsz x imgsz input: 2 per multiply-add of every
// convolution, computed from the weight shapes (no forward pass is run).
double ForwardFlops(Yolo9& model, int64_t imgsz);

}  // namespace libreyolo::engine

#endif  // LIBREYOLO_SERVER_ENGINE_MODEL_YOLO9_H_
