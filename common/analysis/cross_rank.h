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

struct CrossRankResult {
  std::string backend;
  int64_t world_size = 0;
  std::vector<RankFigures> ranks;  // by rank
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

// `ranks` holds one entry per rank 0..n-1, in rank order (the folder checks come first).
CrossRankResult AnalyseCrossRank(std::vector<RankFigures> ranks);

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_ANALYSIS_CROSS_RANK_H_
