#include "server/engine/infer/task_postprocess.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <opencv2/imgproc.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/engine/data/pil_resize.h"
#include "server/engine/infer/torchscript_model.h"

namespace libreyolo::engine {
namespace {

namespace F = torch::nn::functional;

// torchvision's Resize(int) then CenterCrop(S) of a PIL image (build_classify_transforms), or
// Resize((S, S)) for resize_mode "stretch".
cv::Mat ClassifyCanvas(const TaskSettings& t, const cv::Mat& bgr, int size) {
  const PilFilter filter = t.interpolation == "bicubic" ? PilFilter::kBicubic : PilFilter::kBilinear;
  if (t.stretch) return PilResize(bgr, size, size, filter);
  // math.floor(imgsz / crop_pct), then _compute_resized_output_size: the short side to it, the
  // long one int(short_new * long / short).
  const int target = static_cast<int>(std::floor(size / t.crop_pct));
  const int w = bgr.cols, h = bgr.rows;
  const int64_t short_side = std::min(w, h), long_side = std::max(w, h);
  const int new_long =
      static_cast<int>(static_cast<double>(int64_t{target} * long_side) / static_cast<double>(short_side));
  const int new_w = w <= h ? target : new_long, new_h = w <= h ? new_long : target;
  // F.resize returns the image itself when it already has the size.
  const cv::Mat resized =
      new_w == w && new_h == h ? bgr : PilResize(bgr, new_w, new_h, filter);
  // F.center_crop: int(round((H - S) / 2.0)) (round half to even, as Python's).
  const int top = static_cast<int>(std::nearbyint((new_h - size) / 2.0));
  const int left = static_cast<int>(std::nearbyint((new_w - size) / 2.0));
  return resized(cv::Rect(left, top, size, size)).clone();
}

// YOLO-NAS pose (preprocess/yolonas.py preprocess_numpy with resize_size 640, pad 127,
// padding_mode "bottom_right"): the image fitted within min(640, canvas), round() (half to even,
// as Python's), PIL BILINEAR, in the top-left corner.
cv::Mat PoseCanvas(const cv::Mat& bgr, int h, int w, ExportGeometry* geometry) {
  constexpr int kResize = 640, kPad = 127;
  const int fit = std::min({kResize, h, w});
  const double ratio = std::min(static_cast<double>(fit) / bgr.rows, static_cast<double>(fit) / bgr.cols);
  const int nw = std::clamp(static_cast<int>(std::nearbyint(bgr.cols * ratio)), 1, w);
  const int nh = std::clamp(static_cast<int>(std::nearbyint(bgr.rows * ratio)), 1, h);
  cv::Mat canvas(h, w, CV_8UC3, cv::Scalar(kPad, kPad, kPad));
  PilBilinearResize(bgr, nw, nh).copyTo(canvas(cv::Rect(0, 0, nw, nh)));
  if (geometry != nullptr) geometry->ratio = geometry->ratio_x = geometry->ratio_y = ratio;
  return canvas;
}

cv::Mat ResizeTo(const cv::Mat& src, int w, int h, int interpolation) {
  if (src.cols == w && src.rows == h) return src.clone();
  cv::Mat out;
  cv::resize(src, out, cv::Size(w, h), 0, 0, interpolation);
  return out;
}

// PIDNet / SegFormer / GTR semantic (models/pidnet/model.py, models/segformer/model.py
// preprocess_numpy): ratio min(H / h, W / w) in double, each side int(side * ratio) (truncated,
// at least 1), cv2 INTER_LINEAR, top-left on a 114 canvas.
// DEKR (preprocess/dekr.py preprocess_numpy): the same with int(side * ratio + 0.5) (round half
// up), on a 127 canvas (kDekrLetterbox; TaskInput then applies its ImageNet mean/std).
cv::Mat TopLeftLetterbox(const cv::Mat& bgr, int h, int w, bool dekr, ExportGeometry* geometry) {
  const int pad = dekr ? 127 : 114;
  const double ratio = std::min(static_cast<double>(h) / bgr.rows, static_cast<double>(w) / bgr.cols);
  const double half = dekr ? 0.5 : 0.0;
  const int nh = std::clamp(static_cast<int>(bgr.rows * ratio + half), 1, h);
  const int nw = std::clamp(static_cast<int>(bgr.cols * ratio + half), 1, w);
  cv::Mat canvas(h, w, CV_8UC3, cv::Scalar(pad, pad, pad));
  // At ratio 1 the sides are the image's: ResizeTo copies it, as DEKR's skipped resize.
  ResizeTo(bgr, nw, nh, cv::INTER_LINEAR).copyTo(canvas(cv::Rect(0, 0, nw, nh)));
  if (geometry != nullptr) geometry->ratio = geometry->ratio_x = geometry->ratio_y = ratio;
  return canvas;
}

// HRNet's person box -> centre and scale (models/hrnet/utils.py box_to_center_scale) for the
// whole image as the box [0, 0, W, H] (the backend's, with no person detector): the box widened
// to the canvas's aspect w / h, in units of 200 px, x 1.25; float32 as numpy keeps them.
struct HrnetBox {
  cv::Point2f center, scale;
};
HrnetBox HrnetWholeImage(int src_w, int src_h, int64_t canvas_h, int64_t canvas_w) {
  double width = src_w, height = src_h;
  const double aspect = static_cast<double>(canvas_w) / static_cast<double>(canvas_h);
  if (width > aspect * height) {
    height = width / aspect;
  } else if (width < aspect * height) {
    width = height * aspect;
  }
  HrnetBox b;
  b.center = cv::Point2f(static_cast<float>(src_w * 0.5), static_cast<float>(src_h * 0.5));
  b.scale = cv::Point2f(static_cast<float>(width / 200.0) * 1.25f, static_cast<float>(height / 200.0) * 1.25f);
  return b;
}

// models/hrnet/utils.py get_affine_transform (no rotation, no shift): the box's centre to the
// output's and its width (scale x 200) to the output width, from three float32 point pairs;
// OpenCV's 2 x 3 CV_64F matrix, source -> output or (`inverse`) output -> source.
cv::Mat HrnetAffine(const HrnetBox& b, int out_w, int out_h, bool inverse) {
  const auto third = [](cv::Point2f a, cv::Point2f c) {
    const cv::Point2f d = a - c;
    return c + cv::Point2f(-d.y, d.x);
  };
  const float src_w = b.scale.x * 200.0f;
  cv::Point2f src[3], dst[3];
  src[0] = b.center;
  src[1] = b.center + cv::Point2f(0.0f, src_w * -0.5f);
  src[2] = third(src[0], src[1]);
  dst[0] = cv::Point2f(static_cast<float>(out_w) * 0.5f, static_cast<float>(out_h) * 0.5f);
  dst[1] = dst[0] + cv::Point2f(0.0f, static_cast<float>(out_w) * -0.5f);
  dst[2] = third(dst[0], dst[1]);
  return inverse ? cv::getAffineTransform(dst, src) : cv::getAffineTransform(src, dst);
}

// cv2 5.0's warpAffine INTER_LINEAR, BORDER_CONSTANT 0 (the Python tool's): each output pixel
// sampled at the inverted map's point in float32, bilinear from its four neighbours (0 outside
// the image), rounded to nearest and saturated. The engine's OpenCV 4.6 rounds the point to 1/32
// px first: up to 4 grey levels apart from the backend's blob on the sample image, where this
// (and the same in float64, or rounded half up) is equal to it.
cv::Mat WarpAffineLinear(const cv::Mat& bgr, const cv::Mat& forward, int w, int h) {
  cv::Mat inv;
  cv::invertAffineTransform(forward, inv);
  const auto m = [&](int r, int c) { return static_cast<float>(inv.at<double>(r, c)); };
  cv::Mat out(h, w, CV_8UC3);
  const auto pixel = [&](int r, int c, int ch) -> float {
    if (r < 0 || c < 0 || r >= bgr.rows || c >= bgr.cols) return 0.0f;
    return bgr.at<cv::Vec3b>(r, c)[ch];
  };
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      const auto fx = static_cast<float>(x), fy = static_cast<float>(y);
      const float sx = m(0, 0) * fx + m(0, 1) * fy + m(0, 2);
      const float sy = m(1, 0) * fx + m(1, 1) * fy + m(1, 2);
      const float x0f = std::floor(sx), y0f = std::floor(sy);
      const float a = sx - x0f, b = sy - y0f;
      const int x0 = static_cast<int>(x0f), y0 = static_cast<int>(y0f);
      cv::Vec3b& o = out.at<cv::Vec3b>(y, x);
      for (int ch = 0; ch < 3; ++ch) {
        const float p00 = pixel(y0, x0, ch), p01 = pixel(y0, x0 + 1, ch);
        const float p10 = pixel(y0 + 1, x0, ch), p11 = pixel(y0 + 1, x0 + 1, ch);
        const float v0 = p00 + a * (p01 - p00), v1 = p10 + a * (p11 - p10);
        o[ch] = cv::saturate_cast<uchar>(v0 + b * (v1 - v0));
      }
    }
  }
  return out;
}

// HRNet's crop (warp_person_crop) onto the canvas, black outside.
cv::Mat HrnetCanvas(const cv::Mat& bgr, int h, int w) {
  const HrnetBox box = HrnetWholeImage(bgr.cols, bgr.rows, h, w);
  return WarpAffineLinear(bgr, HrnetAffine(box, w, h, false), w, h);
}

// One image of HRNet (the backend's _parse_hrnet_pose: postprocess/hrnet.py postprocess_hrnet
// for the one whole-image box, score 1): each keypoint at its heatmap's first maximum (0, 0 where
// the maximum is not > 0), moved 0.25 towards the larger neighbour on each axis where it lies
// strictly inside (1 < p < side - 1, upstream's bounds), then through the inverse crop affine
// for the heatmap's size; the person's score is the mean of the maxima over 0.2 (0 when none);
// its box the image. One person (max_det >= 1), whatever the conf, as the backend's.
TaskOutput HrnetPerson(const torch::Tensor& heatmaps, const ExportMetadata& meta,
                       const ExportGeometry& g, const PostprocessOptions& o) {
  const torch::Tensor hm = heatmaps.to(torch::kFloat).contiguous();
  const int64_t k = hm.size(0), hh = hm.size(1), hw = hm.size(2);
  const HrnetBox box = HrnetWholeImage(g.src_width, g.src_height, meta.height, meta.width);
  const cv::Mat inv = HrnetAffine(box, static_cast<int>(hw), static_cast<int>(hh), true);
  torch::Tensor kp = torch::zeros({1, k, 3}, torch::kFloat);
  auto out = kp.accessor<float, 3>();
  const float* data = hm.data_ptr<float>();
  float sum = 0.0f;
  int visible = 0;
  for (int64_t j = 0; j < k; ++j) {
    const float* m = data + j * hh * hw;
    const int64_t best = std::max_element(m, m + hh * hw) - m;  // the first maximum
    const float peak = m[best];
    float x = peak > 0.0f ? static_cast<float>(best % hw) : 0.0f;
    float y = peak > 0.0f ? static_cast<float>(best / hw) : 0.0f;
    const auto px = static_cast<int64_t>(std::floor(x + 0.5f));
    const auto py = static_cast<int64_t>(std::floor(y + 0.5f));
    if (1 < px && px < hw - 1 && 1 < py && py < hh - 1) {
      const auto at = [&](int64_t r, int64_t c) { return m[r * hw + c]; };
      const float dx = at(py, px + 1) - at(py, px - 1), dy = at(py + 1, px) - at(py - 1, px);
      x += static_cast<float>((dx > 0) - (dx < 0)) * 0.25f;
      y += static_cast<float>((dy > 0) - (dy < 0)) * 0.25f;
    }
    const double sx = x, sy = y;
    out[0][j][0] = static_cast<float>(inv.at<double>(0, 0) * sx + inv.at<double>(0, 1) * sy + inv.at<double>(0, 2));
    out[0][j][1] = static_cast<float>(inv.at<double>(1, 0) * sx + inv.at<double>(1, 1) * sy + inv.at<double>(1, 2));
    out[0][j][2] = peak;
    if (peak > 0.2f) {
      sum += peak;
      ++visible;
    }
  }
  TaskOutput person;
  const int64_t n = o.max_det >= 1 ? 1 : 0;
  person.boxes = torch::tensor({0.0f, 0.0f, static_cast<float>(g.src_width), static_cast<float>(g.src_height)})
                     .view({1, 4}).slice(0, 0, n);
  // np.divide(float32 sum, int64 count): in double, stored as float32.
  const float score = visible > 0 ? static_cast<float>(static_cast<double>(sum) / visible) : 0.0f;
  person.scores = torch::full({1}, score).slice(0, 0, n);
  person.classes = torch::zeros({n}, torch::kLong);
  person.keypoints = kp.slice(0, 0, n);
  person.count = n;
  return person;
}

// _parse_semantic_output's crop for the letterboxed families: the logits' share of the canvas
// the image covers, int(round(src * ratio * logits / canvas)) (half to even), at least 1.
torch::Tensor CropLetterboxLogits(const torch::Tensor& logits, const ExportMetadata& meta,
                                  const ExportGeometry& g) {
  const int64_t lh = logits.size(2), lw = logits.size(3);
  const double scale_y = static_cast<double>(lh) / static_cast<double>(meta.height);
  const double scale_x = static_cast<double>(lw) / static_cast<double>(meta.width);
  const auto valid = [](double v, int64_t limit) {
    return std::min(limit, std::max<int64_t>(static_cast<int64_t>(std::nearbyint(v)), 1));
  };
  const int64_t vh = valid(static_cast<double>(g.src_height) * g.ratio * scale_y, lh);
  const int64_t vw = valid(static_cast<double>(g.src_width) * g.ratio * scale_x, lw);
  return logits.slice(2, 0, vh).slice(3, 0, vw);
}

std::string Shapes(const std::vector<torch::Tensor>& outs) {
  std::vector<std::string> s;
  for (const torch::Tensor& t : outs) s.push_back(c10::str(t.sizes()));
  return s.empty() ? std::string("no tensors") : absl::StrJoin(s, ", ");
}

// One image of YOLO-NAS pose (the backend's _parse_yolonas_pose, then _build_result): the best
// class of each anchor (one class: its score), score >= conf, the best max(1000, max_det) when
// more, boxes and keypoints divided by the letterbox ratio, boxes clipped and empty ones dropped,
// class-aware greedy NMS, the max_det best. float32 throughout, as the backend's numpy.
TaskOutput PoseDetections(const torch::Tensor& boxes_in, torch::Tensor scores,
                          const torch::Tensor& kxy_in, const torch::Tensor& kconf_in,
                          const ExportGeometry& g, const PostprocessOptions& o) {
  torch::Tensor classes;
  if (scores.dim() > 1 && scores.size(-1) > 1) {
    auto [best, cls] = scores.max(-1);
    scores = best;
    classes = cls;
  } else {
    scores = scores.reshape({-1});
    classes = torch::zeros({scores.size(0)}, torch::kLong);
  }
  torch::Tensor idx = scores.ge(o.conf).nonzero().reshape({-1});  // anchor order
  const int64_t cap = std::max<int64_t>(1000, o.max_det);
  if (idx.size(0) > cap) {
    idx = idx.index_select(0, std::get<1>(scores.index_select(0, idx).topk(cap)));
  }
  torch::Tensor boxes = boxes_in.index_select(0, idx).clone();
  torch::Tensor kxy = kxy_in.index_select(0, idx).clone();
  const auto ratio = static_cast<float>(g.ratio);
  boxes.div_(ratio);
  kxy.div_(ratio);
  boxes.select(1, 0).clamp_(0, g.src_width);
  boxes.select(1, 2).clamp_(0, g.src_width);
  boxes.select(1, 1).clamp_(0, g.src_height);
  boxes.select(1, 3).clamp_(0, g.src_height);
  const torch::Tensor valid = (boxes.select(1, 2).gt(boxes.select(1, 0)))
                                  .logical_and(boxes.select(1, 3).gt(boxes.select(1, 1)))
                                  .nonzero()
                                  .reshape({-1});
  idx = idx.index_select(0, valid);
  boxes = boxes.index_select(0, valid);
  kxy = kxy.index_select(0, valid);
  const torch::Tensor s = scores.index_select(0, idx);
  const torch::Tensor c = classes.index_select(0, idx);
  // _batched_nms_numpy: greedy NMS per class (ascending), the union by descending score.
  std::vector<torch::Tensor> kept;
  const torch::Tensor present = std::get<0>(at::_unique(c));
  for (int64_t k = 0; k < present.size(0); ++k) {
    const torch::Tensor members = c.eq(present[k]).nonzero().reshape({-1});
    kept.push_back(members.index_select(
        0, Nms(boxes.index_select(0, members), s.index_select(0, members), o.iou)));
  }
  torch::Tensor keep = kept.empty() ? torch::empty({0}, torch::kLong) : torch::cat(kept);
  keep = keep.index_select(0, s.index_select(0, keep).argsort(0, /*descending=*/true));
  if (keep.size(0) > o.max_det) keep = keep.slice(0, 0, o.max_det);
  TaskOutput out;
  out.boxes = boxes.index_select(0, keep);
  out.scores = s.index_select(0, keep);
  out.classes = c.index_select(0, keep);
  out.keypoints = torch::cat({kxy.index_select(0, keep),
                              kconf_in.index_select(0, idx.index_select(0, keep)).unsqueeze(-1)},
                             -1);
  out.count = keep.size(0);
  return out;
}

}  // namespace

std::string TaskLabel(const ExportMetadata& meta) {
  const bool classes = meta.task_settings.task != ExportTask::kDepth;
  return absl::StrCat(meta.Label(), " ", meta.task, " (", meta.family_name, ", size ",
                      meta.size.empty() ? "?" : meta.size,
                      classes ? absl::StrCat(", ", meta.num_classes, meta.num_classes == 1 ? " class" : " classes")
                              : "", ", ",
                      meta.width, "x", meta.height, " export)");
}

bool TaskOwnsInput(const ExportMetadata& meta) {
  return meta.task_settings.input != TaskInputKind::kDetection;
}

cv::Mat TaskCanvas(const ExportMetadata& meta, const cv::Mat& bgr, ExportGeometry* geometry) {
  const TaskSettings& t = meta.task_settings;
  const int h = static_cast<int>(meta.height), w = static_cast<int>(meta.width);
  if (geometry != nullptr) {
    *geometry = ExportGeometry{};
    geometry->src_width = bgr.cols;
    geometry->src_height = bgr.rows;
    geometry->ratio_x = static_cast<double>(w) / bgr.cols;
    geometry->ratio_y = static_cast<double>(h) / bgr.rows;
  }
  switch (t.input) {
    case TaskInputKind::kClassifyEval: return ClassifyCanvas(t, bgr, h);
    case TaskInputKind::kPoseLetterbox: return PoseCanvas(bgr, h, w, geometry);
    case TaskInputKind::kSemanticLetterbox: return TopLeftLetterbox(bgr, h, w, false, geometry);
    case TaskInputKind::kDekrLetterbox: return TopLeftLetterbox(bgr, h, w, true, geometry);
    case TaskInputKind::kHrnetCrop: return HrnetCanvas(bgr, h, w);
    case TaskInputKind::kStretchCubic: {
      // cv2.resize(arr.astype(np.float32) / 255.0, (W, H), INTER_CUBIC); divided in float32, as
      // numpy does (OpenCV's Mat / s multiplies by 1 / s).
      cv::Mat exact;
      bgr.convertTo(exact, CV_32FC3);
      torch::from_blob(exact.data, {exact.rows, exact.cols, 3}, torch::kFloat).div_(255.0f);
      return ResizeTo(exact, w, h, cv::INTER_CUBIC);
    }
    case TaskInputKind::kStretchCv:
    case TaskInputKind::kDetection: break;
  }
  return ResizeTo(bgr, w, h, cv::INTER_LINEAR);
}

absl::StatusOr<torch::Tensor> TaskInput(const ExportMetadata& meta,
                                        const std::vector<cv::Mat>& canvases,
                                        torch::ScalarType dtype) {
  const TaskSettings& t = meta.task_settings;
  const bool unit = t.input == TaskInputKind::kStretchCubic;
  std::vector<torch::Tensor> images;
  for (size_t i = 0; i < canvases.size(); ++i) {
    const cv::Mat& c = canvases[i];
    if (c.type() != (unit ? CV_32FC3 : CV_8UC3) || c.rows != meta.height || c.cols != meta.width ||
        !c.isContinuous()) {
      return absl::InvalidArgumentError(absl::StrCat("image ", i, " is not a ", meta.width, "x",
                                                     meta.height, " BGR canvas"));
    }
    torch::Tensor hwc =
        torch::from_blob(c.data, {c.rows, c.cols, 3}, unit ? torch::kFloat : torch::kUInt8);
    // R, G, B; YOLO-NAS pose's B, G, R (it reverses the channels before its preprocessing).
    if (t.input != TaskInputKind::kPoseLetterbox) hwc = hwc.flip({2});
    torch::Tensor x = hwc.permute({2, 0, 1}).to(torch::kFloat);
    if (!unit) x = x / 255.0f;
    if (t.std[0] != 0) {
      const torch::Tensor mean = torch::tensor({t.mean[0], t.mean[1], t.mean[2]}).view({3, 1, 1});
      const torch::Tensor std = torch::tensor({t.std[0], t.std[1], t.std[2]}).view({3, 1, 1});
      x = (x - mean) / std;
    }
    images.push_back(x);
  }
  if (images.empty()) return absl::InvalidArgumentError("no images");
  return torch::stack(images).contiguous().to(dtype);
}

absl::StatusOr<std::vector<TaskOutput>> TaskPostprocess(
    const ExportMetadata& meta, const torch::IValue& output,
    const std::vector<ExportGeometry>& geometry, const PostprocessOptions& o, int64_t top_k) {
  const TaskSettings& t = meta.task_settings;
  if (!t.no_postprocess.empty()) return absl::FailedPreconditionError(t.no_postprocess);
  const std::vector<torch::Tensor> outs = OutputTensors(output, torch::kFloat);
  const auto bad = [&](absl::string_view want) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a ", meta.family_name, " '", t.task_name, "' export returned outputs ", Shapes(outs),
        "; the backend's decode takes ", want));
  };
  const auto batch = static_cast<int64_t>(geometry.size());
  std::vector<TaskOutput> result;
  if (outs.empty()) return bad("a tensor");
  torch::Tensor x = outs[0];
  switch (t.task) {
    case ExportTask::kClassify: {
      if (x.dim() == 1) x = x.unsqueeze(0);
      if (x.dim() != 2 || x.size(0) != batch) return bad("logits [batch, classes]");
      const torch::Tensor probs = torch::softmax(x, 1);
      const int64_t k = std::min(top_k, probs.size(1));
      for (int64_t i = 0; i < batch; ++i) {
        auto [scores, classes] = probs[i].topk(k);
        TaskOutput top;
        top.classes = classes;
        top.scores = scores;
        top.count = k;
        result.push_back(std::move(top));
      }
      return result;
    }
    case ExportTask::kSemantic:
    case ExportTask::kDepth: {
      const bool depth = t.task == ExportTask::kDepth;
      if (depth && x.dim() == 2) x = x.unsqueeze(0).unsqueeze(0);
      if (depth && x.dim() == 3) x = x.size(0) == batch ? x.unsqueeze(1) : x.unsqueeze(0);
      if (!depth && x.dim() == 3) x = x.unsqueeze(0);
      if (x.dim() != 4 || x.size(0) != batch || (depth && x.size(1) != 1)) {
        return bad(depth ? "a depth map [batch, 1, H, W]" : "logits [batch, classes, H, W]");
      }
      for (int64_t i = 0; i < batch; ++i) {
        const ExportGeometry& g = geometry[static_cast<size_t>(i)];
        // Upsampled to the source image: depth with align_corners=True (the native depth
        // families'), semantic logits with False (PIDNet's True), the letterboxed families'
        // cropped to the image first, then their argmax.
        torch::Tensor one = x.slice(0, i, i + 1);
        if (t.input == TaskInputKind::kSemanticLetterbox) one = CropLetterboxLogits(one, meta, g);
        const torch::Tensor up = F::interpolate(
            one, F::InterpolateFuncOptions()
                     .size(std::vector<int64_t>{g.src_height, g.src_width})
                     .mode(torch::kBilinear)
                     .align_corners(depth || t.align_corners));
        TaskOutput map;
        if (depth) {
          map.map = up[0][0];
          map.count = map.map.numel();
        } else {
          map.map = up.argmax(1)[0];
          map.count = std::get<0>(at::_unique(map.map)).numel();
        }
        result.push_back(std::move(map));
      }
      return result;
    }
    case ExportTask::kPose: {
      if (t.input == TaskInputKind::kHrnetCrop) {
        if (outs.size() != 1 || x.dim() != 4 || x.size(0) != batch) {
          return bad("one heatmap tensor [batch, keypoints, H, W]");
        }
        for (int64_t i = 0; i < batch; ++i) {
          result.push_back(HrnetPerson(x[i], meta, geometry[static_cast<size_t>(i)], o));
        }
        return result;
      }
      if (outs.size() != 4 || outs[0].dim() != 3 || outs[0].size(2) != 4 || outs[2].dim() != 4 ||
          outs[2].size(3) != 2 || outs[3].dim() != 3 || outs[0].size(0) != batch) {
        return bad("boxes [batch, A, 4], scores [batch, A, classes], keypoints [batch, A, K, 2] "
                   "and their confidences [batch, A, K]");
      }
      for (int64_t i = 0; i < batch; ++i) {
        result.push_back(PoseDetections(outs[0][i], outs[1][i], outs[2][i], outs[3][i],
                                        geometry[static_cast<size_t>(i)], o));
      }
      return result;
    }
    case ExportTask::kDetect:
    case ExportTask::kSegment: break;
  }
  return absl::FailedPreconditionError(
      absl::StrCat("the engine has no decode for a '", t.task_name, "' export"));
}

}  // namespace libreyolo::engine
