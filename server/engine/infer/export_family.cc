#include "server/engine/infer/export_family.h"

#include <rapidjson/document.h>

#include <array>
#include <cmath>
#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "common/json/json_read.h"
#include "common/render/terminal_text.h"
#include "common/status/status_macros.h"

namespace libreyolo::engine {
namespace {

using R = ExportResize;
using O = ExportOutput;
using N = ExportNms;

constexpr size_t kFamilyCount = 34;
constexpr std::array<float, 3> kImageNetMean = {0.485f, 0.456f, 0.406f};
constexpr std::array<float, 3> kImageNetStd = {0.229f, 0.224f, 0.225f};
// ImageNet's in 0..255 units (PicoDet, PP-YOLOE: RGB; RTMDet: B, G, R).
constexpr std::array<float, 3> kImageNet255Mean = {123.675f, 116.28f, 103.53f};
constexpr std::array<float, 3> kImageNet255Std = {58.395f, 57.12f, 57.375f};
constexpr std::array<float, 3> kImageNet255MeanBgr = {103.53f, 116.28f, 123.675f};
constexpr std::array<float, 3> kImageNet255StdBgr = {57.375f, 57.12f, 58.395f};
// EfficientDet: np.float32(ImageNet) * 255.0, in float32.
constexpr std::array<float, 3> kEffDetMean = {0.485f * 255.0f, 0.456f * 255.0f, 0.406f * 255.0f};
constexpr std::array<float, 3> kEffDetStd = {0.229f * 255.0f, 0.224f * 255.0f, 0.225f * 255.0f};

constexpr ExportFamily Family(absl::string_view name, absl::string_view prefix, R resize, bool bgr,
                              bool unit_range, O output, N nms) {
  ExportFamily f{};
  f.name = name;
  f.prefix = prefix;
  f.resize = resize;
  f.bgr = bgr;
  f.unit_range = unit_range;
  f.output = output;
  f.nms = nms;
  return f;
}
constexpr ExportFamily Norm(ExportFamily f, std::array<float, 3> mean, std::array<float, 3> std) {
  f.mean = mean;
  f.std = std;
  return f;
}

// One row per family of the Python LibreYOLO 1.6.0 registry with a detection task, read from its
// TorchScript backend (backends/base.py: _preprocess, _parse_outputs, _build_result;
// tests/engine/torchscript/FAMILIES.md and registry_exports.py). The NMS column is the backend's
// class-aware list (base.py:4088) and its NMS-free list (_is_nms_free_family).
constexpr std::array<ExportFamily, kFamilyCount> MakeFamilies() {
  std::array<ExportFamily, kFamilyCount> t{};
  size_t i = 0;
  ExportFamily f = Family("yolo9", "LibreYOLO9", R::kLetterboxCv, false, true, O::kDenseXyxy,
                          N::kClassAware);
  f.rectangular = true;
  t[i++] = f;
  f.name = "yolo9_p2";  // the backend's fallback branch: _parse_yolo9, NMS over all boxes
  f.prefix = "LibreYOLO9P2";
  f.nms = N::kAgnostic;
  t[i++] = f;
  f.name = "yolo9_e2e";  // NMS-free: the top max_det anchors, then the top-k pairs
  f.prefix = "LibreYOLO9E2E";
  f.output = O::kDenseTopK;
  f.nms = N::kNone;
  t[i++] = f;
  t[i++] = Family("yolox", "LibreYOLOX", R::kLetterboxPil, true, false, O::kYoloxCxcywh,
                  N::kClassAware);
  t[i++] = Family("yolo7", "LibreYOLO7", R::kLetterboxPil, false, true, O::kDenseXyxy,
                  N::kAgnostic);
  for (auto [name, prefix] : {std::pair<absl::string_view, absl::string_view>{"yolo2", "LibreYOLO2"},
                              {"yolo3", "LibreYOLO3"},
                              {"yolo4", "LibreYOLO4"}}) {
    f = Family(name, prefix, R::kLetterboxPil, false, true, O::kDenseXyxy, N::kAgnostic);
    f.pad = {128, 128, 128};  // models/darknet/preprocess.py _PAD_VALUE
    t[i++] = f;
  }
  for (auto [name, prefix] : {std::pair<absl::string_view, absl::string_view>{"dfine", "LibreDFINE"},
                              {"deim", "LibreDEIM"},
                              {"rtdetrv4", "LibreRTDETRv4"}}) {
    t[i++] = Family(name, prefix, R::kStretchPil, false, true, O::kDetr, N::kNone);
  }
  f = Norm(Family("deimv2", "LibreDEIMv2", R::kStretchPil, false, true, O::kDetr, N::kNone),
           kImageNetMean, kImageNetStd);
  f.norm_sizes = "s,m,l,x";  // preprocess/deimv2.py DINO_SIZES
  t[i++] = f;
  t[i++] = Norm(Family("tinyformer", "LibreTinyFormer", R::kStretchPil, false, true, O::kDetr,
                       N::kNone),
                kImageNetMean, kImageNetStd);
  t[i++] = Family("rtdetr", "LibreRTDETR", R::kStretchCv, false, true, O::kDetr, N::kNone);
  t[i++] = Family("rtdetrv2", "LibreRTDETRv2", R::kStretchCv, false, true, O::kDetr, N::kNone);
  f = Norm(Family("lwdetr", "LibreLWDETR", R::kStretchPil, false, true, O::kDetr, N::kNone),
           kImageNetMean, kImageNetStd);
  f.small_size_top_k = 100;
  f.coco91_logits = true;
  t[i++] = f;
  f = Norm(Family("detr", "LibreDETR", R::kStretchPil, false, true, O::kDetrSoftmax, N::kNone),
           kImageNetMean, kImageNetStd);
  f.coco91_logits = true;  // 92 softmax columns: 91 COCO ids and "no object"
  t[i++] = f;
  for (auto [name, prefix] : {std::pair<absl::string_view, absl::string_view>{
                                  "deformable_detr", "LibreDeformableDETR"},
                              {"dinodetr", "LibreDINODETR"}}) {
    f = Norm(Family(name, prefix, R::kStretchPil, false, true, O::kDetr, N::kNone), kImageNetMean,
             kImageNetStd);
    f.coco91_logits = true;
    f.max_det_cap = 300;  // _parse_deformable_detr: min(max_det, 300)
    t[i++] = f;
  }
  f = Norm(Family("picodet", "LibrePICODET", R::kStretchCv, false, false, O::kRowsXyxy,
                  N::kClassAware),
           kImageNet255Mean, kImageNet255Std);
  f.candidates = 1000;  // nms_pre, per level (the backend's _parse_picodet)
  f.level_strides = {8, 16, 32, 64};
  f.drop_empty = false;
  t[i++] = f;
  f = Norm(Family("ppyoloe", "LibrePPYOLOE", R::kStretchCv, false, false, O::kBoxesScores,
                  N::kClassAware),
           kImageNet255Mean, kImageNet255Std);
  f.candidates = 1024;  // PPYOLOE_PRE_NMS_TOP_K
  t[i++] = f;
  f = Norm(Family("rtmdet", "LibreRTMDet", R::kLetterboxPil, true, false, O::kRowsXyxy,
                  N::kClassAware),
           kImageNet255MeanBgr, kImageNet255StdBgr);
  f.level_strides = {8, 16, 32, 0};  // nms_pre 30000 per level (the backend's _parse_rtmdet)
  t[i++] = f;
  f = Family("yolonas", "LibreYOLONAS", R::kLetterboxPilCenter, false, true, O::kBoxesScores,
             N::kClassAware);
  f.multi_label = false;  // _parse_yolonas: the best class of each box
  f.candidates = 1000;    // YOLO_NAS_PRE_NMS_TOP_K
  f.fit_cap = 636;        // YOLO_NAS_RESIZE_SIZE
  t[i++] = f;
  f = Norm(Family("efficientdet", "LibreEfficientDet", R::kLetterboxPil, false, false, O::kRows6,
                  N::kClassAware),
           kEffDetMean, kEffDetStd);
  f.pad = {124, 116, 104};  // round(255 * ImageNet mean)
  f.candidates = 0;
  t[i++] = f;
  // CenterNet: B, G, R of the affine canvas, (x / 255 - mean) / std (CENTERNET_MEAN, _STD); its
  // graph returns its top-100 peaks decoded ([B, 100, 6], CenterNetExportWrapper), no NMS
  // (_parse_centernet, postprocess/centernet.py).
  f = Norm(Family("centernet", "LibreCenterNet", R::kAffineCentre, true, true, O::kRows6, N::kNone),
           {0.408f, 0.447f, 0.470f}, {0.289f, 0.274f, 0.278f});
  f.ranked_rows = true;
  f.max_det_cap = 100;      // max_det=min(max_det, 100)
  f.drop_empty = false;     // no area filter: a random net's negative sizes stay, as there
  t[i++] = f;
  // FCOS: ImageNet's normalisation in float before the resize (_preprocess_tensor); rows
  // [xyxy, level id, scores], 1000 candidates per level 0..4, class-aware NMS, max_det at most
  // 100 (_parse_fcos, _build_result).
  f = Norm(Family("fcos", "LibreFCOS", R::kScaleFloat, false, true, O::kRowsLevelXyxy,
                  N::kClassAware),
           kImageNetMean, kImageNetStd);
  f.candidates = 1000;
  f.level_count = 5;
  f.max_det_cap = 100;
  t[i++] = f;
  t[i++] = Norm(Family("ec", "LibreEC", R::kStretchPil, false, true, O::kDetr, N::kNone),
                kImageNetMean, kImageNetStd);  // preprocess/ec.py
  t[i++] = Norm(Family("gtr", "LibreGTR", R::kStretchPil, false, true, O::kDetr, N::kNone),
                kImageNetMean, kImageNetStd);  // tinyformer's preprocessing, _parse_dfine
  // Families the Python tool (1.6.0) itself does not export to TorchScript: rows, so that the
  // registry test knows them and an export made by another version is named, not misread.
  constexpr std::pair<absl::string_view, absl::string_view> kNotExported[] = {
      {"domedetr", "the Python tool refuses its TorchScript export (its query count is data "
                   "dependent) and its backend has no DOME-DETR decode"},
      {"ssd", "the Python tool blocks its TorchScript export (ONNX only)"},
      {"retinanet", "the Python tool blocks its TorchScript export (ONNX only)"},
      {"faster_rcnn", "the Python tool blocks its TorchScript export (ONNX only)"},
      {"mask_rcnn", "the Python tool blocks its TorchScript export (ONNX only)"},
      {"yolo1", "the Python tool's own TorchScript export of it fails (1.6.0: a shape error in "
                "its head at 320 and at 448)"},
  };
  for (auto [name, why] : kNotExported) {
    f = Family(name, "", R::kStretchCv, false, true, O::kDenseXyxy, N::kNone);
    f.unsupported = why;
    t[i++] = f;
  }
  return t;
}
constexpr std::array<ExportFamily, kFamilyCount> kFamilies = MakeFamilies();
static_assert(kFamilies.back().name == "yolo1", "every row of MakeFamilies is filled");

absl::Status Bad(absl::string_view what, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(what, ": ", why));
}

std::string StringOr(const rapidjson::Value& doc, const char* key, std::string fallback) {
  auto it = doc.FindMember(key);
  if (it == doc.MemberEnd() || !it->value.IsString()) return fallback;
  return std::string(it->value.GetString(), it->value.GetStringLength());
}

// An integer field: absent -> `fallback`; present but not a whole number in [lo, hi] -> error.
absl::StatusOr<int64_t> IntOr(const rapidjson::Value& doc, const char* key, int64_t fallback,
                              int64_t lo, int64_t hi, absl::string_view what) {
  auto it = doc.FindMember(key);
  if (it == doc.MemberEnd() || it->value.IsNull()) return fallback;
  if (!it->value.IsNumber()) return Bad(what, absl::StrCat("'", key, "' is not a number"));
  const double v = it->value.GetDouble();
  if (!std::isfinite(v) || v != std::floor(v) || v < static_cast<double>(lo) ||
      v > static_cast<double>(hi)) {
    return Bad(what, absl::StrCat("'", key, "' must be a whole number in ", lo, "..", hi));
  }
  return static_cast<int64_t>(v);
}

}  // namespace

const ExportFamily* FindExportFamily(absl::string_view model_family) {
  for (const ExportFamily& f : kFamilies) {
    if (f.name == model_family) return &f;
  }
  return nullptr;
}

const ExportFamily& UnknownExportFamily() {
  static constexpr ExportFamily kUnknown = [] {
    ExportFamily f = Family("", "", R::kStretchCv, false, true, O::kDenseXyxy, N::kNone);
    f.rectangular = true;
    f.unsupported = "the engine has no row for this family";
    return f;
  }();
  return kUnknown;
}

std::vector<std::string> ExportFamilyTable() {
  std::vector<std::string> names;
  for (const ExportFamily& f : kFamilies) names.emplace_back(f.name);
  return names;
}

const std::vector<int64_t>& Coco91CategoryIds() {
  static const std::vector<int64_t> ids = {
      1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 13, 14, 15, 16, 17, 18, 19, 20, 21,
      22, 23, 24, 25, 27, 28, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44,
      46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65,
      67, 70, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 84, 85, 86, 87, 88, 89, 90};
  return ids;
}

std::string ExportMetadata::Label() const {
  if (family == nullptr) return "export";
  if (family->prefix.empty()) return absl::StrCat(family_name, size.empty() ? "" : "-", size);
  return absl::StrCat(family->prefix, size);
}

absl::StatusOr<ExportMetadata> ParseExportMetadata(absl::string_view json, absl::string_view what) {
  const rapidjson::Document doc = JsonOrNull(std::string_view(json.data(), json.size()));
  if (!doc.IsObject()) {
    return Bad(what, "its libreyolo_metadata.json is not a JSON object; re-export the model with "
                     "`libreyolo export --format torchscript`");
  }
  ExportMetadata m;
  const std::string family = StringOr(doc, "model_family", "");
  if (family.empty()) {
    return Bad(what, "its metadata names no model_family; re-export the model with "
                     "`libreyolo export --format torchscript`");
  }
  // A family without a row still loads: its forward runs and can be profiled, and its outputs
  // are refused by TorchScriptModel::Postprocess with their shapes.
  m.family_name = family;
  m.family = FindExportFamily(family);
  if (m.family == nullptr) m.family = &UnknownExportFamily();
  m.size = StringOr(doc, "model_size", StringOr(doc, "size", ""));
  m.task = StringOr(doc, "task", "detect");
  // Other tasks (classification, semantic segmentation, depth, ...): task_family.h.
  ASSIGN_OR_RETURN(TaskSettings task, ParseTaskSettings(json, family, m.task, what));
  m.task_settings = std::move(task);
  if (m.task != "detect" && m.task_settings.input == TaskInputKind::kDetection &&
      !m.family->unsupported.empty()) {
    return Bad(what, absl::StrCat("a ", family, " '", m.task, "' export: its preprocessing is its ",
                                  "detection family's, which the engine does not run (",
                                  m.family->unsupported, ")"));
  }
  // The backend's classification transform is square (_get_eval_transform); a dense task's
  // canvas may not be.
  const bool own_input = m.task_settings.input != TaskInputKind::kDetection;
  m.precision = StringOr(doc, "precision", "fp32");
  m.letterbox_pad = StringOr(doc, "letterbox_pad", "topleft");
  if (m.letterbox_pad != "topleft" && m.letterbox_pad != "center") {
    return Bad(what, "'letterbox_pad' must be \"topleft\" or \"center\"");
  }
  m.libreyolo_version = StringOr(doc, "libreyolo_version", "");
  // The backend's rule (backends/base.py:223): imgsz_h and imgsz_w together, else imgsz, else 640.
  const bool has_h = doc.HasMember("imgsz_h"), has_w = doc.HasMember("imgsz_w");
  if (has_h != has_w) return Bad(what, "its metadata has one of imgsz_h / imgsz_w without the other");
  ASSIGN_OR_RETURN(int64_t square, IntOr(doc, "imgsz", 640, 32, 4096, what));
  ASSIGN_OR_RETURN(int64_t h, IntOr(doc, "imgsz_h", square, 32, 4096, what));
  ASSIGN_OR_RETURN(int64_t w, IntOr(doc, "imgsz_w", square, 32, 4096, what));
  m.height = h;
  m.width = w;
  if (m.height != m.width &&
      (own_input ? m.task_settings.task == ExportTask::kClassify : !m.family->rectangular)) {
    return Bad(what, absl::StrCat("a ", family, " export is square; its metadata says ", m.width,
                                  "x", m.height));
  }
  ASSIGN_OR_RETURN(int64_t nc, IntOr(doc, "nb_classes", 80, 1, 100000, what));
  if (!doc.HasMember("nb_classes")) {
    ASSIGN_OR_RETURN(nc, IntOr(doc, "nc", 80, 1, 100000, what));
  }
  m.num_classes = nc;
  if (auto it = doc.FindMember("names"); it != doc.MemberEnd() && it->value.IsObject()) {
    m.class_names.assign(static_cast<size_t>(m.num_classes), "");
    for (auto n = it->value.MemberBegin(); n != it->value.MemberEnd(); ++n) {
      const std::string key(n->name.GetString(), n->name.GetStringLength());
      int64_t index = -1;
      try {
        size_t used = 0;
        index = std::stoll(key, &used);
        if (used != key.size()) index = -1;
      } catch (const std::exception&) {
        index = -1;
      }
      if (index < 0 || index >= m.num_classes || !n->value.IsString()) {
        return Bad(what, absl::StrCat("'names' has an entry '", Excerpt(key, 32),
                                      "' that is not a class index 0..", m.num_classes - 1));
      }
      m.class_names[static_cast<size_t>(index)] = n->value.GetString();
    }
  }
  return m;
}

}  // namespace libreyolo::engine
