// profile_summary.json: the file the Python LibreYOLO writes beside each profile.json (its
// `libreyolo/profiling/inference.py` `_build` for `profile infer`, `libreyolo/training/profiler.py`
// `_build_summary` for `profile run`), and that its trace analyser reads back (`analyze_trace`
// takes the step time, dataload stall, phase composition and verdict from a sibling
// profile_summary.json). Ours is made from our profile.json, so every number in it is that
// file's (docs/cli.md, "profile_summary.json"):
//
// - infer: `meta` (our `config`), `real {step_ms, img_per_s, dataload_ms, dataload_frac}`,
//   `latency` (our `latency` without the raw samples), `stages_ms`, `bound`, `bound_why`, and
//   `analysis {peak_vram_mb}` where the profile has a peak (a GPU job).
// - run: `meta`, `window {warmup, real_steps, synced_steps}` (our phases are timed over the same
//   profiled steps, so synced_steps = real_steps), `real {step_ms, dataload_ms, compute_ms =
//   max(step_ms - dataload_ms, 0), img_per_s, dataload_frac}`, `composition_ms` (each phase's
//   wall_ms_per_step but dataload's, as the Python tool's profile.json phase rows hold its
//   composition), `composition_total_ms` (their sum), `bound`, `bound_why`, `trace`, and
//   `analysis` (the GPU figures, null on a CPU job, `window_real_steps`, `top_kernels`,
//   `categories`, `peak_vram_mb`).
#ifndef LIBREYOLO_CLIENT_COMMANDS_PROFILE_SUMMARY_FILE_H_
#define LIBREYOLO_CLIENT_COMMANDS_PROFILE_SUMMARY_FILE_H_

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace libreyolo::cli {

inline constexpr char kProfileSummaryFileName[] = "profile_summary.json";

// The profile_summary.json document (indented as the Python tool's) for a profile.json's text.
// INVALID_ARGUMENT when the text is not a profile object.
absl::StatusOr<std::string> ProfileSummaryJson(std::string_view profile_json);

// Writes profile_summary.json beside `profile_path` (atomically); returns its path.
absl::StatusOr<std::string> WriteProfileSummaryBeside(const std::string& profile_path);

}  // namespace libreyolo::cli

#endif  // LIBREYOLO_CLIENT_COMMANDS_PROFILE_SUMMARY_FILE_H_
