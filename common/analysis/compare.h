// `compare`: deltas between two profiles, with the significance rule of docs/metrics.md.
#ifndef LIBREYOLO_COMMON_ANALYSIS_COMPARE_H_
#define LIBREYOLO_COMMON_ANALYSIS_COMPARE_H_

#include <optional>
#include <string>
#include <vector>

#include "common/analysis/compare_gate.h"
#include "common/profile/profile.h"

namespace libreyolo {

struct CompareDelta {
  std::string metric;
  std::string unit;
  bool higher_is_better = false;
  OptDouble before, after;
  // false: a change is neither better nor worse (a folder comparison's all-reduce bytes: the
  // model's gradients); the views then name no direction (JSON higher_is_better null).
  bool directional = true;
  OptDouble delta() const;
  OptDouble pct() const;  // relative change in percent
};

struct Significance {
  bool available = false;  // n >= 2 on both sides
  bool significant = false;
  double abs_diff = 0, two_se = 0;
  int64_t n_before = 0, n_after = 0;
  std::string text;  // which numbers were compared, or why no call can be made
};

// The Python LibreYOLO's `compare --json` blocks, with its values: img_per_s with its
// significance call (|d| > 2*SE from the standard deviations as the files store them, its rule),
// ms_per_image (step_ms / config batch, rounded to 3 places), gpu_util, host overhead, launches.
struct PythonCompareBlocks {
  OptDouble img_per_s[2], img_per_s_std[2];
  int64_t img_per_s_n[2] = {1, 1};
  std::optional<bool> significant;  // null: no call (a single run, or no img/s)
  std::string significance;
  OptDouble ms_per_image[2], gpu_util[2], host_overhead_ms_per_step[2], launches_per_step[2];
};
PythonCompareBlocks PythonCompareOf(const Profile& before, const Profile& after);

struct CompareResult {
  std::string before_label, after_label;
  std::vector<CompareDelta> deltas;  // img_per_s, ms_per_image, step_ms, gpu_util, ...
  std::string bound_before, bound_after;
  // Each side's trust (trust.h TrustSummary; "" when the profile carries no checks), and
  // whether either side's confidence is reduced or none (then `compare` prints them).
  std::string trust_before, trust_after;
  bool trust_doubt = false;
  Significance significance;
  // One line per setting the two profiles do not share (mode, model, imgsz, batch, device,
  // precision): their numbers are not like for like.
  std::vector<std::string> warnings;
  // `compare --fail-if-slower PCT` only: the CI gate's verdict (compare_gate.h).
  std::optional<CompareGate> gate;
  // Two profiles (not two folders): the Python tool's blocks, for compare --json.
  std::optional<PythonCompareBlocks> python;
};

// A setting the two profiles do not share (both record it, with different values).
struct SettingMismatch {
  std::string name;  // mode, model, size, imgsz, batch, device, precision
  std::string before, after;
};

// The settings of the two profiles that differ, in that order, from each profile's mode, model
// and config; a setting one side does not record (a raw trace, the Python tool's config has no
// size) is not compared. A model is its weights' file name without the directory and extension
// (the same checkpoint in two CI worktrees is one model).
std::vector<SettingMismatch> SettingMismatches(const Profile& before, const Profile& after);

// True for the settings a comparison may change on purpose and read per image (batch: the
// seed's own example of a lever; precision): the other mismatches are not like for like.
bool IsPerImageLever(const std::string& setting);

// The mismatch warnings of Compare, one line each: a lever says to read the per-image figures,
// any other mismatch that the numbers are not like for like.
std::vector<std::string> CompareMismatches(const Profile& before, const Profile& after);

CompareResult Compare(const Profile& before, const Profile& after, const std::string& before_label,
                      const std::string& after_label);

// The significance rule with each side's sample standard deviation (ImgPerSSampleSd).
Significance SignificanceOf(double mean_a, double sd_a, int64_t n_a, double mean_b, double sd_b,
                            int64_t n_b);

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_ANALYSIS_COMPARE_H_
