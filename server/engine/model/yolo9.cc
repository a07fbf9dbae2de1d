#include "server/engine/model/yolo9.h"

#include "absl/strings/str_cat.h"

namespace libreyolo::engine {
namespace {

const Yolo9Config& CheckedConfig(const Yolo9Options& options) {
  const Yolo9Config* cfg = FindYolo9Config(options.size);
  TORCH_CHECK(cfg != nullptr, "unknown YOLOv9 size '", options.size, "' (t, s, m or c)");
  TORCH_CHECK(options.num_classes > 0, "num_classes must be positive");
  TORCH_CHECK(options.class_hidden >= 0, "class_hidden must be >= 0");
  return *cfg;
}

}  // namespace

absl::Status ValidateYolo9Options(const Yolo9Options& options) {
  if (FindYolo9Config(options.size) == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown YOLOv9 size '", options.size, "' (t, s, m or c)"));
  }
  if (options.num_classes <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_classes must be positive, got ", options.num_classes));
  }
  if (options.class_hidden < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("class tower width must be >= 0, got ", options.class_hidden));
  }
  return absl::OkStatus();
}

Yolo9Impl::Yolo9Impl(const Yolo9Options& options) : options_(options) {
  const Yolo9Config& cfg = CheckedConfig(options);
  backbone_ = register_module("backbone", Backbone9(cfg));
  neck_ = register_module("neck", Neck9(cfg));
  head_ = register_module(
      "head", DDetect(options.num_classes,
                      std::vector<int64_t>{cfg.up2.out, cfg.down1.elan.out, cfg.down2.elan.out},
                      options.class_hidden));
}

void Yolo9Impl::CheckInput(const torch::Tensor& x) const {
  TORCH_CHECK(x.dim() == 4 && x.size(1) == 3, "Yolo9 expects [B, 3, H, W], got ", x.sizes());
  TORCH_CHECK(x.size(2) % 32 == 0 && x.size(3) % 32 == 0,
              "Yolo9 input height and width must be multiples of 32, got ", x.sizes());
}

std::vector<torch::Tensor> Yolo9Impl::forward_raw(const torch::Tensor& x) {
  CheckInput(x);
  return head_(neck_(backbone_(x)));
}

Yolo9Impl::TrainMaps Yolo9Impl::forward_train(const torch::Tensor& x) {
  CheckInput(x);
  const BackboneOutputs b = backbone_(x);
  TrainMaps out;
  out.main = head_(neck_(b));
  // Python's use_aux: training, a branch, a positive weight.
  if (is_training() && has_aux() && aux_weight_ > 0) out.aux = aux_head_(aux_(b));
  return out;
}

void Yolo9Impl::EnableAux(double weight) {
  TORCH_CHECK(weight > 0, "the PGI branch's loss weight must be positive, got ", weight);
  aux_weight_ = weight;
  if (has_aux()) return;
  const Yolo9Config& cfg = CheckedConfig(options_);
  aux_ = register_module("aux", AuxNeck9(cfg));
  // Python's DDetect(nc, ch=head_channels): a fresh head, its class towers LibreYOLO9's width
  // for the class count whatever the main head's (a checkpoint's COCO-width towers).
  aux_head_ = register_module(
      "aux_head", DDetect(options_.num_classes,
                          std::vector<int64_t>{cfg.up2.out, cfg.down1.elan.out, cfg.down2.elan.out}));
  if (!parameters().empty()) {
    const torch::Device device = parameters().front().device();
    aux_->to(device);
    aux_head_->to(device);
  }
}

void Yolo9Impl::DisableAux() {
  if (has_aux()) {
    unregister_module("aux");
    unregister_module("aux_head");
  }
  aux_ = nullptr;
  aux_head_ = nullptr;
  aux_weight_ = 0.0;
}

torch::Tensor Yolo9Impl::predict(const torch::Tensor& x) { return head_->Decode(forward_raw(x)); }

double Yolo9Impl::Flops(int64_t h, int64_t w) const {
  std::array<Hw, 3> levels;
  double flops = backbone_->Flops({h, w}, levels);
  flops += neck_->Flops(levels);
  flops += head_->Flops({levels.begin(), levels.end()});
  if (has_aux()) flops += aux_->Flops(levels) + aux_head_->Flops({levels.begin(), levels.end()});
  return flops;
}

bool IsAuxKey(const std::string& name) {
  return name.rfind("aux.", 0) == 0 || name.rfind("aux_head.", 0) == 0;
}

int64_t LoadAuxTensors(Yolo9& model, const std::map<std::string, torch::Tensor>& tensors) {
  if (!model->has_aux()) return 0;
  torch::NoGradGuard no_grad;
  int64_t copied = 0;
  auto copy = [&](const std::string& name, torch::Tensor& target) {
    if (!IsAuxKey(name)) return;
    const auto it = tensors.find(name);
    if (it == tensors.end() || !it->second.defined() || it->second.sizes() != target.sizes()) {
      return;
    }
    target.copy_(it->second);
    ++copied;
  };
  for (auto& item : model->named_parameters()) copy(item.key(), item.value());
  for (auto& item : model->named_buffers()) copy(item.key(), item.value());
  return copied;
}

int64_t CountParameters(const Yolo9& model) {
  int64_t count = 0;
  for (const auto& p : model->parameters()) count += p.numel();
  return count;
}

double ForwardFlops(Yolo9& model, int64_t imgsz) { return model->Flops(imgsz, imgsz); }

}  // namespace libreyolo::engine
