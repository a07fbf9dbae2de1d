// Where a `--repeat N` job's files go, and how they are named among a job's artifacts.
//
// The layout is the Python LibreYOLO's (`libreyolo profile run|infer --repeat N`, N >= 2): trial
// T's files in <project>/<kind>_<T>/ (`infer_0/`, `infer_1/`, ...; `prof_0/`, `prof_1/`, ...),
// and the aggregate (the trials' mean and population sd) at the project root as
// `infer_repeat.json` (infer) or `profile_repeat.json` (run). A single run (N = 1) keeps
// <project>/<kind>/ and no repeat file. docs/profile-json.md, "Repeat trials".
//
// Artifact names are plain file names (no '/'), so the trial goes into the name, as the rank does
// in rank_artifacts.h: the final trial's files (the one whose trace the profiled window wrote,
// the job's profile) keep their own names (profile.json, profile_trace.json, ...); trial T < N-1's
// are "trial<T>.<name>"; the repeat file keeps its name, and is what `job:<id>` reads
// (JobProfileArtifact). The daemon (publishing, reading) and the client (putting each file back
// into its folder) share this one definition.
#ifndef LIBREYOLO_COMMON_IO_TRIAL_ARTIFACTS_H_
#define LIBREYOLO_COMMON_IO_TRIAL_ARTIFACTS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/job/names.h"

namespace libreyolo {

inline constexpr char kInferRepeatFileName[] = "infer_repeat.json";
inline constexpr char kRunRepeatFileName[] = "profile_repeat.json";

// The repeat file of a job whose single-run folder is `kind_folder` (kInferOutputFolder or
// kRunOutputFolder).
inline std::string RepeatFileName(absl::string_view kind_folder) {
  return kind_folder == kInferOutputFolder ? kInferRepeatFileName : kRunRepeatFileName;
}

// Either tool's name for a repeat file (ours before issue 36 wrote profile_repeat.json for infer).
inline bool IsRepeatFileName(absl::string_view name) {
  return name == kInferRepeatFileName || name == kRunRepeatFileName;
}

// What `job:<id>` (no artifact named) reads among a job's artifact `names`: the job's profile,
// which for a --repeat job is its repeat file (the trials' mean and sd; its profile.json is the
// final trial's own), else profile.json.
inline std::string JobProfileArtifact(const std::vector<std::string>& names) {
  for (const std::string& n : names) {
    if (IsRepeatFileName(n)) return n;
  }
  return "profile.json";
}

// Trial `trial`'s folder under the project: "infer_0", "prof_2".
inline std::string TrialFolderName(absl::string_view kind_folder, int64_t trial) {
  return absl::StrCat(kind_folder, "_", trial);
}

// Trial `trial` of `trials`'s `file` among the job's artifacts: the final trial's under its own
// name, an earlier one's as "trial<T>.<file>".
inline std::string TrialArtifactName(int64_t trial, int64_t trials, absl::string_view file) {
  return trial == trials - 1 ? std::string(file) : absl::StrCat("trial", trial, ".", file);
}

struct TrialArtifact {
  int64_t trial = 0;
  std::string file;
};

// The inverse of TrialArtifactName for a job of `trials` trials (>= 2): "trial0.profile.json" ->
// {0, "profile.json"}; a name without the prefix is the final trial's. nullopt for a
// "trial<T>." name whose T is not an earlier trial (0 <= T < trials - 1) in its one spelling, or
// with no file after.
inline std::optional<TrialArtifact> SplitTrialArtifact(absl::string_view name, int64_t trials) {
  if (name.substr(0, 5) == "trial") {
    const size_t dot = name.find('.');
    int64_t trial = -1;
    const absl::string_view digits =
        dot == absl::string_view::npos ? absl::string_view() : name.substr(5, dot - 5);
    if (!digits.empty() && absl::SimpleAtoi(digits, &trial)) {
      // One spelling per trial ("trial0.", never "trial00." or "trial+0."): names stay unique.
      if (absl::StrCat(trial) != digits || trial < 0 || trial >= trials - 1 ||
          dot + 1 >= name.size()) {
        return std::nullopt;
      }
      return TrialArtifact{trial, std::string(name.substr(dot + 1))};
    }
  }
  return TrialArtifact{trials - 1, std::string(name)};
}

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_IO_TRIAL_ARTIFACTS_H_
