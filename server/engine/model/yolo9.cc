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

std::vector<torch::Tensor> Yolo9Impl::forward_raw(const torch::Tensor& x) {
  TORCH_CHECK(x.dim() == 4 && x.size(1) == 3, "Yolo9 expects [B, 3, H, W], got ", x.sizes());
  TORCH_CHECK(x.size(2) % 32 == 0 && x.size(3) % 32 == 0,
              "Yolo9 input height and width must be multiples of 32, got ", x.sizes());
  return head_(neck_(backbone_(x)));
}

torch::Tensor Yolo9Impl::predict(const torch::Tensor& x) { return head_->Decode(forward_raw(x)); }

double Yolo9Impl::Flops(int64_t h, int64_t w) const {
  std::array<Hw, 3> levels;
  double flops = backbone_->Flops({h, w}, levels);
  flops += neck_->Flops(levels);
  return flops + head_->Flops({levels.begin(), levels.end()});
}

int64_t CountParameters(const Yolo9& model) {
  int64_t count = 0;
  for (const auto& p : model->parameters()) count += p.numel();
  return count;
}

double ForwardFlops(Yolo9& model, int64_t imgsz) { return model->Flops(imgsz, imgsz); }

}  // namespace libreyolo::engine
