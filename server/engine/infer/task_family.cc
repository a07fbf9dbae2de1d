#include "server/engine/infer/task_family.h"

#include <rapidjson/document.h>

#include <cctype>
#include <cmath>
#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "common/json/json_read.h"
#include "common/status/status_macros.h"

namespace libreyolo::engine {
namespace {

constexpr std::array<float, 3> kImageNetMean = {0.485f, 0.456f, 0.406f};
constexpr std::array<float, 3> kImageNetStd = {0.229f, 0.224f, 0.225f};

absl::Status Bad(absl::string_view what, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(what, ": ", why));
}

const rapidjson::Value* Member(const rapidjson::Value& doc, const char* key) {
  auto it = doc.FindMember(key);
  if (it == doc.MemberEnd() || it->value.IsNull()) return nullptr;
  if (it->value.IsString() && it->value.GetStringLength() == 0) return nullptr;
  return &it->value;
}

// A number, or a string holding one (exports of other formats store them as strings; the
// backend's float()).
absl::StatusOr<double> NumberField(const rapidjson::Value& v, const char* key,
                                   absl::string_view what) {
  if (v.IsNumber()) return v.GetDouble();
  if (v.IsString()) {
    try {
      size_t used = 0;
      const std::string s(v.GetString(), v.GetStringLength());
      const double d = std::stod(s, &used);
      if (used == s.size()) return d;
    } catch (const std::exception&) {
    }
  }
  return Bad(what, absl::StrCat("its metadata's '", key, "' is not a number"));
}

// norm_mean / norm_std: three numbers, as a JSON array or a string holding one (the backend's
// classify_eval_kwargs json.loads a string).
absl::StatusOr<std::array<float, 3>> Vector3(const rapidjson::Value& v, const char* key,
                                             absl::string_view what) {
  rapidjson::Document parsed;
  const rapidjson::Value* arr = &v;
  if (v.IsString()) {
    parsed = JsonOrNull(std::string_view(v.GetString(), v.GetStringLength()));
    arr = &parsed;
  }
  if (!arr->IsArray() || arr->Size() != 3) {
    return Bad(what, absl::StrCat("its metadata's '", key, "' is not a list of three numbers"));
  }
  std::array<float, 3> out{};
  for (rapidjson::SizeType i = 0; i < 3; ++i) {
    if (!(*arr)[i].IsNumber()) {
      return Bad(what, absl::StrCat("its metadata's '", key, "' is not a list of three numbers"));
    }
    out[i] = static_cast<float>((*arr)[i].GetDouble());
  }
  return out;
}

struct LegacyClassify {
  absl::string_view family;
  double crop_pct;
  absl::string_view interpolation;
  std::array<float, 3> mean, std;
  bool stretch;
};
// The backend's _LEGACY_CLASSIFY_EVAL: exports written before the keys were recorded.
constexpr LegacyClassify kLegacy[] = {
    {"clip", 1.0, "bicubic", {0.48145466f, 0.4578275f, 0.40821073f},
     {0.26862954f, 0.26130258f, 0.27577711f}, false},
    {"siglip2", 1.0, "bilinear", {0.5f, 0.5f, 0.5f}, {0.5f, 0.5f, 0.5f}, true},
    {"pe", 1.0, "bilinear", {0.5f, 0.5f, 0.5f}, {0.5f, 0.5f, 0.5f}, true},
    {"vit", 0.9, "bicubic", {0.5f, 0.5f, 0.5f}, {0.5f, 0.5f, 0.5f}, false},
};

// The classification eval transform (backends/base.py BaseBackend.__init__ and
// _get_eval_transform; data/augment/classify.py build_classify_transforms).
absl::Status ClassifySettings(const rapidjson::Value& doc, absl::string_view family,
                              absl::string_view what, TaskSettings& t) {
  t.input = TaskInputKind::kClassifyEval;
  t.mean = kImageNetMean;
  t.std = kImageNetStd;
  for (const LegacyClassify& l : kLegacy) {
    if (l.family != family) continue;
    t.crop_pct = l.crop_pct;
    t.interpolation = std::string(l.interpolation);
    t.mean = l.mean;
    t.std = l.std;
    t.stretch = l.stretch;
  }
  if (const rapidjson::Value* v = Member(doc, "crop_pct")) {
    ASSIGN_OR_RETURN(t.crop_pct, NumberField(*v, "crop_pct", what));
  }
  if (!(t.crop_pct > 0.0 && t.crop_pct <= 1.0)) {
    return Bad(what, absl::StrCat("its metadata's crop_pct ", t.crop_pct, " is not in (0, 1]"));
  }
  if (const rapidjson::Value* v = Member(doc, "interpolation"); v != nullptr && v->IsString()) {
    t.interpolation = v->GetString();
  }
  // The backend's _interp_mode: its name in any case; anything else is bilinear.
  for (char& c : t.interpolation) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (t.interpolation == "nearest") {
    return Bad(what, "its classification transform resizes with PIL's NEAREST filter, which the "
                     "engine does not reproduce (it does bilinear and bicubic): re-export with "
                     "--interpolation bilinear, or profile the native checkpoint");
  }
  if (t.interpolation != "bicubic") t.interpolation = "bilinear";
  if (const rapidjson::Value* v = Member(doc, "norm_mean")) {
    ASSIGN_OR_RETURN(t.mean, Vector3(*v, "norm_mean", what));
  }
  if (const rapidjson::Value* v = Member(doc, "norm_std")) {
    ASSIGN_OR_RETURN(t.std, Vector3(*v, "norm_std", what));
  }
  for (float s : t.std) {
    if (!(s > 0.0f)) return Bad(what, "its metadata's norm_std has a value that is not > 0");
  }
  if (const rapidjson::Value* v = Member(doc, "resize_mode"); v != nullptr && v->IsString()) {
    t.stretch = absl::string_view(v->GetString()) == "stretch";
  }
  return absl::OkStatus();
}

}  // namespace

std::string TaskNames() { return "detect, classify, semantic, depth, segment, pose"; }

absl::StatusOr<TaskSettings> ParseTaskSettings(absl::string_view json, absl::string_view family,
                                               absl::string_view task, absl::string_view what) {
  const rapidjson::Document doc = JsonOrNull(std::string_view(json.data(), json.size()));
  TaskSettings t;
  t.task_name = std::string(task);
  if (!doc.IsObject()) return Bad(what, "its libreyolo_metadata.json is not a JSON object");
  if (task == "detect") return t;
  if (task == "classify") {
    t.task = ExportTask::kClassify;
    RETURN_IF_ERROR(ClassifySettings(doc, family, what, t));
    return t;
  }
  if (task == "semantic") {
    // _preprocess_semantic: PIDNet, SegFormer and GTR letterbox the image with their own
    // geometry and _parse_semantic_output crops the logits back to it; every other family is a
    // cv2 stretch.
    if (family == "pidnet" || family == "segformer" || family == "gtr") {
      t.task = ExportTask::kSemantic;
      t.input = TaskInputKind::kSemanticLetterbox;
      t.align_corners = family == "pidnet";
      return t;
    }
    t.task = ExportTask::kSemantic;
    t.input = TaskInputKind::kStretchCv;
    if (family == "deeplabv3") {  // models/deeplabv3/utils.py: ImageNet after / 255
      t.mean = kImageNetMean;
      t.std = kImageNetStd;
    }
    return t;
  }
  if (task == "depth") {
    t.task = ExportTask::kDepth;
    // _DEPTH_CUBIC_RESIZE_FAMILIES: the [0, 1] float image resized bicubically.
    t.input = family == "midas" || family == "depth_anything" ? TaskInputKind::kStretchCubic
                                                                : TaskInputKind::kStretchCv;
    if (family == "depth_anything3") {
      t.no_postprocess =
          "Depth Anything 3's decode (sky-masked far-depth fill from a 0.99 quantile of a random "
          "sample, then inverse depth) is not reproduced";
    }
    return t;
  }
  if (task == "segment") {
    if (family == "yolo9") {  // BaseBackend.__init__ refuses it too
      return Bad(what, "a yolo9 'segment' export: YOLO9 segmentation was removed from the Python "
                       "LibreYOLO and its backend refuses such exports; export yolo9 for detection "
                       "('detect') or use a segmentation family (rtmdet, dfine, ec)");
    }
    // The detection family's own preprocessing (_preprocess has no segment branch for them).
    t.task = ExportTask::kSegment;
    t.input = TaskInputKind::kDetection;
    t.no_postprocess = absl::StrCat(
        "a ", family, " instance-segmentation export's decode (boxes with mask coefficients or "
        "mask logits, each mask cropped and resized to the image) is not reproduced; its "
        "preprocessing and forward are measured");
    return t;
  }
  if (task == "pose") {
    t.task = ExportTask::kPose;
    if (family == "yolonas") {  // preprocess/yolonas.py preprocess_pose_image, _parse_yolonas_pose
      t.input = TaskInputKind::kPoseLetterbox;
      return t;
    }
    if (family == "ec" || family == "gtr") {  // the detection family's preprocessing
      t.no_postprocess = absl::StrCat(
          "a ", family, " pose export's decode (DETR-style queries with keypoint regressions, "
          "the backend's _parse_", family, "_pose) is not reproduced; its preprocessing and "
          "forward are measured");
      return t;
    }
    if (family == "dekr") {  // _preprocess's dekr branch (bottom-up: the whole frame)
      t.input = TaskInputKind::kDekrLetterbox;
      t.mean = kImageNetMean;
      t.std = kImageNetStd;
      t.no_postprocess =
          "a dekr pose export's decode (heatmap peaks, per-pixel keypoint offsets, the backend's "
          "grouping and rescoring) is not reproduced; its preprocessing and forward are measured";
      return t;
    }
    if (family == "hrnet") {  // _preprocess's hrnet branch: a person-crop head, no detector
      t.input = TaskInputKind::kHrnetCrop;
      t.mean = kImageNetMean;
      t.std = kImageNetStd;
      return t;
    }
    return Bad(what, absl::StrCat("a ", family, " pose export: the engine runs YOLO-NAS, HRNet, "
                                  "DEKR, EC and GTR pose exports; ", family, "'s preprocessing "
                                  "(its own) is not reproduced: profile the native checkpoint (the "
                                  "daemon runs the Python LibreYOLO for it)"));
  }
  return Bad(what, absl::StrCat("a ", family, " '", task, "' export; the engine profiles ",
                                TaskNames(), " exports: profile the native checkpoint (the daemon "
                                "runs the Python LibreYOLO for it)"));
}

}  // namespace libreyolo::engine
