// `compare --fail-if-slower PCT`: a PASS / FAIL / INCONCLUSIVE answer for CI, from the interval
// of the img/s difference against the threshold, for two like-for-like profiles.
//
// The interval holds two kinds of noise. The trials within a job (the significance rule of
// docs/metrics.md: each side's sample sd over its n trials) and the drift between jobs: two
// identical jobs run one after the other on a shared machine differ by more than their trials
// spread (issue 36: two identical `--repeat 3` runs on a loaded box read -27 %), because the
// load that sets a job's speed holds through all its trials. Each job's mean carries a job
// effect of relative sd D (`job_drift_pct`, independent between jobs), so with m_b, m_a the
// means, s_b, s_a the sample sds and d = m_a - m_b:
//   SE = sqrt(s_b²/n_b + s_a²/n_a + (D/100)² · (m_b² + m_a²))
// and with the threshold t = PCT % of m_b:
//   FAIL          d + 2*SE < -t   the whole interval is slower than the threshold allows;
//   PASS          d - 2*SE >= -t  the whole interval is within it (or faster);
//   INCONCLUSIVE  the interval straddles -t, or either side has fewer than 2 trials (a single
//                 run cannot support a significance call), or img/s is missing.
// D cannot be estimated from the two jobs being judged (their difference is what is tested):
// it is a property of the machine class, measured from recorded identical pairs (A/A) by
// JobDriftFromPairs; kDefaultJobDriftPct is the one measured on a shared box (docs/ci.md).
#ifndef LIBREYOLO_COMMON_ANALYSIS_COMPARE_GATE_H_
#define LIBREYOLO_COMMON_ANALYSIS_COMPARE_GATE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/profile/profile.h"

namespace libreyolo {

enum class GateVerdict { kPass, kFail, kInconclusive };

// The between-job relative sd (percent of a job's mean img/s) the gate assumes when
// --job-drift-pct is not given: from the recorded identical pairs of docs/ci.md ("Drift between
// jobs"), measured on a shared 2-core box. A dedicated runner measures its own (lower) value.
inline constexpr double kDefaultJobDriftPct = 10.0;

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
  double job_drift_pct = 0;  // D: the between-job relative sd the interval includes
  // The D this pair alone implies were it an A/A pair (JobDriftFromPairs of it): what a
  // runner's identical pairs record to measure their own D (docs/ci.md). Absent with n < 2.
  OptDouble pair_drift_pct;
  // Relative change of img/s, after vs before, and its interval (percent of the before mean);
  // the interval is absent without n >= 2 on both sides.
  OptDouble change_pct, low_pct, high_pct;
  int64_t n_before = 0, n_after = 0;
  std::string reason;  // one sentence: what was compared against what
};

// The img/s trials a profile carries (profile_repeat.json / `--repeat N`).
ThroughputTrials ImgPerSTrials(const Profile& p);

// The gate. `fail_if_slower_pct` (a finite number in [0, 100)) and `job_drift_pct` (finite,
// >= 0) are checked by the caller.
CompareGate EvaluateGate(const ThroughputTrials& before, const ThroughputTrials& after,
                         double fail_if_slower_pct, double job_drift_pct = kDefaultJobDriftPct);

// The gate answers only for like-for-like profiles: the same mode, model, size, imgsz and
// device. The reason they are not (each differing setting, and the way out), or nullopt. A
// different batch or precision is a lever: compare reads it per image (CompareMismatches).
std::optional<std::string> GateNotLikeForLike(const Profile& before, const Profile& after);

// A side whose verdict has no confidence (trust.h: `none`, the trace has GPU launch calls and no
// kernels) gives the gate nothing to stand on: a PASS or FAIL becomes INCONCLUSIVE, the reason
// naming the side and why, the img/s interval kept. Profiles without trust checks (the Python
// tool's, ours before issue 40) and reduced confidence leave the answer as it is.
void QualifyGateByTrust(const Profile& before, const Profile& after, CompareGate& g);

// D from recorded identical pairs (A/A: the same command twice on the machine class, each with
// n >= 2 trials): for pair i, the relative difference r_i = (m_a - m_b) / m̄ and its
// within-job part w_i² = (s_b²/n_b + s_a²/n_a) / m̄² (m̄ the pair's mean of means); since
// E[r_i²] = w_i² + 2·(D/100)², D = 100 · sqrt(max(0, mean_i(r_i² - w_i²)) / 2). nullopt
// without a usable pair (fewer than 2 trials on a side, no img/s).
struct RecordedPair {
  ThroughputTrials a, b;
};
std::optional<double> JobDriftFromPairs(const std::vector<RecordedPair>& pairs);

// "PASS", "FAIL", "INCONCLUSIVE".
const char* GateVerdictName(GateVerdict v);

// 0, kExitCompareFail or kExitCompareInconclusive (common/status/exit_code.h).
int GateExitCode(GateVerdict v);

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_ANALYSIS_COMPARE_GATE_H_
