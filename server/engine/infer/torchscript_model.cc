#include "server/engine/infer/torchscript_model.h"

#include <torch/torch.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <opencv2/imgproc.hpp>
#include <unordered_map>

#include "absl/algorithm/container.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/status/status_macros.h"
#include "server/engine/data/pil_resize.h"
#include "server/engine/data/transforms.h"
#include "server/engine/infer/task_postprocess.h"

namespace libreyolo::engine {
namespace {

constexpr char kMetadataFile[] = "libreyolo_metadata.json";

cv::Mat ResizeCv(const cv::Mat& src, int width, int height) {
  if (src.cols == width && src.rows == height) return src.clone();
  cv::Mat out;
  cv::resize(src, out, cv::Size(width, height), 0, 0, cv::INTER_LINEAR);
  return out;
}

}  // namespace

namespace {

// An error's first line, what follows it counted ("... (+12 lines)"): a model file's
// error is one line of the job's error, never a block of LibTorch's internals.
std::string OneLine(const std::string& what) {
  // From the first line that says something: LibTorch's script errors start with a newline
  // ("\nUnknown type name 'posix.system':\nposix.system"), which left an empty first line.
  const size_t from = what.find_first_not_of(" \t\r\n");
  if (from == std::string::npos) return what;
  const size_t nl = what.find('\n', from);
  if (nl == std::string::npos) return what.substr(from);
  const size_t more = static_cast<size_t>(std::count(what.begin() + static_cast<std::ptrdiff_t>(nl), what.end(), '\n'));
  return absl::StrCat(what.substr(from, nl - from), " (+", more, " lines)");
}

}  // namespace

bool IsTorchScriptArchive(const std::string& path) {
  // torch.jit.save writes a zip whose entries include <folder>/constants.pkl (torch.save's zip has
  // data.pkl and no constants.pkl). The central directory, at the end, names them: its last MiB
  // holds it for any model (an entry's record is ~50 bytes plus its name).
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return false;
  const std::streamoff size = in.tellg();
  if (size < 4) return false;
  char magic[4] = {};
  in.seekg(0);
  if (!in.read(magic, 4) || std::string(magic, 4) != std::string("PK\x03\x04", 4)) return false;
  const std::streamoff tail = std::min<std::streamoff>(size, std::streamoff{1} << 20);
  std::string bytes(static_cast<size_t>(tail), '\0');
  in.seekg(size - tail);
  if (!in.read(bytes.data(), tail)) return false;
  return absl::StrContains(bytes, "/constants.pkl");
}

namespace {

// CenterNet's canvas (models/centernet/utils.py get_affine_transform, no rotation): the image's
// centre to the canvas's and its longer edge to the canvas width, cv2.warpAffine INTER_LINEAR,
// black outside. The three point pairs are float32 as numpy makes them (exact: halves of whole
// numbers) and the matrices OpenCV's own, the inverse kept for the boxes.
cv::Mat AffineCentreCanvas(const cv::Mat& bgr, int w, int h, ExportGeometry* g) {
  const auto third = [](cv::Point2f a, cv::Point2f b) {
    const cv::Point2f d = a - b;
    return b + cv::Point2f(-d.y, d.x);
  };
  const auto side = static_cast<float>(std::max(bgr.cols, bgr.rows));
  cv::Point2f src[3], dst[3];
  src[0] = cv::Point2f(static_cast<float>(bgr.cols) / 2.0f, static_cast<float>(bgr.rows) / 2.0f);
  src[1] = src[0] + cv::Point2f(0.0f, -0.5f * side);
  src[2] = third(src[0], src[1]);
  dst[0] = cv::Point2f(0.5f * static_cast<float>(w), 0.5f * static_cast<float>(h));
  dst[1] = dst[0] + cv::Point2f(0.0f, -0.5f * static_cast<float>(w));
  dst[2] = third(dst[0], dst[1]);
  cv::Mat canvas;
  cv::warpAffine(bgr, canvas, cv::getAffineTransform(src, dst), cv::Size(w, h), cv::INTER_LINEAR,
                 cv::BORDER_CONSTANT, cv::Scalar(0, 0, 0));
  const cv::Mat inverse = cv::getAffineTransform(dst, src);  // CV_64F, 2 x 3
  for (int k = 0; k < 6; ++k) g->inverse_affine[static_cast<size_t>(k)] = inverse.at<double>(k / 3, k % 3);
  return canvas;
}

// FCOS's resized size (models/fcos/utils.py resize_dimensions): one scale bringing the shorter
// edge to `size` and the longer to at most round(size * 1333 / 800) (half to even, as Python's),
// each edge floored as F.interpolate(recompute_scale_factor=True) floors it.
cv::Size FcosResized(int rows, int cols, int64_t size) {
  const double max_size = std::nearbyint(static_cast<double>(size) * 1333.0 / 800.0);
  const double scale = std::min(static_cast<double>(size) / std::min(rows, cols),
                                max_size / std::max(rows, cols));
  return cv::Size(std::max(1, static_cast<int>(cols * scale)),
                  std::max(1, static_cast<int>(rows * scale)));
}

// FCOS's input (models/fcos/utils.py _preprocess_tensor): the normalised float image [3, H, W]
// resized bilinearly (align_corners false) to FcosResized.
torch::Tensor FcosResize(const torch::Tensor& chw, int64_t size) {
  const cv::Size r = FcosResized(static_cast<int>(chw.size(1)), static_cast<int>(chw.size(2)), size);
  return at::upsample_bilinear2d(chw.unsqueeze(0), {r.height, r.width}, /*align_corners=*/false)[0];
}

// Each image zero-padded bottom-right to the batch's largest height and width, rounded up to a
// multiple of `divisor` (torchvision's batching; one image: its own size rounded up, as FCOS's).
std::vector<torch::Tensor> PadToMultiple(std::vector<torch::Tensor> images, int64_t divisor) {
  int64_t h = 0, w = 0;
  for (const torch::Tensor& x : images) {
    h = std::max(h, x.size(1));
    w = std::max(w, x.size(2));
  }
  h = (h + divisor - 1) / divisor * divisor;
  w = (w + divisor - 1) / divisor * divisor;
  for (torch::Tensor& x : images) {
    x = torch::constant_pad_nd(x, {0, w - x.size(2), 0, h - x.size(1)}, 0);
  }
  return images;
}

}  // namespace

absl::StatusOr<std::unique_ptr<TorchScriptModel>> TorchScriptModel::Load(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return absl::NotFoundError(absl::StrCat("model file not found: ", path));
  }
  std::unique_ptr<TorchScriptModel> m(new TorchScriptModel());
  torch::jit::ExtraFilesMap extra{{kMetadataFile, ""}};
  try {
    m->module_ = torch::jit::load(path, torch::kCPU, extra);
  } catch (const c10::Error& e) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": LibTorch cannot load it as TorchScript: ",
                                                   OneLine(e.what_without_backtrace())));
  } catch (const std::exception& e) {
    // Not only c10::Error: a foreign pickle among its constants throws others (issue 40 A.9:
    // that used to be exit 1 with raw newlines in the message).
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": LibTorch cannot load it as TorchScript: ", OneLine(e.what())));
  }
  m->module_.eval();
  const std::string& json = extra[kMetadataFile];
  if (json.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": a TorchScript file without libreyolo_metadata.json (not a LibreYOLO export): "
              "export the model with `libreyolo export --format torchscript`"));
  }
  ASSIGN_OR_RETURN(auto meta, ParseExportMetadata(json, path));
  m->meta_ = std::move(meta);
  // The graph's float type (fp16 for --half exports): its first floating parameter's.
  for (const at::Tensor& t : m->module_.parameters()) {
    if (t.is_floating_point()) {
      m->dtype_ = t.scalar_type();
      break;
    }
  }
  return m;
}

cv::Mat TorchScriptModel::Canvas(const cv::Mat& bgr, ExportGeometry* geometry) const {
  if (TaskOwnsInput(meta_)) return TaskCanvas(meta_, bgr, geometry);  // task_postprocess.h
  const int h = static_cast<int>(meta_.height), w = static_cast<int>(meta_.width);
  const ExportFamily& f = *meta_.family;
  ExportGeometry g;
  g.src_width = bgr.cols;
  g.src_height = bgr.rows;
  cv::Mat canvas;
  switch (f.resize) {
    case ExportResize::kLetterboxCv:
    case ExportResize::kLetterboxPil:
    case ExportResize::kLetterboxPilCenter: {
      int nh = 0, nw = 0;
      if (f.resize == ExportResize::kLetterboxPilCenter) {
        // YOLO-NAS (models/yolonas/utils.py): fitted within min(cap, canvas), round() (half to
        // even, as Python's), centred.
        const double fit = std::min({static_cast<double>(f.fit_cap > 0 ? f.fit_cap : h),
                                     static_cast<double>(h), static_cast<double>(w)});
        g.ratio = std::min(fit / bgr.rows, fit / bgr.cols);
        nh = std::clamp(static_cast<int>(std::nearbyint(bgr.rows * g.ratio)), 1, h);
        nw = std::clamp(static_cast<int>(std::nearbyint(bgr.cols * g.ratio)), 1, w);
        g.pad_left = (w - nw) / 2;
        g.pad_top = (h - nh) / 2;
      } else {
        g.ratio = std::min(static_cast<double>(h) / bgr.rows, static_cast<double>(w) / bgr.cols);
        nh = std::clamp(static_cast<int>(bgr.rows * g.ratio), 1, h);
        nw = std::clamp(static_cast<int>(bgr.cols * g.ratio), 1, w);
        if (f.resize == ExportResize::kLetterboxCv && meta_.letterbox_pad == "center") {
          g.pad_left = (w - nw) / 2;
          g.pad_top = (h - nh) / 2;
        }
      }
      const cv::Mat resized = f.resize == ExportResize::kLetterboxCv
                                  ? ResizeCv(bgr, nw, nh)
                                  : PilBilinearResize(bgr, nw, nh);
      canvas = cv::Mat(h, w, CV_8UC3, cv::Scalar(f.pad[2], f.pad[1], f.pad[0]));
      resized.copyTo(canvas(cv::Rect(g.pad_left, g.pad_top, nw, nh)));
      g.ratio_x = g.ratio_y = g.ratio;
      break;
    }
    case ExportResize::kStretchPil: canvas = PilBilinearResize(bgr, w, h); break;
    case ExportResize::kStretchCv: canvas = ResizeCv(bgr, w, h); break;
    case ExportResize::kAffineCentre: canvas = AffineCentreCanvas(bgr, w, h, &g); break;
    case ExportResize::kScaleFloat: {  // the image itself: ToInput resizes it in float
      canvas = bgr.isContinuous() ? bgr : bgr.clone();
      const cv::Size r = FcosResized(bgr.rows, bgr.cols, h);
      g.ratio_x = static_cast<double>(r.width) / bgr.cols;
      g.ratio_y = static_cast<double>(r.height) / bgr.rows;
      break;
    }
  }
  if (f.resize == ExportResize::kStretchPil || f.resize == ExportResize::kStretchCv) {
    g.ratio_x = static_cast<double>(w) / bgr.cols;
    g.ratio_y = static_cast<double>(h) / bgr.rows;
  }
  if (geometry != nullptr) *geometry = g;
  return canvas;
}

absl::StatusOr<torch::Tensor> TorchScriptModel::ToInput(const std::vector<cv::Mat>& canvases) const {
  if (TaskOwnsInput(meta_)) return TaskInput(meta_, canvases, dtype_);
  const ExportFamily& f = *meta_.family;
  const bool norm = f.std[0] != 0 && (f.norm_sizes.empty() ||
                                      absl::c_linear_search(absl::StrSplit(f.norm_sizes, ','),
                                                            absl::string_view(meta_.size)));
  std::vector<torch::Tensor> images;
  for (size_t i = 0; i < canvases.size(); ++i) {
    const cv::Mat& c = canvases[i];
    const bool own_size = f.resize == ExportResize::kScaleFloat;  // FCOS: any image's size
    if (c.type() != CV_8UC3 || !c.isContinuous() ||
        (!own_size && (c.rows != meta_.height || c.cols != meta_.width))) {
      return absl::InvalidArgumentError(absl::StrCat(
          "image ", i, " is not a ", meta_.width, "x", meta_.height, " 8-bit BGR canvas"));
    }
    torch::Tensor hwc = torch::from_blob(c.data, {c.rows, c.cols, 3}, torch::kUInt8);
    if (!f.bgr) hwc = hwc.flip({2});  // B, G, R -> R, G, B
    torch::Tensor x = hwc.permute({2, 0, 1}).to(torch::kFloat);
    if (f.unit_range) x = x / 255.0f;  // divided, as numpy's / 255.0 (not x * 1/255)
    if (norm) {
      const torch::Tensor mean = torch::tensor({f.mean[0], f.mean[1], f.mean[2]}).view({3, 1, 1});
      const torch::Tensor std = torch::tensor({f.std[0], f.std[1], f.std[2]}).view({3, 1, 1});
      x = (x - mean) / std;
    }
    if (f.resize == ExportResize::kScaleFloat) x = FcosResize(x, meta_.height);
    images.push_back(x);
  }
  if (images.empty()) return absl::InvalidArgumentError("no images");
  if (f.resize == ExportResize::kScaleFloat) images = PadToMultiple(std::move(images), 32);
  return torch::stack(images).contiguous().to(dtype_);
}

torch::IValue TorchScriptModel::Forward(const torch::Tensor& input) {
  return module_.forward({input});
}

void TorchScriptModel::To(const torch::Device& device) {
  module_.to(device);
  device_ = device;
}

std::string TorchScriptModel::FloatType() const {
  switch (dtype_) {
    case torch::kFloat: return "fp32";
    case torch::kHalf: return "fp16";
    case torch::kBFloat16: return "bf16";
    default: return c10::toString(dtype_);
  }
}

namespace {

// The interpreter's message ends with the failing op's own error ("RuntimeError: shape
// '[1, 300, 4]' is invalid ..."): that line, not its "The following operation failed"; at most
// 300 bytes.
std::string LibTorchReason(const std::exception& e) {
  std::vector<std::string> lines = absl::StrSplit(e.what(), '\n', absl::SkipWhitespace());
  std::string why = lines.empty() ? "no message" : lines.back();
  for (const std::string& l : lines) {
    if (absl::StartsWith(l, "RuntimeError: ")) why = l.substr(14);
  }
  return why.substr(0, 300);
}

}  // namespace

absl::Status TorchScriptModel::CheckBatch(int64_t batch) {
  if (batch == 1) return absl::OkStatus();
  const std::string way_out = absl::StrCat(
      "; a TorchScript export runs at the batch it was traced at: run it with --batch 1, or "
      "export it again at this batch (`libreyolo export --format torchscript --batch ",
      batch, "`)");
  const std::string what =
      absl::StrCat("--batch ", batch, ": the ", meta_.Label(), " export's traced graph");
  torch::NoGradGuard no_grad;
  // Different images, made without touching the global random generator.
  const int64_t n = 3 * meta_.height * meta_.width;
  const torch::Tensor pattern = torch::arange(batch * n, torch::kDouble);
  const torch::Tensor images = (pattern * 0.618033988749895)
                                   .frac()
                                   .view({batch, 3, meta_.height, meta_.width})
                                   .to(device_, dtype_);
  std::vector<torch::Tensor> alone, together;
  try {
    alone = OutputTensors(module_.forward({images.slice(0, 0, 1)}), torch::kDouble);
  } catch (const std::exception& e) {
    // Not the batch's fault: the graph does not run on this device at all (an export traced on
    // the CPU carries "cpu" constants in its anchor code).
    return absl::InvalidArgumentError(absl::StrCat(
        "the ", meta_.Label(), " export's traced graph does not run one image on ", device_.str(),
        " (LibTorch: ", LibTorchReason(e), "): export it on this device (`libreyolo export ",
        "--format torchscript --device ", device_.str(), "`) or run it with --device cpu"));
  }
  try {
    together = OutputTensors(module_.forward({images}), torch::kDouble);
  } catch (const std::exception& e) {  // c10::Error, or the interpreter's JITException
    return absl::InvalidArgumentError(absl::StrCat(
        what, " does not run a batch of ", batch, " (LibTorch: ", LibTorchReason(e), ")", way_out));
  }
  for (size_t k = 0; k < alone.size() && k < together.size(); ++k) {
    if (together[k].dim() == 0 || together[k].size(0) != batch ||
        together[k].sizes().slice(1) != alone[k].sizes().slice(1)) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, " gives output ", k, " of shape ", c10::str(together[k].sizes()),
          " for a batch of ", batch, " (", c10::str(alone[k].sizes()), " for one image)",
          way_out));
    }
  }
  return absl::OkStatus();
}

namespace {

std::string ShapesOf(const std::vector<torch::Tensor>& outs) {
  std::vector<std::string> shapes;
  for (const torch::Tensor& t : outs) shapes.push_back(c10::str(t.sizes()));
  return shapes.empty() ? std::string("no tensors") : absl::StrJoin(shapes, ", ");
}

// How many output tensors a layout takes, and whether `outs` has that form: the decoder is
// chosen by the family's row, and outputs of another form are named rather than misread.
bool LayoutFits(ExportOutput layout, const std::vector<torch::Tensor>& outs, int64_t nc) {
  const auto rank3 = [&](size_t k) { return outs.size() > k && outs[k].dim() == 3; };
  switch (layout) {
    case ExportOutput::kDenseXyxy:
    case ExportOutput::kDenseTopK: return rank3(0) && outs[0].size(1) == 4 + nc;
    case ExportOutput::kRowsXyxy: return rank3(0) && outs[0].size(2) == 4 + nc;
    case ExportOutput::kYoloxCxcywh:
    case ExportOutput::kRowsLevelXyxy: return rank3(0) && outs[0].size(2) == 5 + nc;
    case ExportOutput::kRows6: return rank3(0) && outs[0].size(2) == 6;
    case ExportOutput::kBoxesScores:
    case ExportOutput::kDetr:
    case ExportOutput::kDetrSoftmax:
      return rank3(0) && rank3(1) && (outs[0].size(2) == 4 || outs[1].size(2) == 4) &&
             outs[0].size(1) == outs[1].size(1);
  }
  return false;
}

// Why `outs` cannot be decoded as the family's layout (the family has none, or the outputs are
// not of its form), naming the shapes and the way out; OK when they can.
absl::Status CheckDecodable(const ExportMetadata& meta, const std::vector<torch::Tensor>& outs) {
  const ExportFamily& f = *meta.family;
  const std::string no_decode =
      "; `profile infer --postprocess none` profiles its preprocessing and forward without a "
      "decode (or profile the family's native checkpoint: a daemon runs the Python LibreYOLO's "
      "own profiler for a family the engine lacks, `profile infer --weights <checkpoint>.pt`)";
  if (!f.unsupported.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a ", meta.family_name, " export (outputs ", ShapesOf(outs),
        "): the engine does not decode it: ", f.unsupported, no_decode));
  }
  if (!LayoutFits(f.output, outs, meta.num_classes)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a ", meta.family_name, " export returned outputs ", ShapesOf(outs), " with ",
        meta.num_classes, " classes in its metadata, not the layout the engine decodes for ",
        meta.family_name, no_decode));
  }
  return absl::OkStatus();
}

// Image `i` of a DETR-style export (queries with logits and boxes): the backend's _parse_rtdetr
// and its kin, already in source pixels.
Detections DetrImage(const ExportMetadata& meta, const std::vector<torch::Tensor>& outs, int64_t i,
                     const PostprocessOptions& o, int64_t max_det, const ExportGeometry& g) {
  const ExportFamily& f = *meta.family;
  // The boxes are the output whose last dimension is 4 (the backend's _parse_rtdetr).
  const bool second_is_boxes = outs[1].size(-1) == 4;
  torch::Tensor logits = (second_is_boxes ? outs[0] : outs[1])[i];
  const torch::Tensor boxes = (second_is_boxes ? outs[1] : outs[0])[i];
  int64_t top_k = max_det;
  // LW-DETR's cap (the backend's _lwdetr_num_select): its t size's queries, else 300.
  if (f.small_size_top_k > 0) {
    top_k = std::min<int64_t>(top_k, meta.size == "t" ? f.small_size_top_k : 300);
  }
  // COCO-91 logits (91 ids, +1 for DETR's "no object") cut to the 80 classes.
  const int64_t id_columns = logits.size(1) - (f.output == ExportOutput::kDetrSoftmax ? 1 : 0);
  const torch::Tensor columns = f.coco91_logits && id_columns == 91 && meta.num_classes == 80
                                    ? torch::tensor(Coco91CategoryIds(), torch::kLong)
                                    : torch::Tensor();
  if (f.output == ExportOutput::kDetrSoftmax) {
    return DetrSoftmaxDetections(logits, boxes, columns, o.conf, top_k, g.src_width, g.src_height);
  }
  if (columns.defined()) logits = logits.index_select(1, columns);
  return DetrDetections(logits, boxes, o.conf, top_k, g.src_width, g.src_height);
}

// Image `i`'s candidates (canvas pixels) from a dense or row layout, as the family's row says.
Candidates LayoutCandidates(const ExportMetadata& meta, const std::vector<torch::Tensor>& outs,
                            int64_t i, const PostprocessOptions& o, int64_t max_det) {
  const ExportFamily& f = *meta.family;
  switch (f.output) {
    case ExportOutput::kDenseXyxy: {
      PostprocessOptions po = o;
      po.max_candidates = f.candidates;
      return DenseCandidates(outs[0][i], po);
    }
    case ExportOutput::kDenseTopK: return TopKAnchorCandidates(outs[0][i], o.conf, max_det);
    case ExportOutput::kRowsXyxy: {
      const torch::Tensor rows = outs[0][i];
      std::vector<int64_t> bounds = {0};
      for (int s : f.level_strides) {
        if (s > 0) bounds.push_back(bounds.back() + (meta.height + s - 1) / s * ((meta.width + s - 1) / s));
      }
      if (bounds.size() > 1 && bounds.back() == rows.size(0)) {
        return CapPerLevel(PairCandidates(rows.slice(1, 0, 4), rows.slice(1, 4), o.conf, 0), bounds,
                           f.candidates);
      }
      return PairCandidates(rows.slice(1, 0, 4), rows.slice(1, 4), o.conf, f.candidates);
    }
    case ExportOutput::kYoloxCxcywh: return YoloxCandidates(outs[0][i], o.conf);
    case ExportOutput::kRows6:
      // CenterNet's ranked peaks: the first max_det rows (_parse_centernet's budget).
      return Rows6Candidates(f.ranked_rows ? outs[0][i].slice(0, 0, max_det) : outs[0][i], o.conf);
    case ExportOutput::kRowsLevelXyxy: {
      const torch::Tensor rows = outs[0][i];
      const Candidates c = PairCandidates(rows.slice(1, 0, 4), rows.slice(1, 5), o.conf, 0);
      // np.rint: half to even, as torch.round.
      const torch::Tensor level = rows.select(1, 4).round().to(torch::kLong).index_select(0, c.anchors);
      return CapPerGroup(c, level, f.level_count, f.candidates);
    }
    case ExportOutput::kBoxesScores: {
      // The boxes are the output whose last dimension is 4 (the backend's _parse_yolonas).
      const bool first_is_boxes = outs[0].size(-1) == 4 && outs[1].size(-1) != 4;
      const bool second_is_boxes = !first_is_boxes && outs[1].size(-1) == 4;
      const torch::Tensor boxes = (second_is_boxes ? outs[1] : outs[0])[i];
      const torch::Tensor scores = (second_is_boxes ? outs[0] : outs[1])[i];
      return f.multi_label ? PairCandidates(boxes, scores, o.conf, f.candidates)
                           : BestClassCandidates(boxes, scores, o.conf, f.candidates);
    }
    default: break;
  }
  return Candidates{};
}

// Candidates on the canvas -> the image's detections: through CenterNet's inverse warp, or back
// through the letterbox / stretch and clipped, then the family's NMS and max_det.
Detections FinishImage(const ExportFamily& f, Candidates c, const ExportGeometry& g,
                       const PostprocessOptions& o, int64_t max_det) {
  if (f.resize == ExportResize::kAffineCentre) {
    // Through the inverse warp, in float32 as postprocess/centernet.py; not clipped: its
    // clamp_ acts on a copy (boxes[:, [0, 2]] is advanced indexing), so the backend's boxes
    // may leave the image, and ours do as well.
    const std::array<double, 6>& m = g.inverse_affine;
    const torch::Tensor mt =
        torch::tensor({m[0], m[1], m[2], m[3], m[4], m[5]}, torch::kDouble).view({2, 3}).to(torch::kFloat).t();
    const torch::Tensor ones = torch::ones({c.boxes.size(0), 1}, torch::kFloat);
    c.boxes = torch::cat({torch::cat({c.boxes.slice(1, 0, 2), ones}, 1).matmul(mt),
                          torch::cat({c.boxes.slice(1, 2, 4), ones}, 1).matmul(mt)}, 1);
    return FinishCandidates(c, 2.0, max_det, false, f.drop_empty);
  }
  // Back to the source image, clipped (the backend does both before its NMS).
  torch::Tensor b = c.boxes.clone();
  b.select(1, 0).sub_(g.pad_left);
  b.select(1, 2).sub_(g.pad_left);
  b.select(1, 1).sub_(g.pad_top);
  b.select(1, 3).sub_(g.pad_top);
  b.select(1, 0).div_(static_cast<float>(g.ratio_x));
  b.select(1, 2).div_(static_cast<float>(g.ratio_x));
  b.select(1, 1).div_(static_cast<float>(g.ratio_y));
  b.select(1, 3).div_(static_cast<float>(g.ratio_y));
  b.select(1, 0).clamp_(0, g.src_width);
  b.select(1, 2).clamp_(0, g.src_width);
  b.select(1, 1).clamp_(0, g.src_height);
  b.select(1, 3).clamp_(0, g.src_height);
  c.boxes = b;
  if (f.nms == ExportNms::kNone) return FinishCandidates(c, 2.0, max_det, false);  // IoU never > 2
  return FinishCandidates(c, o.iou, max_det, f.nms == ExportNms::kClassAware, f.drop_empty);
}

}  // namespace

absl::StatusOr<std::vector<Detections>> TorchScriptModel::Postprocess(
    const torch::IValue& output, const PostprocessOptions& o,
    const std::vector<ExportGeometry>& geometry) const {
  const std::vector<torch::Tensor> outs = OutputTensors(output, torch::kFloat);
  RETURN_IF_ERROR(CheckDecodable(meta_, outs));
  const ExportFamily& f = *meta_.family;
  const int64_t max_det = f.max_det_cap > 0 ? std::min(o.max_det, f.max_det_cap) : o.max_det;
  const bool detr = f.output == ExportOutput::kDetr || f.output == ExportOutput::kDetrSoftmax;
  std::vector<Detections> result;
  for (size_t img = 0; img < geometry.size(); ++img) {
    const auto i = static_cast<int64_t>(img);
    if (detr) {
      result.push_back(DetrImage(meta_, outs, i, o, max_det, geometry[img]));
    } else {
      result.push_back(FinishImage(f, LayoutCandidates(meta_, outs, i, o, max_det), geometry[img], o, max_det));
    }
  }
  return result;
}

}  // namespace libreyolo::engine
