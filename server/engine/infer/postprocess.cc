#include "server/engine/infer/postprocess.h"

#include <torch/torch.h>

#include <algorithm>

namespace libreyolo::engine {
namespace {

// Boxes of different classes never overlap once shifted by class * this (class-aware NMS in one
// pass, the batched-NMS trick); larger than any image coordinate we produce.
constexpr double kClassOffset = 7680.0;

}  // namespace

torch::Tensor Nms(const torch::Tensor& boxes_in, const torch::Tensor& scores_in, double iou) {
  const int64_t n = boxes_in.size(0);
  if (n == 0) return torch::empty({0}, torch::kLong);
  const torch::Tensor order = scores_in.argsort(/*dim=*/0, /*descending=*/true);
  const torch::Tensor boxes = boxes_in.index_select(0, order).to(torch::kFloat).contiguous();
  const auto b = boxes.accessor<float, 2>();
  std::vector<float> area(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    area[static_cast<size_t>(i)] =
        std::max(0.0f, b[i][2] - b[i][0]) * std::max(0.0f, b[i][3] - b[i][1]);
  }
  std::vector<uint8_t> removed(static_cast<size_t>(n), 0);
  std::vector<int64_t> keep;
  const auto thr = static_cast<float>(iou);
  for (int64_t i = 0; i < n; ++i) {
    if (removed[static_cast<size_t>(i)]) continue;
    keep.push_back(i);
    for (int64_t j = i + 1; j < n; ++j) {
      if (removed[static_cast<size_t>(j)]) continue;
      const float w = std::min(b[i][2], b[j][2]) - std::max(b[i][0], b[j][0]);
      const float h = std::min(b[i][3], b[j][3]) - std::max(b[i][1], b[j][1]);
      if (w <= 0 || h <= 0) continue;
      const float inter = w * h;
      const float uni = area[static_cast<size_t>(i)] + area[static_cast<size_t>(j)] - inter;
      if (uni > 0 && inter / uni > thr) removed[static_cast<size_t>(j)] = 1;
    }
  }
  const torch::Tensor kept = torch::tensor(keep, torch::kLong);
  return order.index_select(0, kept);
}

std::vector<Detections> Postprocess(const torch::Tensor& predictions,
                                    const PostprocessOptions& o) {
  std::vector<Detections> out;
  const torch::Tensor pred = predictions.to(torch::kFloat);
  const int64_t cap = std::max(o.max_det, o.max_candidates);
  for (int64_t img = 0; img < pred.size(0); ++img) {
    const torch::Tensor p = pred[img].transpose(0, 1);  // [A, 4 + nc]
    const torch::Tensor boxes = p.slice(1, 0, 4);
    const torch::Tensor cls_scores = p.slice(1, 4);
    // Multi-label: every (anchor, class) pair above the threshold is a candidate.
    const torch::Tensor pairs = (cls_scores > o.conf).nonzero();  // [K, 2]
    torch::Tensor anchor = pairs.select(1, 0);
    torch::Tensor cls = pairs.select(1, 1);
    torch::Tensor score = cls_scores.index({anchor, cls});
    if (score.size(0) > cap) {
      const torch::Tensor top = std::get<1>(score.topk(cap));
      anchor = anchor.index_select(0, top);
      cls = cls.index_select(0, top);
      score = score.index_select(0, top);
    }
    torch::Tensor cand = boxes.index_select(0, anchor);
    const torch::Tensor shifted = cand + cls.unsqueeze(1).to(torch::kFloat) * kClassOffset;
    torch::Tensor keep = Nms(shifted, score, o.iou);
    if (keep.size(0) > o.max_det) keep = keep.slice(0, 0, o.max_det);
    out.push_back(Detections{cand.index_select(0, keep), score.index_select(0, keep),
                             cls.index_select(0, keep)});
  }
  return out;
}

}  // namespace libreyolo::engine

namespace libreyolo::engine {

Candidates DenseCandidates(const torch::Tensor& image_pred, const PostprocessOptions& o) {
  const torch::Tensor p = image_pred.to(torch::kFloat).transpose(0, 1);  // [N, 4 + nc]
  return PairCandidates(p.slice(1, 0, 4), p.slice(1, 4), o.conf,
                        o.max_candidates > 0 ? std::max(o.max_det, o.max_candidates) : 0);
}

Candidates PairCandidates(const torch::Tensor& boxes, const torch::Tensor& scores_in, double conf,
                          int64_t cap) {
  const torch::Tensor cls_scores = scores_in.to(torch::kFloat);
  const torch::Tensor pairs = (cls_scores > conf).nonzero();  // row-major, as np.nonzero
  torch::Tensor anchor = pairs.select(1, 0);
  torch::Tensor cls = pairs.select(1, 1);
  torch::Tensor score = cls_scores.index({anchor, cls});
  if (cap > 0 && score.size(0) > cap) {
    const torch::Tensor top =
        std::get<1>(score.sort(/*stable=*/true, /*dim=*/0, /*descending=*/true)).slice(0, 0, cap);
    anchor = anchor.index_select(0, top);
    cls = cls.index_select(0, top);
    score = score.index_select(0, top);
  }
  return Candidates{boxes.to(torch::kFloat).index_select(0, anchor), score, cls, anchor};
}

namespace {
// The best `cap` of each group's candidates (by score, stable: ties keep candidate order), the
// groups in order.
Candidates KeepBestPerGroup(const Candidates& c, const std::vector<torch::Tensor>& members,
                            int64_t cap) {
  std::vector<torch::Tensor> keep;
  for (torch::Tensor idx : members) {
    if (idx.size(0) > cap) {
      const torch::Tensor top = std::get<1>(
          c.scores.index_select(0, idx).sort(/*stable=*/true, 0, /*descending=*/true));
      idx = idx.index_select(0, top.slice(0, 0, cap));
    }
    keep.push_back(idx);
  }
  const torch::Tensor k = keep.empty() ? torch::empty({0}, torch::kLong) : torch::cat(keep);
  return Candidates{c.boxes.index_select(0, k), c.scores.index_select(0, k),
                    c.classes.index_select(0, k), c.anchors.index_select(0, k)};
}
}  // namespace

Candidates CapPerLevel(const Candidates& c, const std::vector<int64_t>& bounds, int64_t cap) {
  std::vector<torch::Tensor> members;
  for (size_t l = 0; l + 1 < bounds.size(); ++l) {
    members.push_back(
        ((c.anchors >= bounds[l]) & (c.anchors < bounds[l + 1])).nonzero().squeeze(1));
  }
  return KeepBestPerGroup(c, members, cap);
}

Candidates CapPerGroup(const Candidates& c, const torch::Tensor& group, int64_t groups,
                       int64_t cap) {
  std::vector<torch::Tensor> members;
  for (int64_t g = 0; g < groups; ++g) members.push_back((group == g).nonzero().squeeze(1));
  return KeepBestPerGroup(c, members, cap);
}

std::vector<torch::Tensor> OutputTensors(const torch::IValue& output, torch::ScalarType type) {
  std::vector<torch::Tensor> outs;
  if (output.isTensor()) outs.push_back(output.toTensor());
  if (output.isTuple()) {
    for (const torch::IValue& v : output.toTupleRef().elements()) {
      if (v.isTensor()) outs.push_back(v.toTensor());
    }
  }
  if (output.isList()) {
    for (const torch::IValue& v : output.toListRef()) {
      if (v.isTensor()) outs.push_back(v.toTensor());
    }
  }
  for (torch::Tensor& t : outs) t = t.detach().to(torch::kCPU, type);
  return outs;
}

Candidates BestClassCandidates(const torch::Tensor& boxes, const torch::Tensor& scores,
                               double conf, int64_t cap) {
  const auto [best, cls] = scores.to(torch::kFloat).max(1);
  torch::Tensor keep = (best > conf).nonzero().squeeze(1);
  if (cap > 0 && keep.size(0) > cap) {
    const torch::Tensor order = std::get<1>(
        best.index_select(0, keep).sort(/*stable=*/true, 0, /*descending=*/true));
    keep = keep.index_select(0, order.slice(0, 0, cap));
  }
  return Candidates{.boxes = boxes.to(torch::kFloat).index_select(0, keep),
                    .scores = best.index_select(0, keep),
                    .classes = cls.index_select(0, keep)};
}

Candidates TopKAnchorCandidates(const torch::Tensor& image_pred, double conf, int64_t max_det) {
  const torch::Tensor p = image_pred.to(torch::kFloat).transpose(0, 1);  // [N, 4 + nc]
  const torch::Tensor scores = p.slice(1, 4);
  const int64_t nc = scores.size(1);
  const int64_t k_anchors = std::min(max_det, scores.size(0));
  if (k_anchors == 0 || nc == 0) {
    return Candidates{.boxes = torch::empty({0, 4}),
                      .scores = torch::empty({0}),
                      .classes = torch::empty({0}, torch::kLong)};
  }
  const torch::Tensor anchor = std::get<1>(
      std::get<0>(scores.max(1)).sort(/*stable=*/true, 0, /*descending=*/true)).slice(0, 0, k_anchors);
  const torch::Tensor flat = scores.index_select(0, anchor).reshape({-1});
  const int64_t k = std::min(max_det, flat.size(0));
  const torch::Tensor idx =
      std::get<1>(flat.sort(/*stable=*/true, 0, /*descending=*/true)).slice(0, 0, k);
  const torch::Tensor score = flat.index_select(0, idx);
  const torch::Tensor keep = (score > conf).nonzero().squeeze(1);
  const torch::Tensor which = idx.index_select(0, keep);
  const torch::Tensor boxes =
      p.slice(1, 0, 4).index_select(0, anchor.index_select(0, which.div(nc, "floor")));
  return Candidates{
      .boxes = boxes, .scores = score.index_select(0, keep), .classes = which.remainder(nc)};
}

Candidates Rows6Candidates(const torch::Tensor& rows_in, double conf) {
  const torch::Tensor rows = rows_in.to(torch::kFloat);
  const torch::Tensor keep =
      ((rows.select(1, 4) > conf) & (rows.select(1, 5) >= 0)).nonzero().squeeze(1);
  const torch::Tensor r = rows.index_select(0, keep);
  return Candidates{.boxes = r.slice(1, 0, 4),
                    .scores = r.select(1, 4).contiguous(),
                    .classes = r.select(1, 5).to(torch::kLong)};
}

namespace {
torch::Tensor CxcywhToXyxy(const torch::Tensor& b) {
  const torch::Tensor cx = b.select(1, 0), cy = b.select(1, 1);
  const torch::Tensor hw = b.select(1, 2) / 2, hh = b.select(1, 3) / 2;
  return torch::stack({cx - hw, cy - hh, cx + hw, cy + hh}, 1);
}
}  // namespace

Candidates YoloxCandidates(const torch::Tensor& image_pred, double conf) {
  const torch::Tensor p = image_pred.to(torch::kFloat);  // [N, 5 + nc]
  const auto [best, cls] = p.slice(1, 5).max(1);
  const torch::Tensor score = p.select(1, 4) * best;
  const torch::Tensor keep = (score > conf).nonzero().squeeze(1);
  return Candidates{.boxes = CxcywhToXyxy(p.slice(1, 0, 4).index_select(0, keep)),
                    .scores = score.index_select(0, keep),
                    .classes = cls.index_select(0, keep)};
}

Detections FinishCandidates(const Candidates& c, double iou, int64_t max_det, bool class_aware,
                            bool drop_empty) {
  const torch::Tensor b = c.boxes;
  const torch::Tensor valid =
      drop_empty
          ? ((b.select(1, 2) > b.select(1, 0)) & (b.select(1, 3) > b.select(1, 1))).nonzero().squeeze(1)
          : torch::arange(b.size(0), torch::kLong);
  const torch::Tensor boxes = b.index_select(0, valid);
  const torch::Tensor scores = c.scores.index_select(0, valid);
  const torch::Tensor classes = c.classes.index_select(0, valid);
  std::vector<torch::Tensor> kept;
  if (class_aware) {
    const torch::Tensor ids = std::get<0>(at::_unique(classes, /*sorted=*/true));
    for (int64_t i = 0; i < ids.size(0); ++i) {
      const torch::Tensor members = (classes == ids[i]).nonzero().squeeze(1);
      kept.push_back(members.index_select(
          0, Nms(boxes.index_select(0, members), scores.index_select(0, members), iou)));
    }
  } else {
    kept.push_back(Nms(boxes, scores, iou));
  }
  torch::Tensor keep = kept.empty() ? torch::empty({0}, torch::kLong) : torch::cat(kept);
  const torch::Tensor order =
      std::get<1>(scores.index_select(0, keep).sort(/*stable=*/true, 0, /*descending=*/true));
  keep = keep.index_select(0, order).slice(0, 0, max_det);
  return Detections{boxes.index_select(0, keep), scores.index_select(0, keep),
                    classes.index_select(0, keep)};
}

Detections DetrDetections(const torch::Tensor& logits, const torch::Tensor& boxes, double conf,
                          int64_t top_k, double width, double height) {
  const torch::Tensor prob = logits.to(torch::kDouble).sigmoid().to(torch::kFloat);
  const int64_t nc = prob.size(1);
  const torch::Tensor flat = prob.reshape({-1});
  const int64_t k = std::min(top_k, flat.size(0));
  const torch::Tensor idx =
      std::get<1>(flat.sort(/*stable=*/true, 0, /*descending=*/true)).slice(0, 0, k);
  const torch::Tensor query = idx.div(nc, "floor");
  const torch::Tensor cls = idx.remainder(nc);
  torch::Tensor xyxy = CxcywhToXyxy(boxes.to(torch::kFloat)).index_select(0, query);
  xyxy = xyxy * torch::tensor({width, height, width, height}, torch::kFloat);
  const torch::Tensor score = flat.index_select(0, idx);
  const torch::Tensor keep = (score > conf).nonzero().squeeze(1);
  return Detections{xyxy.index_select(0, keep), score.index_select(0, keep),
                    cls.index_select(0, keep)};
}

Detections DetrSoftmaxDetections(const torch::Tensor& logits, const torch::Tensor& boxes,
                                 const torch::Tensor& columns, double conf, int64_t top_k,
                                 double width, double height) {
  torch::Tensor prob = logits.to(torch::kFloat).softmax(1);
  prob = prob.slice(1, 0, prob.size(1) - 1);
  if (columns.defined()) prob = prob.index_select(1, columns);
  const auto [best, cls] = prob.max(1);
  const int64_t k = std::min(top_k, best.size(0));
  const torch::Tensor query =
      std::get<1>(best.sort(/*stable=*/true, 0, /*descending=*/true)).slice(0, 0, k);
  torch::Tensor xyxy = CxcywhToXyxy(boxes.to(torch::kFloat)).index_select(0, query);
  xyxy = xyxy * torch::tensor({width, height, width, height}, torch::kFloat);
  const torch::Tensor score = best.index_select(0, query);
  const torch::Tensor keep = (score > conf).nonzero().squeeze(1);
  return Detections{xyxy.index_select(0, keep), score.index_select(0, keep),
                    cls.index_select(0, query).index_select(0, keep)};
}

}  // namespace libreyolo::engine
