// Cross-rank analysis of a data-parallel run: per-rank figures side by side, the step-time
// spread, the straggler and the wait it causes, communication exposed vs overlapped, all-reduce
// bytes and bandwidth (nccl-tests' algbw and busbw), load imbalance, and a verdict with levers.
// Definitions: docs/metrics.md, "Cross-rank analysis".
#ifndef LIBREYOLO_COMMON_ANALYSIS_CROSS_RANK_H_
#define LIBREYOLO_COMMON_ANALYSIS_CROSS_RANK_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/analysis/rank_trace.h"
#include "common/profile/profile.h"

namespace libreyolo {

// A straggler is named when the others wait at least this long for it, per step: the larger
// of kStragglerMinWaitMs and kStragglerMinWaitFrac of the mean step (per window and of the
// window, for windowed figures).
inline constexpr double kStragglerMinWaitMs = 1.0;
inline constexpr double kStragglerMinWaitFrac = 0.05;
// Exposed communication from this share of the step on is "communication-bound".
inline constexpr double kCommBoundFrac = 0.15;
// A straggler whose extra compute and extra dataload are both below this share of the wait it
// causes is slow outside its profiled ops (a sleep, Python between ops, CPU contention).
inline constexpr double kStragglerExplainedFrac = 0.25;
// The clock check (clocks_consistent): in a synchronous job every step has collectives that need
// every rank at once, so two ranks' ProfilerStep#N start within one step of each other; the
// ranks' clocks (each host's own: one host's ranks share one) may add this much more (NTP keeps
// hosts within a few ms of each other).
inline constexpr double kClockSkewAllowanceMs = 5.0;

// The largest world size a trace may declare (the largest jobs have ~10^5 ranks): a folder of
// some ranks lists the others, so a hostile `world_size` must not make that list huge.
inline constexpr int64_t kMaxWorldSize = int64_t{1} << 20;

// The trust checks of a folder of rank traces (docs/metrics.md "Trust", "Cross-rank analysis").
inline constexpr char kCheckRanksComplete[] = "ranks_complete";
inline constexpr char kCheckClocks[] = "clocks_consistent";

struct CrossRankResult {
  std::string backend;
  int64_t world_size = 0;          // the job's: the ranks present may be fewer
  std::vector<RankFigures> ranks;  // by rank: the ranks present
  // The job's ranks the folder does not hold. With any, the figures that compare every rank
  // with every other (PartialFigures()) are over the ranks present only: `partial`.
  std::vector<int64_t> missing_ranks;
  bool partial() const { return !missing_ranks.empty(); }
  // ranks_complete and clocks_consistent, each with its evidence; the confidence they give
  // (high / reduced) and one reason per failed check.
  std::vector<TrustCheck> trust_checks;
  std::string confidence;
  std::vector<std::string> trust_reasons;
  // Every figure is per window, not per step: the ranks' traces mark no steps (Kineto's
  // on-demand traces of an attach job) and were cut to the span all of them cover; step_ms_mean
  // is that window's length and the step spread 0.
  bool windowed = false;
  double step_ms_mean = 0;
  double step_spread_ms = 0;   // max - min of the ranks' step_ms
  double step_spread_pct = 0;  // of step_ms_mean
  // The rank with the least time in collectives (the one the others wait for), and how long
  // the others wait for it per step: the mean over the other ranks of (their comm_ms - its).
  // nullopt with one rank or no collectives.
  std::optional<int64_t> wait_for_rank;
  std::optional<double> collective_wait_ms;
  // The median over the steps every rank has (by ProfilerStep number) of that step's wait for
  // wait_for_rank: one step in which a rank was descheduled moves the mean, not the median.
  // nullopt when the ranks share no step number.
  std::optional<double> collective_wait_median_ms;
  // wait_for_rank when collective_wait_ms and (where known) collective_wait_median_ms reach the
  // threshold above; else nullopt.
  std::optional<int64_t> straggler;
  // Its dataload and compute minus the other ranks' means (ms per step); with `straggler`.
  std::optional<double> straggler_extra_dataload_ms, straggler_extra_compute_ms;
  double comm_ms = 0;                      // mean over ranks
  double exposed_comm_ms = 0;              // mean over ranks
  std::optional<double> comm_overlap_pct;  // 100 * (1 - exposed / comm); nullopt without comm
  // Mean over ranks of the all-reduce bytes per step; nullopt when no rank records sizes.
  std::optional<double> allreduce_bytes;
  // nccl-tests: algbw = bytes / time (GB/s, 1e9), with the time of the rank that waits least
  // (wait_for_rank's all-reduce time); busbw = algbw * 2 (n-1) / n. nullopt without bytes or time.
  std::optional<double> algbw_gbps, busbw_gbps;
  // 100 * (max / mean - 1) of the ranks' busy time (compute + dataload); nullopt when 0.
  std::optional<double> load_imbalance_pct;
  std::string verdict;
  std::vector<std::string> levers;
};

// `ranks` holds one entry per rank present, in rank order (the folder checks come first), of a
// job of `world_size` ranks (0: as many as given, none missing).
CrossRankResult AnalyseCrossRank(std::vector<RankFigures> ranks, int64_t world_size = 0);

// The names (as CrossRankMetrics writes them) of the figures that need every rank of the job: the
// step spread, the rank waited for and its wait, the straggler and its extra times, the load
// imbalance. With ranks missing they are over the ranks present and marked partial.
const std::vector<std::string>& PartialFigures();

// The folder's trust checks and confidence from r's ranks (sets r.trust_checks, confidence,
// trust_reasons): ranks_complete (failed: ranks missing) and clocks_consistent (failed: a
// rank's ProfilerStep#N starts further from the lowest rank's than one step plus
// kClockSkewAllowanceMs, in the median over the steps both mark; not applicable per window).
void AssessRanksTrust(CrossRankResult& r);

// "1..127", "0..33, 35..299", "1, 3" (at most 6 runs listed).
std::string RanksText(const std::vector<int64_t>& ranks);

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_ANALYSIS_CROSS_RANK_H_
