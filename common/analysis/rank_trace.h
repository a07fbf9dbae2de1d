// One rank's trace of a distributed run, reduced to the figures the cross-rank analysis needs
// (docs/metrics.md, "Cross-rank analysis"): one streaming pass that keeps intervals, not events.
#ifndef LIBREYOLO_COMMON_ANALYSIS_RANK_TRACE_H_
#define LIBREYOLO_COMMON_ANALYSIS_RANK_TRACE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace libreyolo {

// The trace's `distributedInfo` (torch.profiler writes it for every rank of an initialised
// process group): absent fields stay -1 / empty.
struct DistributedInfo {
  std::string backend;  // "nccl", "gloo", ...
  int64_t rank = -1;
  int64_t world_size = -1;
};

// Per-step figures of one rank, over its ProfilerStep#N window (the union of its steps).
struct RankFigures {
  std::string path;
  DistributedInfo info;
  int64_t steps = 0;           // ProfilerStep#N spans (distinct N)
  double step_ms = 0;          // mean ProfilerStep duration
  double compute_ms = 0;       // union of computation (GPU kernels; CPU ops on a CPU-only trace)
  double dataload_ms = 0;      // union of the data-loading spans
  double comm_ms = 0;          // union of collectives (time in collectives)
  double exposed_comm_ms = 0;  // the part of comm_ms that no computation overlaps
  double allreduce_ms = 0;     // union of the all-reduce collectives alone
  int64_t collectives = 0;     // collective calls in the window
  // Bytes the rank's all-reduces carry per step: from record_param_comms ("In msg nelems" x the
  // dtype's size) or, where those are absent, from the collective spans' Input Dims and type.
  // nullopt when the trace records no sizes.
  std::optional<double> allreduce_bytes = std::nullopt;
  bool gpu_comm = false;  // collectives timed on GPU kernels (else on CPU spans)
  // (N of ProfilerStep#N, ms of comm_ms' union inside that step), in the order of the steps'
  // starts: the per-step waits of the cross-rank analysis.
  std::vector<std::pair<int64_t, double>> comm_ms_by_step;
};

// Reads the trace's distributedInfo, stopping as soon as it has been read (torch writes it
// before traceEvents), so a folder is sorted by rank without parsing every event. An absent
// distributedInfo leaves every field unset. Errors as ReadTraceFile's (NOT_FOUND, DATA_LOSS,
// INVALID_ARGUMENT).
absl::StatusOr<DistributedInfo> ReadDistributedInfo(const std::string& path);

// One pass over the trace; memory is the kept intervals (16 bytes each), not the events.
// INVALID_ARGUMENT when the trace has no ProfilerStep#N span (no step to divide by).
absl::StatusOr<RankFigures> AnalyseRankTraceFile(const std::string& path);
absl::StatusOr<RankFigures> AnalyseRankTraceText(std::string_view json,
                                                 const std::string& what = "trace");

// The bytes of one element of a profiler dtype name ("float", "Float", "c10::BFloat16",
// "Half", "long int", ...); nullopt when unknown.
std::optional<int64_t> DtypeBytes(std::string_view dtype);

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_ANALYSIS_RANK_TRACE_H_
