// `compare --fail-if-slower PCT`: a PASS / FAIL / INCONCLUSIVE answer for CI, from the interval
// of the img/s difference (the significance rule of docs/metrics.md: the difference of the
// means, plus or minus twice the combined standard error) against the threshold.
//
// With d = after - before in img/s and the threshold t = PCT % of the before mean:
//   FAIL          d + 2*SE < -t   the whole interval is slower than the threshold allows;
//   PASS          d - 2*SE >= -t  the whole interval is within it (or faster);
//   INCONCLUSIVE  the interval straddles -t, or either side has fewer than 2 trials (a single
//                 run cannot support a significance call), or img/s is missing.
#ifndef LIBREYOLO_COMMON_ANALYSIS_COMPARE_GATE_H_
#define LIBREYOLO_COMMON_ANALYSIS_COMPARE_GATE_H_

#include <cstdint>
#include <string>

#include "common/profile/profile.h"

namespace libreyolo {

enum class GateVerdict { kPass, kFail, kInconclusive };

// One side's img/s trials: mean, sample standard deviation and count (n = 1 for a profile
// without trials: a single run).
struct ThroughputTrials {
  OptDouble mean;
  double sd = 0;
  int64_t n = 1;
};

struct CompareGate {
  GateVerdict verdict = GateVerdict::kInconclusive;
  double fail_if_slower_pct = 0;
  // Relative change of img/s, after vs before, and its interval (percent of the before mean);
  // the interval is absent without n >= 2 on both sides.
  OptDouble change_pct, low_pct, high_pct;
  int64_t n_before = 0, n_after = 0;
  std::string reason;  // one sentence: what was compared against what
};

// The img/s trials a profile carries (profile_repeat.json / `--repeat N`).
ThroughputTrials ImgPerSTrials(const Profile& p);

// The gate. `fail_if_slower_pct` is checked by the caller (a finite number in [0, 100)).
CompareGate EvaluateGate(const ThroughputTrials& before, const ThroughputTrials& after,
                         double fail_if_slower_pct);

// "PASS", "FAIL", "INCONCLUSIVE".
const char* GateVerdictName(GateVerdict v);

// 0, kExitCompareFail or kExitCompareInconclusive (common/status/exit_code.h).
int GateExitCode(GateVerdict v);

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_ANALYSIS_COMPARE_GATE_H_
