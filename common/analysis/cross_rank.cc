#include "common/analysis/cross_rank.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/analysis/trust.h"

namespace libreyolo {
namespace {

template <typename F>
double Mean(const std::vector<RankFigures>& v, F f) {
  double s = 0;
  for (const RankFigures& r : v) s += f(r);
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

// The mean of f over every rank but `skip`.
template <typename F>
double MeanOthers(const std::vector<RankFigures>& v, size_t skip, F f) {
  double s = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i != skip) s += f(v[i]);
  }
  return v.size() < 2 ? 0 : s / static_cast<double>(v.size() - 1);
}

// The median over the steps all ranks share of (the others' mean comm - rank `least`'s comm).
std::optional<double> MedianStepWait(const std::vector<RankFigures>& v, size_t least) {
  std::map<int64_t, std::vector<double>> by_step;  // N -> comm ms per rank, in rank order
  for (const RankFigures& f : v) {
    for (const auto& [n, ms] : f.comm_ms_by_step) by_step[n].push_back(ms);
  }
  std::vector<double> waits;
  for (const auto& [n, comm] : by_step) {
    if (comm.size() != v.size()) continue;  // a step some rank lacks (or has twice)
    double others = 0;
    for (size_t i = 0; i < comm.size(); ++i) others += i == least ? 0 : comm[i];
    waits.push_back(others / static_cast<double>(comm.size() - 1) - comm[least]);
  }
  if (waits.empty()) return std::nullopt;
  std::sort(waits.begin(), waits.end());
  const size_t m = waits.size() / 2;
  return waits.size() % 2 == 1 ? waits[m] : (waits[m - 1] + waits[m]) / 2;
}

void FindStraggler(CrossRankResult& r) {
  const std::vector<RankFigures>& v = r.ranks;
  if (v.size() < 2 || r.comm_ms <= 0) return;
  size_t least = 0;
  for (size_t i = 1; i < v.size(); ++i) {
    if (v[i].comm_ms < v[least].comm_ms) least = i;
  }
  const double wait =
      MeanOthers(v, least, [&](const RankFigures& f) { return f.comm_ms; }) - v[least].comm_ms;
  r.wait_for_rank = v[least].info.rank;
  r.collective_wait_ms = wait;
  r.collective_wait_median_ms = MedianStepWait(v, least);
  const double threshold = std::max(kStragglerMinWaitMs, kStragglerMinWaitFrac * r.step_ms_mean);
  if (wait < threshold || r.collective_wait_median_ms.value_or(wait) < threshold) return;
  r.straggler = v[least].info.rank;
  r.straggler_extra_dataload_ms =
      v[least].dataload_ms -
      MeanOthers(v, least, [](const RankFigures& f) { return f.dataload_ms; });
  r.straggler_extra_compute_ms =
      v[least].compute_ms - MeanOthers(v, least, [](const RankFigures& f) { return f.compute_ms; });
}

void Bandwidth(CrossRankResult& r) {
  bool any = false;
  double bytes = 0;
  for (const RankFigures& f : r.ranks) {
    if (!f.allreduce_bytes) continue;
    any = true;
    bytes += *f.allreduce_bytes;
  }
  if (!any) return;
  r.allreduce_bytes = bytes / static_cast<double>(r.ranks.size());
  const RankFigures* timed = nullptr;
  for (const RankFigures& f : r.ranks) {
    if (r.wait_for_rank && f.info.rank == *r.wait_for_rank) timed = &f;
  }
  if (timed == nullptr && !r.ranks.empty()) timed = &r.ranks[0];
  if (timed == nullptr || timed->allreduce_ms <= 0 || !timed->allreduce_bytes) return;
  r.algbw_gbps = *timed->allreduce_bytes / (timed->allreduce_ms / 1e3) / 1e9;
  const auto n = static_cast<double>(r.world_size);
  r.busbw_gbps = *r.algbw_gbps * 2.0 * (n - 1.0) / n;
}

// "step" or "window": what the figures are per.
const char* Per(const CrossRankResult& r) { return r.windowed ? "window" : "step"; }

void StragglerVerdict(CrossRankResult& r) {
  const double dl = r.straggler_extra_dataload_ms.value_or(0);
  const double comp = r.straggler_extra_compute_ms.value_or(0);
  const double wait = *r.collective_wait_ms;
  const char* per = Per(r);
  if (std::max(dl, comp) < kStragglerExplainedFrac * wait) {
    // Neither its ops nor its data loading take the time the others wait: it is elsewhere.
    r.verdict = absl::StrFormat(
        "rank %d is a straggler: the others wait %.1f ms per %s for it in their collectives, "
        "but its compute and dataload are not what is longer (%+.1f ms and %+.1f ms per %s "
        "against the other ranks' mean): its extra time is outside its profiled ops",
        *r.straggler, wait, per, comp, dl, per);
    r.levers = {absl::StrFormat("look at what rank %d does between its ops (sleeps, host "
                                "synchronisations, logging or checkpointing on that rank only)",
                                *r.straggler),
                "check that rank's CPU share (other jobs, NUMA placement, oversubscribed threads)"};
    return;
  }
  const bool dataload = dl >= comp;
  r.verdict = absl::StrFormat(
      "rank %d is a straggler: its %s is %.1f ms longer per %s than the other ranks' mean; "
      "the others wait %.1f ms per %s for it in their collectives",
      *r.straggler, dataload ? "dataload" : "compute", dataload ? dl : comp, per, wait, per);
  if (dataload) {
    r.levers = {absl::StrFormat("more DataLoader workers on rank %d (num_workers, "
                                "persistent_workers, pin_memory, prefetch_factor)",
                                *r.straggler),
                "check that rank's storage and CPU share (other jobs, NUMA placement)"};
  } else {
    r.levers = {
        absl::StrFormat("check rank %d's device (clocks, thermal, other processes)", *r.straggler),
        "even out the work per rank (batch per rank, samples of uneven size)"};
  }
}

void CommBoundVerdict(CrossRankResult& r, double exposed_frac) {
  r.verdict = absl::StrFormat(
      "communication-bound: %.1f ms of the %.1f ms %s (%.0f%%) is communication no "
      "computation overlaps",
      r.exposed_comm_ms, r.step_ms_mean, Per(r), 100.0 * exposed_frac);
  r.levers = {"bucket size: DDP(bucket_cap_mb=...) (fewer, larger all-reduces; default 25)",
              "gradient_as_bucket_view=True (no copy between gradients and buckets)",
              "overlap: static_graph=True, no_sync() over gradient-accumulation steps",
              "a larger batch per rank (more compute per all-reduce)"};
}

// The headline is the larger loss: the wait the straggler causes, or the communication that
// is exposed even on the rank nobody waits for (the straggler's own exposed time).
void Verdict(CrossRankResult& r) {
  const double exposed_frac = r.step_ms_mean > 0 ? r.exposed_comm_ms / r.step_ms_mean : 0;
  double straggler_exposed = 0;
  for (const RankFigures& f : r.ranks) {
    if (r.straggler && f.info.rank == *r.straggler) straggler_exposed = f.exposed_comm_ms;
  }
  if (r.straggler &&
      (*r.collective_wait_ms >= straggler_exposed || exposed_frac < kCommBoundFrac)) {
    StragglerVerdict(r);
  } else if (exposed_frac >= kCommBoundFrac) {
    CommBoundVerdict(r, exposed_frac);
    if (r.straggler) {
      absl::StrAppendFormat(&r.verdict,
                            "; besides, rank %d is a small straggler (the others "
                            "wait %.1f ms per %s for it)",
                            *r.straggler, *r.collective_wait_ms, Per(r));
    }
  } else if (r.comm_ms <= 0) {
    r.verdict = absl::StrCat("no collectives in the ", r.windowed ? "" : "step ",
                             "window: the ranks did not communicate");
  } else if (r.windowed) {
    // One common window: the ranks' "step times" are its length, so their spread says nothing.
    r.verdict = absl::StrFormat(
        "balanced: the others wait %.1f ms per window for the last rank to reach its "
        "collectives, exposed communication %.0f%% of the window",
        r.collective_wait_ms.value_or(0), 100.0 * exposed_frac);
  } else {
    r.verdict = absl::StrFormat(
        "balanced: step times within %.1f ms (%.1f%%), exposed communication %.0f%% of the step",
        r.step_spread_ms, r.step_spread_pct, 100.0 * exposed_frac);
  }
}

// With ranks missing, the verdict says over which ranks it holds, after its headline (the part
// before the first ':', which `compare` sets side by side).
void MarkPartialVerdict(CrossRankResult& r) {
  if (!r.partial()) return;
  const std::string over =
      absl::StrFormat(" (over the %d of %d ranks present; rank%s %s missing)", r.ranks.size(),
                      r.world_size, r.missing_ranks.size() == 1 ? "" : "s",
                      RanksText(r.missing_ranks));
  const size_t colon = r.verdict.find(':');
  r.verdict.insert(colon == std::string::npos ? r.verdict.size() : colon, over);
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 == 1 ? v[m] : (v[m - 1] + v[m]) / 2;
}

// A rank whose steps start further from the reference rank's than its clock allows.
struct SkewedRank {
  int64_t rank;
  double offset_ms;     // median over the shared steps of (its start - the reference's)
  double allowance_ms;  // the longest of those steps + kClockSkewAllowanceMs
  size_t shared;
};

// The median offset of f's ProfilerStep#N starts from ref's over the step numbers both mark, and
// the allowance; nullopt when they share none.
std::optional<SkewedRank> StepOffset(const RankFigures& ref, const RankFigures& f) {
  std::map<int64_t, Interval> ref_steps;
  for (size_t i = 0; i < ref.comm_ms_by_step.size() && i < ref.step_spans.size(); ++i) {
    ref_steps.emplace(ref.comm_ms_by_step[i].first, ref.step_spans[i]);
  }
  std::vector<double> offsets;
  double longest_ns = 0;
  for (size_t i = 0; i < f.comm_ms_by_step.size() && i < f.step_spans.size(); ++i) {
    const auto it = ref_steps.find(f.comm_ms_by_step[i].first);
    if (it == ref_steps.end()) continue;
    const Interval& a = it->second;
    const Interval& b = f.step_spans[i];
    offsets.push_back(static_cast<double>(b.first - a.first) / 1e6);
    longest_ns = std::max({longest_ns, static_cast<double>(a.second - a.first),
                           static_cast<double>(b.second - b.first)});
  }
  if (offsets.empty()) return std::nullopt;
  return SkewedRank{f.info.rank, Median(offsets), longest_ns / 1e6 + kClockSkewAllowanceMs,
                    offsets.size()};
}

TrustCheck ClockCheck(const CrossRankResult& r) {
  if (r.windowed) {
    return {kCheckClocks, kTrustNotApplicable,
            "figures per window: the traces mark no steps to set the ranks' clocks against"};
  }
  if (r.ranks.size() < 2) return {kCheckClocks, kTrustNotApplicable, "one rank: no other clock"};
  const RankFigures& ref = r.ranks[0];
  std::vector<SkewedRank> skewed;
  double largest = 0;
  size_t compared = 0;
  for (size_t i = 1; i < r.ranks.size(); ++i) {
    const std::optional<SkewedRank> o = StepOffset(ref, r.ranks[i]);
    if (!o) continue;
    ++compared;
    largest = std::max(largest, std::abs(o->offset_ms));
    if (std::abs(o->offset_ms) > o->allowance_ms) skewed.push_back(*o);
  }
  if (compared == 0) {
    return {kCheckClocks, kTrustNotApplicable,
            absl::StrCat("no other rank marks a ProfilerStep#N that rank ", ref.info.rank,
                         " marks: no step to set their clocks against")};
  }
  if (skewed.empty()) {
    return {kCheckClocks, kTrustPassed,
            absl::StrFormat("every rank's steps start within %.3f ms of rank %d's (median over "
                            "the steps they share), within one step plus %.0f ms",
                            largest, ref.info.rank, kClockSkewAllowanceMs)};
  }
  std::vector<std::string> said;
  for (const SkewedRank& s : skewed) {
    if (said.size() == 3) {
      said.push_back(absl::StrCat("and ", skewed.size() - 3, " more"));
      break;
    }
    said.push_back(absl::StrFormat(
        "rank %d's ProfilerStep#N start %.1f ms %s rank %d's (median over %d shared step%s), "
        "beyond one step plus %.0f ms (%.1f ms): its clock is off by at least %.1f ms",
        s.rank, std::abs(s.offset_ms), s.offset_ms > 0 ? "after" : "before", ref.info.rank,
        s.shared, s.shared == 1 ? "" : "s", kClockSkewAllowanceMs, s.allowance_ms,
        std::abs(s.offset_ms) - (s.allowance_ms - kClockSkewAllowanceMs)));
  }
  return {kCheckClocks, kTrustFailed,
          absl::StrCat(absl::StrJoin(said, "; "),
                       ". A synchronous job's ranks run each step together (its collectives "
                       "need every rank), so the traces' clocks disagree beyond the skew hosts' "
                       "clocks allow: times set side by side across ranks are not to be relied "
                       "on; each rank's per-step figures are durations on its own clock and "
                       "stand")};
}

TrustCheck RanksCheck(const CrossRankResult& r) {
  if (!r.partial()) {
    return {kCheckRanksComplete, kTrustPassed,
            absl::StrCat("every rank of the ", r.world_size, "-rank job is present")};
  }
  std::vector<int64_t> held;
  for (const RankFigures& f : r.ranks) held.push_back(f.info.rank);
  return {kCheckRanksComplete, kTrustFailed,
          absl::StrFormat("the folder holds rank%s %s of a %d-rank job; rank%s %s %s missing: %s "
                          "are over the %d ranks present only (partial)",
                          held.size() == 1 ? "" : "s", RanksText(held), r.world_size,
                          r.missing_ranks.size() == 1 ? "" : "s", RanksText(r.missing_ranks),
                          r.missing_ranks.size() == 1 ? "is" : "are",
                          "the step spread, the rank waited for, its wait, the straggler and the "
                          "load imbalance",
                          held.size())};
}

}  // namespace

std::string RanksText(const std::vector<int64_t>& ranks) {
  std::vector<std::string> runs;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (runs.size() == 6) {
      runs.push_back("...");
      break;
    }
    runs.push_back(j == i ? absl::StrCat(ranks[i]) : absl::StrCat(ranks[i], "..", ranks[j]));
    i = j + 1;
  }
  return absl::StrJoin(runs, ", ");
}

const std::vector<std::string>& PartialFigures() {
  static const auto* names = new std::vector<std::string>{
      "step_spread_ms",  "step_spread_pct",
      "wait_for_rank",   "collective_wait_ms",
      "collective_wait_median_ms", "straggler",
      "straggler_extra_dataload_ms", "straggler_extra_compute_ms",
      "load_imbalance_pct"};
  return *names;
}

void AssessRanksTrust(CrossRankResult& r) {
  r.trust_checks = {RanksCheck(r), ClockCheck(r)};
  r.trust_reasons.clear();
  for (const TrustCheck& c : r.trust_checks) {
    if (c.outcome != kTrustFailed) continue;
    r.trust_reasons.push_back(c.name == kCheckRanksComplete
                                  ? absl::StrCat(r.missing_ranks.size(), " of ", r.world_size,
                                                 " ranks missing: the cross-rank figures are "
                                                 "partial")
                                  : std::string("the ranks' clocks disagree beyond the skew "
                                                "they allow"));
  }
  r.confidence = r.trust_reasons.empty() ? kConfidenceHigh : kConfidenceReduced;
}

CrossRankResult AnalyseCrossRank(std::vector<RankFigures> ranks, int64_t world_size) {
  CrossRankResult r;
  r.ranks = std::move(ranks);
  r.world_size = std::max<int64_t>(world_size, static_cast<int64_t>(r.ranks.size()));
  if (r.world_size <= kMaxWorldSize) {  // the folder's reader refuses larger ones
    std::vector<bool> held(static_cast<size_t>(r.world_size), false);
    for (const RankFigures& f : r.ranks) {
      if (f.info.rank >= 0 && f.info.rank < r.world_size) {
        held[static_cast<size_t>(f.info.rank)] = true;
      }
    }
    // Ranks given without a rank number (hand-made figures) are 0..n-1 in order.
    const bool numbered = std::any_of(r.ranks.begin(), r.ranks.end(),
                                      [](const RankFigures& f) { return f.info.rank >= 0; });
    for (int64_t k = 0; numbered && k < r.world_size; ++k) {
      if (!held[static_cast<size_t>(k)]) r.missing_ranks.push_back(k);
    }
  }
  if (!r.ranks.empty()) r.backend = r.ranks[0].info.backend;
  r.windowed = !r.ranks.empty() && r.ranks[0].windowed;
  r.step_ms_mean = Mean(r.ranks, [](const RankFigures& f) { return f.step_ms; });
  double lo = 0, hi = 0;
  for (size_t i = 0; i < r.ranks.size(); ++i) {
    const double s = r.ranks[i].step_ms;
    lo = i == 0 ? s : std::min(lo, s);
    hi = i == 0 ? s : std::max(hi, s);
  }
  r.step_spread_ms = hi - lo;
  r.step_spread_pct = r.step_ms_mean > 0 ? 100.0 * r.step_spread_ms / r.step_ms_mean : 0;
  r.comm_ms = Mean(r.ranks, [](const RankFigures& f) { return f.comm_ms; });
  r.exposed_comm_ms = Mean(r.ranks, [](const RankFigures& f) { return f.exposed_comm_ms; });
  if (r.comm_ms > 0) r.comm_overlap_pct = 100.0 * (1.0 - r.exposed_comm_ms / r.comm_ms);
  const double busy_mean =
      Mean(r.ranks, [](const RankFigures& f) { return f.compute_ms + f.dataload_ms; });
  double busy_max = 0;
  for (const RankFigures& f : r.ranks) busy_max = std::max(busy_max, f.compute_ms + f.dataload_ms);
  if (busy_mean > 0) r.load_imbalance_pct = 100.0 * (busy_max / busy_mean - 1.0);
  FindStraggler(r);
  Bandwidth(r);
  Verdict(r);
  MarkPartialVerdict(r);
  AssessRanksTrust(r);
  return r;
}

}  // namespace libreyolo
