#include "common/analysis/compare_gate.h"

#include <cmath>

#include "absl/strings/str_format.h"
#include "common/analysis/compare.h"
#include "common/analysis/repeat_trials.h"
#include "common/status/exit_code.h"

namespace libreyolo {

ThroughputTrials ImgPerSTrials(const Profile& p) {
  ThroughputTrials t;
  t.mean = p.img_per_s;
  t.n = p.repeat.img_per_s_n.value_or(1);
  t.sd = ImgPerSSampleSd(p);  // the file's sd by its definition (population: scaled)
  return t;
}

CompareGate EvaluateGate(const ThroughputTrials& before, const ThroughputTrials& after,
                         double fail_if_slower_pct) {
  CompareGate g;
  g.fail_if_slower_pct = fail_if_slower_pct;
  g.n_before = before.n;
  g.n_after = after.n;
  if (!before.mean || !after.mean || *before.mean <= 0) {
    g.reason = absl::StrFormat("no img/s on %s: nothing to hold against --fail-if-slower",
                               !before.mean || *before.mean <= 0 ? "the before side"
                                                                 : "the after side");
    return g;
  }
  const double base = *before.mean;
  g.change_pct = 100.0 * (*after.mean - base) / base;
  const Significance s =
      SignificanceOf(base, before.sd, before.n, *after.mean, after.sd, after.n);
  if (!s.available) {
    g.reason = s.text;  // the seed's wording: a single run cannot support a significance call
    return g;
  }
  const double diff = *after.mean - base;
  const double threshold = fail_if_slower_pct / 100.0 * base;
  g.low_pct = 100.0 * (diff - s.two_se) / base;
  g.high_pct = 100.0 * (diff + s.two_se) / base;
  if (diff + s.two_se < -threshold) {
    g.verdict = GateVerdict::kFail;
  } else if (diff - s.two_se >= -threshold) {
    g.verdict = GateVerdict::kPass;
  }
  const char* what = g.verdict == GateVerdict::kFail   ? "slower than the threshold beyond doubt"
                     : g.verdict == GateVerdict::kPass ? "within the threshold beyond doubt"
                                                       : "straddles the threshold: more trials "
                                                         "(--repeat N) or a larger threshold "
                                                         "can decide";
  g.reason = absl::StrFormat(
      "img/s %+.2f %% (interval %+.2f .. %+.2f %%: mean difference +/- 2*SE, n=%d before, n=%d "
      "after) against -%.2f %%: %s",
      *g.change_pct, *g.low_pct, *g.high_pct, before.n, after.n, fail_if_slower_pct, what);
  return g;
}

const char* GateVerdictName(GateVerdict v) {
  switch (v) {
    case GateVerdict::kPass:
      return "PASS";
    case GateVerdict::kFail:
      return "FAIL";
    case GateVerdict::kInconclusive:
      return "INCONCLUSIVE";
  }
  return "INCONCLUSIVE";
}

int GateExitCode(GateVerdict v) {
  switch (v) {
    case GateVerdict::kPass:
      return kExitOk;
    case GateVerdict::kFail:
      return kExitCompareFail;
    case GateVerdict::kInconclusive:
      return kExitCompareInconclusive;
  }
  return kExitCompareInconclusive;
}

}  // namespace libreyolo
