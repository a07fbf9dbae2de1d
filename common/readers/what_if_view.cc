#include "common/readers/what_if_view.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/json/json_writer.h"
#include "common/render/text_table.h"

namespace libreyolo {

std::string RenderWhatIfText(const WhatIfResult& r) {
  std::string out;
  if (!r.applicable) {
    absl::StrAppendFormat(&out, "step: %.3f ms now; projected n/a\n", r.step_now_ms);
    absl::StrAppend(&out, "caveat: ", r.caveat, "\n");
    return out;
  }
  if (!r.removed_category.empty()) {
    absl::StrAppendFormat(&out,
                          "remove category %s: %.3f ms of GPU time and %.1f launches per step "
                          "(%s)\n",
                          r.removed_category, r.removed_gpu_ms, r.removed_launches,
                          r.removed_launches_source == "counted" ? "its kernels, counted"
                                                                 : r.removed_launches_source);
  } else {
    absl::StrAppendFormat(&out, "remove %.1f launches per step (%.4f ms host cost each, %s)\n",
                          r.removed_launches, r.per_launch_ms, r.per_launch_source);
  }
  absl::StrAppendFormat(&out, "mechanism: %s (bound now: %s)\n", r.mechanism,
                        r.bound.empty() ? "n/a" : r.bound);
  absl::StrAppendFormat(&out, "step: %.3f ms -> %.3f ms (x%.3f)\n", r.step_now_ms,
                        r.step_projected_ms, r.speedup);
  if (r.img_per_s_now) {
    absl::StrAppend(&out, "throughput: ", Fmt(r.img_per_s_now, 2), " -> ",
                    Fmt(r.img_per_s_projected, 2), " img/s\n");
  }
  absl::StrAppend(&out, "caveat: ", r.caveat, "\n");
  return out;
}

std::string RenderWhatIfJson(const WhatIfResult& r) {
  JsonWriter w;
  if (!r.applicable) {
    // The same keys, n/a (null) where nothing was projected.
    const std::optional<double> na;
    w.BeginObject().Field("trace", r.trace).Field("bound", r.bound).Key("mechanism").Null();
    w.Key("removed").Null().Field("per_launch_ms", na).Key("per_launch_source").Null();
    w.Key("step_ms").BeginObject().Field("now", r.step_now_ms).Field("projected", na).EndObject();
    w.Key("img_per_s").BeginObject().Field("now", r.img_per_s_now).Field("projected", na)
        .EndObject();
    w.Field("speedup", na).Field("caveat", r.caveat).Field("applicable", false).EndObject();
    return w.Take();
  }
  w.BeginObject().Field("trace", r.trace).Field("bound", r.bound).Field("mechanism", r.mechanism);
  w.Key("removed").BeginObject().Field("category", r.removed_category)
      .Field("gpu_ms", r.removed_gpu_ms).Field("launches", r.removed_launches)
      .Field("launches_source", r.removed_launches_source).EndObject();
  w.Field("per_launch_ms", r.per_launch_ms).Field("per_launch_source", r.per_launch_source);
  w.Key("step_ms").BeginObject().Field("now", r.step_now_ms)
      .Field("projected", r.step_projected_ms).EndObject();
  w.Key("img_per_s").BeginObject().Field("now", r.img_per_s_now)
      .Field("projected", r.img_per_s_projected).EndObject();
  w.Field("speedup", r.speedup).Field("caveat", r.caveat).EndObject();
  return w.Take();
}

}  // namespace libreyolo
