#include "server/engine/loss/bbox_ops.h"

#include <numbers>

namespace libreyolo::engine {
namespace {

// The reference's eps for every CIoU denominator.
constexpr double kEps = 1e-7;

}  // namespace

torch::Tensor CompleteIou(const torch::Tensor& a_in, const torch::Tensor& b_in) {
  // float32 even under reduced precision: the atan and squared-distance terms lose too much
  // in half precision.
  const torch::Tensor a = a_in.to(torch::kFloat32);
  const torch::Tensor b = b_in.to(torch::kFloat32);
  const auto ax1 = a.select(-1, 0), ay1 = a.select(-1, 1), ax2 = a.select(-1, 2),
             ay2 = a.select(-1, 3);
  const auto bx1 = b.select(-1, 0), by1 = b.select(-1, 1), bx2 = b.select(-1, 2),
             by2 = b.select(-1, 3);

  const torch::Tensor inter = (torch::min(ax2, bx2) - torch::max(ax1, bx1)).clamp_min(0) *
                              (torch::min(ay2, by2) - torch::max(ay1, by1)).clamp_min(0);
  const torch::Tensor area_a = (ax2 - ax1) * (ay2 - ay1);
  const torch::Tensor area_b = (bx2 - bx1) * (by2 - by1);
  const torch::Tensor iou = inter / (area_a + area_b - inter + kEps);

  const torch::Tensor centre_dist =
      ((ax2 + ax1) / 2 - (bx2 + bx1) / 2).pow(2) + ((ay2 + ay1) / 2 - (by2 + by1) / 2).pow(2);
  const torch::Tensor cw = torch::max(ax2, bx2) - torch::min(ax1, bx1);
  const torch::Tensor ch = torch::max(ay2, by2) - torch::min(ay1, by1);
  const torch::Tensor diou = iou - centre_dist / (cw.pow(2) + ch.pow(2) + kEps);

  const torch::Tensor dtheta =
      torch::atan((ax2 - ax1) / (ay2 - ay1 + kEps)) - torch::atan((bx2 - bx1) / (by2 - by1 + kEps));
  const torch::Tensor v = (4.0 / (std::numbers::pi * std::numbers::pi)) * dtheta.pow(2);
  // alpha is a weight, not something to optimise (the CIoU paper and the reference).
  const torch::Tensor alpha = (v / (v - iou + 1 + kEps)).detach();
  return (diou - alpha * v).to(a_in.scalar_type());
}

torch::Tensor PairwiseCompleteIou(const torch::Tensor& a, const torch::Tensor& b) {
  return CompleteIou(a.unsqueeze(2), b.unsqueeze(1));
}

torch::Tensor Dist2Bbox(const torch::Tensor& ltrb, const torch::Tensor& points) {
  const auto parts = ltrb.chunk(2, -1);
  return torch::cat({points - parts[0], points + parts[1]}, -1);
}

torch::Tensor Bbox2Dist(const torch::Tensor& xyxy, const torch::Tensor& points) {
  const auto parts = xyxy.chunk(2, -1);
  return torch::cat({points - parts[0], parts[1] - points}, -1);
}

AnchorGrid MakeAnchorGrid(int64_t width, int64_t height, const std::vector<int64_t>& strides,
                          const torch::Device& device) {
  const auto opts = torch::TensorOptions().dtype(torch::kFloat32).device(device);
  std::vector<torch::Tensor> points, scales;
  AnchorGrid grid;
  for (const int64_t stride : strides) {
    const double shift = static_cast<double>(stride / 2);
    const torch::Tensor ys = torch::arange(0, height, stride, opts) + shift;
    const torch::Tensor xs = torch::arange(0, width, stride, opts) + shift;
    const auto mesh = torch::meshgrid({ys, xs}, "ij");
    points.push_back(torch::stack({mesh[1].flatten(), mesh[0].flatten()}, -1));
    grid.level_sizes.push_back(points.back().size(0));
    scales.push_back(torch::full({points.back().size(0)}, static_cast<double>(stride), opts));
  }
  grid.points = torch::cat(points, 0);
  grid.strides = torch::cat(scales, 0);
  return grid;
}

}  // namespace libreyolo::engine
