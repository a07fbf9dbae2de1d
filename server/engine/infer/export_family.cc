#include "server/engine/infer/export_family.h"

#include <rapidjson/document.h>

#include <array>
#include <cmath>
#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/json/json_read.h"
#include "common/render/terminal_text.h"

namespace libreyolo::engine {
namespace {

using R = ExportResize;
using O = ExportOutput;
using N = ExportNms;

// FAMILIES.md sections 1-6 (the Python backend's _preprocess / _parse_outputs / _build_result).
// YOLO7 is class-agnostic: the backend's class-aware list (base.py:4088) does not name it.
constexpr std::array<ExportFamily, 7> kFamilies = {{
    {"yolo9", "LibreYOLO9", R::kLetterboxCv, false, true, false, O::kDenseXyxy, N::kClassAware,
     true, 0, false},
    {"yolox", "LibreYOLOX", R::kLetterboxPil, true, false, false, O::kYoloxCxcywh,
     N::kClassAware, false, 0, false},
    {"yolo7", "LibreYOLO7", R::kLetterboxPil, false, true, false, O::kDenseXyxy, N::kAgnostic,
     false, 0, false},
    {"dfine", "LibreDFINE", R::kStretchPil, false, true, false, O::kDetr, N::kNone, false, 0,
     false},
    {"deim", "LibreDEIM", R::kStretchPil, false, true, false, O::kDetr, N::kNone, false, 0, false},
    {"rtdetr", "LibreRTDETR", R::kStretchCv, false, true, false, O::kDetr, N::kNone, false, 0,
     false},
    {"lwdetr", "LibreLWDETR", R::kStretchPil, false, true, true, O::kDetr, N::kNone, false, 100,
     true},
}};

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

std::string ExportFamilyNames() {
  std::vector<absl::string_view> names;
  for (const ExportFamily& f : kFamilies) names.push_back(f.name);
  return absl::StrJoin(names, ", ");
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
  return family == nullptr ? std::string("export") : absl::StrCat(family->prefix, size);
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
  m.family = FindExportFamily(family);
  if (m.family == nullptr) {
    return Bad(what, absl::StrCat("a ", family, " export; the engine runs the detection families ",
                                  ExportFamilyNames()));
  }
  m.size = StringOr(doc, "model_size", StringOr(doc, "size", ""));
  m.task = StringOr(doc, "task", "detect");
  if (m.task != "detect") {
    return Bad(what, absl::StrCat("a ", family, " '", m.task,
                                  "' export; the engine profiles detection ('detect') exports"));
  }
  m.precision = StringOr(doc, "precision", "fp32");
  m.letterbox_pad = StringOr(doc, "letterbox_pad", "topleft");
  if (m.letterbox_pad != "topleft" && m.letterbox_pad != "center") {
    return Bad(what, "'letterbox_pad' must be \"topleft\" or \"center\"");
  }
  m.libreyolo_version = StringOr(doc, "libreyolo_version", "");
  // The backend's rule (backends/base.py:223): imgsz_h and imgsz_w together, else imgsz, else 640.
  const bool has_h = doc.HasMember("imgsz_h"), has_w = doc.HasMember("imgsz_w");
  if (has_h != has_w) return Bad(what, "its metadata has one of imgsz_h / imgsz_w without the other");
  absl::StatusOr<int64_t> square = IntOr(doc, "imgsz", 640, 32, 4096, what);
  if (!square.ok()) return square.status();
  absl::StatusOr<int64_t> h = IntOr(doc, "imgsz_h", *square, 32, 4096, what);
  if (!h.ok()) return h.status();
  absl::StatusOr<int64_t> w = IntOr(doc, "imgsz_w", *square, 32, 4096, what);
  if (!w.ok()) return w.status();
  m.height = *h;
  m.width = *w;
  if (m.height != m.width && !m.family->rectangular) {
    return Bad(what, absl::StrCat("a ", family, " export is square; its metadata says ", m.width,
                                  "x", m.height));
  }
  absl::StatusOr<int64_t> nc = IntOr(doc, "nb_classes", 80, 1, 100000, what);
  if (!nc.ok()) return nc.status();
  if (!doc.HasMember("nb_classes")) {
    nc = IntOr(doc, "nc", 80, 1, 100000, what);
    if (!nc.ok()) return nc.status();
  }
  m.num_classes = *nc;
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
