#include "server/engine/data/labels.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/io/file_reader.h"
#include "common/status/status_macros.h"

namespace libreyolo::engine {
namespace {

constexpr const char* kFieldNames[] = {"class", "cx", "cy", "w", "h"};

float Clip01(double v) { return static_cast<float>(std::clamp(v, 0.0, 1.0)); }

absl::Status LineError(const std::string& path, int line, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(
      path, ":", line, ": ", what,
      "; each line must be 'class cx cy w h' (class an integer id, the rest normalised to "
      "[0, 1]); fix or delete the line"));
}

absl::StatusOr<LabelBox> ParseLine(const std::vector<absl::string_view>& fields,
                                   const std::string& path, int line, int num_classes) {
  const size_t n = fields.size();
  // 5 fields is a box; an odd count of at least 7 is a polygon of >= 3 points.
  if (n != 5 && (n < 7 || n % 2 == 0)) {
    return LineError(path, line, absl::StrCat("expected 5 fields, found ", n));
  }
  std::vector<double> values(n);
  for (size_t i = 0; i < n; ++i) {
    if (!absl::SimpleAtod(fields[i], &values[i]) || !std::isfinite(values[i])) {
      const std::string name = n == 5 ? kFieldNames[i] : absl::StrCat("field ", i + 1);
      return LineError(path, line, absl::StrCat(name, " '", fields[i], "' is not a finite number"));
    }
  }
  const double cls = values[0];
  if (cls != std::floor(cls) || cls < 0 || cls >= num_classes) {
    return LineError(path, line,
                     absl::StrCat("class '", fields[0], "' is not an integer in [0, ", num_classes,
                                  ") (the dataset has ", num_classes, " classes)"));
  }
  for (size_t i = 1; i < n; ++i) {
    if (values[i] < -kLabelCoordTolerance || values[i] > 1 + kLabelCoordTolerance) {
      const std::string name = n == 5 ? kFieldNames[i] : absl::StrCat("field ", i + 1);
      return LineError(path, line,
                       absl::StrCat(name, " ", fields[i],
                                    " is outside [0, 1] (coordinates must be "
                                    "normalised by the image size)"));
    }
  }
  LabelBox box;
  box.cls = static_cast<int>(cls);
  if (n == 5) {
    box.cx = Clip01(values[1]);
    box.cy = Clip01(values[2]);
    box.w = Clip01(values[3]);
    box.h = Clip01(values[4]);
    return box;
  }
  double x_min = 1, x_max = 0, y_min = 1, y_max = 0;
  for (size_t i = 1; i + 1 < n; i += 2) {
    x_min = std::min(x_min, values[i]);
    x_max = std::max(x_max, values[i]);
    y_min = std::min(y_min, values[i + 1]);
    y_max = std::max(y_max, values[i + 1]);
  }
  x_min = std::clamp(x_min, 0.0, 1.0);
  x_max = std::clamp(x_max, 0.0, 1.0);
  y_min = std::clamp(y_min, 0.0, 1.0);
  y_max = std::clamp(y_max, 0.0, 1.0);
  box.cx = static_cast<float>((x_min + x_max) / 2);
  box.cy = static_cast<float>((y_min + y_max) / 2);
  box.w = static_cast<float>(x_max - x_min);
  box.h = static_cast<float>(y_max - y_min);
  return box;
}

}  // namespace

absl::StatusOr<std::vector<LabelBox>> ParseLabelText(std::string_view text, const std::string& path,
                                                     int num_classes) {
  std::vector<LabelBox> boxes;
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(absl::string_view(text.data(), text.size()), '\n')) {
    ++line_no;
    const std::vector<absl::string_view> fields =
        absl::StrSplit(line, absl::ByAnyChar(" \t\r\v\f"), absl::SkipEmpty());
    if (fields.empty()) continue;
    ASSIGN_OR_RETURN(LabelBox box, ParseLine(fields, path, line_no, num_classes));
    boxes.push_back(box);
  }
  return boxes;
}

absl::StatusOr<std::vector<LabelBox>> ReadLabelFile(const std::string& path, int num_classes) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::vector<LabelBox>{};
  if (const std::optional<std::string> kind = NonRegularFileKind(path)) {
    return absl::InvalidArgumentError(
        absl::StrCat("label file '", path, "' is ", *kind, ", not a text file of boxes"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat("label file '", path, "' exists but cannot be read; check permissions"));
  }
  std::ostringstream text;
  text << in.rdbuf();
  return ParseLabelText(text.str(), path, num_classes);
}

}  // namespace libreyolo::engine
