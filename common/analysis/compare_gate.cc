#include "common/analysis/compare_gate.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/analysis/compare.h"
#include "common/analysis/repeat_trials.h"
#include "common/analysis/trust.h"
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
                         double fail_if_slower_pct, double job_drift_pct) {
  CompareGate g;
  g.fail_if_slower_pct = fail_if_slower_pct;
  g.job_drift_pct = job_drift_pct;
  g.n_before = before.n;
  g.n_after = after.n;
  if (!before.mean || !after.mean || *before.mean <= 0) {
    g.reason =
        absl::StrFormat("no img/s on %s: nothing to hold against --fail-if-slower",
                        !before.mean || *before.mean <= 0 ? "the before side" : "the after side");
    return g;
  }
  const double base = *before.mean;
  g.change_pct = 100.0 * (*after.mean - base) / base;
  const Significance s = SignificanceOf(base, before.sd, before.n, *after.mean, after.sd, after.n);
  if (!s.available) {
    g.reason = s.text;  // the seed's wording: a single run cannot support a significance call
    return g;
  }
  g.pair_drift_pct = JobDriftFromPairs({{before, after}});
  // Within the jobs (the trials), and between them (each job's own load: D of its mean).
  const double drift = job_drift_pct / 100.0;
  const double se_within = s.two_se / 2;
  const double two_se = 2 * std::sqrt(se_within * se_within +
                                      drift * drift * (base * base + *after.mean * *after.mean));
  const double diff = *after.mean - base;
  const double threshold = fail_if_slower_pct / 100.0 * base;
  g.low_pct = 100.0 * (diff - two_se) / base;
  g.high_pct = 100.0 * (diff + two_se) / base;
  if (diff + two_se < -threshold) {
    g.verdict = GateVerdict::kFail;
  } else if (diff - two_se >= -threshold) {
    g.verdict = GateVerdict::kPass;
  }
  const char* what = g.verdict == GateVerdict::kFail   ? "slower than the threshold beyond doubt"
                     : g.verdict == GateVerdict::kPass ? "within the threshold beyond doubt"
                     : s.two_se < two_se / 2
                         ? "straddles the threshold, mostly from the drift between jobs: more "
                           "trials will not narrow it; a larger threshold, or --job-drift-pct "
                           "measured on this runner (docs/ci.md), can decide"
                         : "straddles the threshold: more trials (--repeat N) or a larger "
                           "threshold can decide";
  g.reason = absl::StrFormat(
      "img/s %+.2f %% (interval %+.2f .. %+.2f %%: mean difference +/- 2*SE, SE of the trials "
      "(n=%d before, n=%d after) and of a %.1f %% drift between jobs) against -%.2f %%: %s",
      *g.change_pct, *g.low_pct, *g.high_pct, before.n, after.n, job_drift_pct, fail_if_slower_pct,
      what);
  return g;
}

std::optional<std::string> GateNotLikeForLike(const Profile& before, const Profile& after) {
  std::vector<std::string> differ;
  for (const SettingMismatch& m : SettingMismatches(before, after)) {
    if (IsPerImageLever(m.name)) continue;
    differ.push_back(absl::StrCat(m.name, " ", m.before, " before, ", m.after, " after"));
  }
  if (differ.empty()) return std::nullopt;
  return absl::StrCat(
      "the gate answers only for like-for-like profiles (the same mode, model, size, imgsz and "
      "device): ",
      absl::StrJoin(differ, "; "),
      ". Profile both sides with the same settings (a different batch or precision is a lever "
      "the gate compares per image); plain `compare` without --fail-if-slower shows the deltas");
}

void QualifyGateByTrust(const Profile& before, const Profile& after, CompareGate& g) {
  std::vector<std::string> none;
  for (const auto& [side, p] : {std::pair{"before", &before}, std::pair{"after", &after}}) {
    const TrustAssessment t = AssessTrust(*p);
    if (t.checked && t.confidence == kConfidenceNone) {
      none.push_back(absl::StrCat("the ", side, " side's (", absl::StrJoin(t.reasons, "; "),
                                  ")"));
    }
  }
  if (none.empty()) return;
  const char* was = GateVerdictName(g.verdict);
  g.verdict = GateVerdict::kInconclusive;
  g.reason = absl::StrCat(
      "no answer: ", absl::StrJoin(none, " and "), " verdict has no confidence (trust: none), "
      "so the gate neither passes nor fails it (the img/s alone said ", was, ": ", g.reason,
      "). Profile that side again with GPU activity recorded (`summary` shows its trust line)");
}

std::optional<double> JobDriftFromPairs(const std::vector<RecordedPair>& pairs) {
  double sum = 0;
  int used = 0;
  for (const RecordedPair& p : pairs) {
    if (!p.a.mean || !p.b.mean || p.a.n < 2 || p.b.n < 2) continue;
    const double m = (*p.a.mean + *p.b.mean) / 2;
    if (m <= 0) continue;
    const double r = (*p.b.mean - *p.a.mean) / m;
    const double w2 = (p.a.sd * p.a.sd / static_cast<double>(p.a.n) +
                       p.b.sd * p.b.sd / static_cast<double>(p.b.n)) /
                      (m * m);
    sum += r * r - w2;
    ++used;
  }
  if (used == 0) return std::nullopt;
  return 100.0 * std::sqrt(std::max(0.0, sum / used) / 2);
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
