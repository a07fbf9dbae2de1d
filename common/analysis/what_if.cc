#include "common/analysis/what_if.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/render/terminal_text.h"
#include "common/status/status_macros.h"

namespace libreyolo {

absl::Status CheckRemoveLaunches(double launches) {
  if (std::isfinite(launches) && launches >= 0 && launches <= kMaxRemoveLaunches) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "remove_launches: ", launches, " is not a number in [0, ", kMaxRemoveLaunches, "]"));
}

namespace {

// WhatIf's stages: the request checked against the profile; the cost of one launch; a CPU
// job's n/a; the removal (a category's kernels and launches, or launches asked for); the
// projected step and the caveat that says how it was projected.

// Exactly one option, a step time to project from, and a category that names one of the
// profile's (exit 2 naming what the profile has; checked before a CPU job's n/a).
absl::Status CheckWhatIfRequest(const Profile& p, const WhatIfRequest& req) {
  if (req.remove_category.has_value() == req.remove_launches.has_value()) {
    return absl::InvalidArgumentError(
        "what-if needs exactly one of --remove-category C or --remove-launches N "
        "(e.g. --remove-category layout, --remove-launches 100)");
  }
  if (!p.step_ms.has_value() || *p.step_ms <= 0) {
    return absl::InvalidArgumentError("what-if: the profile has no step time to project from");
  }
  if (req.remove_category.has_value() &&
      std::none_of(p.categories.begin(), p.categories.end(), [&](const CategoryRow& c) {
        return absl::StrContains(c.name, *req.remove_category);
      })) {
    std::vector<std::string> names;
    for (const CategoryRow& c : p.categories) names.push_back(c.name);
    return absl::InvalidArgumentError(absl::StrCat(
        "--remove-category '", Excerpt(*req.remove_category),
        "' matches no kernel category of this profile; it has: ",
        names.empty() ? std::string("none (no GPU kernels)") : absl::StrJoin(names, ", ")));
  }
  return absl::OkStatus();
}

// What one launch costs: the launch calls' measured time, else the host overhead's share.
void SetPerLaunchCost(const Profile& p, WhatIfResult& r) {
  const double host = p.host_overhead_ms_per_step.value_or(0);
  const double launches = p.launches_per_step.value_or(0);
  if (p.launch_api_ms_per_step.value_or(0) > 0 && launches > 0) {
    r.per_launch_ms = *p.launch_api_ms_per_step / launches;
    r.per_launch_source = "launch_api";
  } else {
    r.per_launch_ms = launches > 0 ? host / launches : 0;
    r.per_launch_source = "host_overhead";
  }
}

// The GPU time and launches of the categories that contain `category`.
void RemoveCategory(const Profile& p, const std::string& category, WhatIfResult& r) {
  const double busy = p.gpu_busy_ms_per_step.value_or(0);
  const double launches = p.launches_per_step.value_or(0);
  std::vector<std::string> matched;
  for (const CategoryRow& c : p.categories) {
    if (absl::StrContains(c.name, category)) {
      matched.push_back(c.name);
      r.removed_gpu_ms += c.ms_per_step;
    }
  }
  r.removed_category = absl::StrJoin(matched, ", ");
  // The launches removed are the category's counted kernels (as `kernels --category` counts
  // them): one launch per kernel. Only a profile without a kernel list falls back to the
  // time-share estimate, and says so.
  double counted = 0;
  bool have_rows = false;
  for (const KernelRow& k : p.kernels) {
    have_rows = true;
    if (std::find(matched.begin(), matched.end(), k.category) != matched.end()) {
      counted += k.count_per_step;
    }
  }
  if (have_rows) {
    r.removed_launches = counted;
    r.removed_launches_source = "counted";
  } else {
    r.removed_launches = busy > 0 ? launches * r.removed_gpu_ms / busy : 0;
    r.removed_launches_source = "estimated from the category's share of GPU time";
  }
}

// The launches asked for, at most the profile's; the note says when they were capped.
absl::StatusOr<std::string> RemoveLaunches(const Profile& p, double requested, WhatIfResult& r) {
  const double launches = p.launches_per_step.value_or(0);
  if (requested < 0) {
    return absl::InvalidArgumentError("--remove-launches must be >= 0");
  }
  std::string clamp_note;
  r.removed_launches = requested;
  r.removed_launches_source = "requested";
  if (r.removed_launches > launches) {
    clamp_note = absl::StrFormat(
        " --remove-launches %.0f exceeds the %.1f launches per step; %.1f were removed.",
        r.removed_launches, launches, launches);
    r.removed_launches = launches;
  }
  return clamp_note;
}

// The projected step (by launches below 80% GPU utilisation, else by GPU work), the speed-up,
// the throughput, and the caveat saying how.
void ProjectStep(const Profile& p, const std::string& clamp_note, WhatIfResult& r) {
  const double step = *p.step_ms;
  const double busy = p.gpu_busy_ms_per_step.value_or(0);
  const double dataload = p.dataload_ms.value_or(0);
  const double host = p.host_overhead_ms_per_step.value_or(0);
  const double util = p.gpu_util.value_or(0);
  r.step_now_ms = step;
  if (util < 0.8) {
    r.mechanism = "launch";
    r.step_projected_ms = std::max(step - r.removed_launches * r.per_launch_ms, busy + dataload);
  } else {
    r.mechanism = "gpu";
    r.step_projected_ms = std::max(step - r.removed_gpu_ms, host);
  }
  r.step_projected_ms = std::min(r.step_projected_ms, step);
  r.speedup = r.step_projected_ms > 0 ? step / r.step_projected_ms : 1;
  if (p.img_per_s.has_value()) {
    r.img_per_s_now = p.img_per_s;
    r.img_per_s_projected = *p.img_per_s * r.speedup;
  }
  r.caveat = absl::StrCat(
      r.mechanism == "launch"
          ? absl::StrFormat("GPU utilisation %.2f < 0.80: the step is bound by the host, so only "
                            "launches removed (x %.4f ms each, from %s) shorten it, and never "
                            "below GPU busy + data loading (%.2f ms).",
                            util, r.per_launch_ms, r.per_launch_source, busy + dataload)
          : absl::StrFormat("GPU utilisation %.2f >= 0.80: the step is bound by GPU work, so "
                            "only GPU time removed shortens it, and never below the host "
                            "overhead (%.2f ms).",
                            util, host),
      " An estimate from one profile: it assumes the rest of the step is unchanged and that the "
      "removed work is not replaced; measure again after the change and use `compare`.",
      clamp_note);
}

}  // namespace

absl::StatusOr<WhatIfResult> WhatIf(const Profile& p, const WhatIfRequest& req) {
  RETURN_IF_ERROR(CheckWhatIfRequest(p, req));
  WhatIfResult r;
  r.trace = p.trace.value_or("");
  r.bound = p.bound;
  SetPerLaunchCost(p, r);
  // Its projections are of GPU kernels and their launches: on a CPU job (no kernels, no CUDA
  // launches) they are n/a, as every GPU metric is there, not a projection of zeros.
  if (IsCpuJob(p)) {
    r.applicable = false;
    r.step_now_ms = *p.step_ms;
    r.img_per_s_now = p.img_per_s;
    r.caveat =
        "n/a: what-if projects removing GPU kernels or their launches, and this is a CPU job "
        "(no kernels, no CUDA launches). Profile on a GPU (--device 0) to use it; on the CPU, "
        "`phases` and `ops` say where the time goes";
    return r;
  }
  std::string clamp_note;
  if (req.remove_category.has_value()) {
    RemoveCategory(p, *req.remove_category, r);
  } else {
    ASSIGN_OR_RETURN(clamp_note, RemoveLaunches(p, *req.remove_launches, r));
  }
  ProjectStep(p, clamp_note, r);
  return r;
}

}  // namespace libreyolo
