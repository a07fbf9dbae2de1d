// `libreyolo profile summary DIR/`: a folder of per-rank Chrome traces of one distributed run
// (torch.profiler under DDP, Kineto on-demand traces), checked, analysed one task per rank in
// parallel, and rendered as the cross-rank view (docs/cli.md, "A folder of per-rank traces").
#ifndef LIBREYOLO_COMMON_READERS_RANKS_VIEW_H_
#define LIBREYOLO_COMMON_READERS_RANKS_VIEW_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "common/analysis/compare.h"
#include "common/analysis/cross_rank.h"

namespace libreyolo {

struct RankFile {
  std::string path;
  DistributedInfo info;
};

// A rank's trace and what its caller knows of it: for a trace without distributedInfo
// (Kineto's on-demand trace of an attach job), its rank and world size (the process's RANK and
// WORLD_SIZE); the backend may stay empty (the collective spans name it).
struct RankTraceInput {
  std::string path;
  std::optional<DistributedInfo> given;
};

struct RanksView {
  std::string source;  // the folder
  CrossRankResult result;
  int threads = 0;  // the analysis' threads
};

bool IsDirectory(const std::string& path);

// The folder's traces (*.json, *.json.gz), one per rank 0..n-1, in rank order. INVALID_ARGUMENT
// (exit 2) naming the problem and the way out: no traces, a trace without distributedInfo,
// mixed world sizes or backends, a rank twice, ranks missing (what the folder holds: "rank 0 of
// a 128-rank job"; not checked when `require_all` is false). A trace that cannot be read is
// DATA_LOSS (exit 1) naming the file. A rank folder's profile_trace.json without
// distributedInfo takes its rank and world size from the profile.json beside it
// (`config.traced_process{rank, world_size}`: an attach job's files, docs/profile-json.md).
absl::StatusOr<std::vector<RankFile>> ScanRankFolder(const std::string& dir, bool require_all);
// The same checks over given traces (one job's ranks, wherever they lie); `dir` names them in
// the errors.
absl::StatusOr<std::vector<RankFile>> ScanRankTraces(const std::string& dir,
                                                     const std::vector<std::string>& traces,
                                                     bool require_all);
absl::StatusOr<std::vector<RankFile>> ScanRankTraces(const std::string& dir,
                                                     const std::vector<RankTraceInput>& traces,
                                                     bool require_all);

// The trace of rank `rank` in the folder (for `--rank k`; other ranks may be missing):
// INVALID_ARGUMENT naming the ranks the folder holds when it has no trace of that rank.
absl::StatusOr<std::string> RankTracePath(const std::string& dir, int64_t rank);

// Scans, then analyses every rank's trace, one task per rank on at most `threads` threads (0:
// std::thread::hardware_concurrency()); only each rank's figures outlive its task. Traces that
// mark no ProfilerStep#N (Kineto's on-demand traces) are analysed per window instead: the span
// every rank's trace recorded (the latest start to the earliest end), their intervals kept
// until all are read; INVALID_ARGUMENT when some ranks mark steps and others do not, or the
// traces share no time.
absl::StatusOr<RanksView> BuildRanksView(const std::string& dir, int threads = 0);
// The same over given traces (ScanRankTraces with every rank required).
absl::StatusOr<RanksView> BuildRanksViewOfTraces(const std::string& dir,
                                                 const std::vector<std::string>& traces,
                                                 int threads = 0);
absl::StatusOr<RanksView> BuildRanksViewOfTraces(const std::string& dir,
                                                 const std::vector<RankTraceInput>& traces,
                                                 int threads = 0);

// `compare BEFORE/ AFTER/`: two runs' folders, as compare shows two profiles (the same
// CompareResult and renderers): the cross-rank figures of CrossRankMetrics() and each rank's
// step, compute, dataload and exposed communication before and after, the verdicts' headlines
// as the bound row, and a warning when the world size or the backend differs. One run on each
// side: no significance call.
CompareResult CompareRanks(const RanksView& before, const RanksView& after);

// The run's cross-rank figures, each once, in the order RenderRanksJson writes them: its JSON
// name, unit, direction and value (nullopt: n/a, null in JSON).
struct CrossRankMetric {
  const char* name;
  const char* unit;
  bool higher_is_better;
  // The result's field it reads (and a job profile's `ranks` object restores).
  std::variant<double CrossRankResult::*, std::optional<double> CrossRankResult::*,
               std::optional<int64_t> CrossRankResult::*>
      field;
  // false: a change is neither better nor worse (all-reduce bytes are the model's gradients: a
  // change says the runs trained different models, or bucketed them differently).
  bool directional = true;
  // false: not a row of `compare` (a rank number; the straggler's own excess, which the
  // verdict's headline row already compares).
  bool compared = true;
  bool integer = false;  // written as a JSON integer (a rank)

  std::optional<double> Value(const CrossRankResult& r) const;
  void Set(CrossRankResult& r, std::optional<double> v) const;
};
const std::vector<CrossRankMetric>& CrossRankMetrics();

std::string RenderRanksText(const RanksView& v);
std::string RenderRanksJson(const RanksView& v);
// The view back from RenderRanksJson's object (a job profile's `ranks`, docs/profile-json.md):
// every figure as written; each rank's per-step waits are not kept. DATA_LOSS when it is not
// such an object.
absl::StatusOr<RanksView> RanksViewFromJson(std::string_view json);

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_READERS_RANKS_VIEW_H_
