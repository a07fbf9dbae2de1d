// One rank's trace of a distributed run, reduced to the figures the cross-rank analysis needs
// (docs/metrics.md, "Cross-rank analysis"): one streaming pass that keeps intervals, not events.
#ifndef LIBREYOLO_COMMON_ANALYSIS_RANK_TRACE_H_
#define LIBREYOLO_COMMON_ANALYSIS_RANK_TRACE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "common/analysis/intervals.h"

namespace libreyolo {

// The trace's `distributedInfo` (torch.profiler writes it for every rank of an initialised
// process group): absent fields stay -1 / empty.
struct DistributedInfo {
  std::string backend;  // "nccl", "gloo", ...
  int64_t rank = -1;
  int64_t world_size = -1;
};

// Per-step figures of one rank, over its ProfilerStep#N window (the union of its steps); or,
// for a trace without steps (Kineto's on-demand trace), per window: over the one window the
// caller gives (the span every rank's trace covers), `windowed` set.
struct RankFigures {
  std::string path;
  DistributedInfo info;
  bool windowed = false;       // figures per window, not per step (steps 0)
  int64_t steps = 0;           // ProfilerStep#N spans (distinct N); 0 when windowed
  double step_ms = 0;          // mean ProfilerStep duration; the window's length when windowed
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
  // starts: the per-step waits of the cross-rank analysis. Empty when windowed.
  std::vector<std::pair<int64_t, double>> comm_ms_by_step;
  // Each of those steps' span (ns, the rank's own clock), in the same order: the clock check of
  // the cross-rank analysis (cross_rank.h, clocks_consistent).
  std::vector<Interval> step_spans;
};

// One streaming pass's kept intervals of one rank's trace (move-only): read once, reduced to
// figures per step (RankFiguresOf) or, once every rank's recorded span is known, per window
// (RankWindowFiguresOf).
struct RankTraceIntervals;  // rank_trace.cc
class RankTraceRead {
 public:
  RankTraceRead();
  ~RankTraceRead();
  RankTraceRead(RankTraceRead&&) noexcept;
  RankTraceRead& operator=(RankTraceRead&&) noexcept;

  const DistributedInfo& info() const;
  int64_t steps() const;  // distinct ProfilerStep#N spans
  // The span the profiler recorded: its "PyTorch Profiler (N)" span (Kineto's category
  // "Trace"), else the first kept event's start to the last one's end; nullopt with neither.
  std::optional<Interval> recorded() const;
  // The backend its collective spans name ("gloo" of gloo:all_reduce); "" without any.
  const std::string& collective_backend() const;

 private:
  friend absl::StatusOr<RankTraceRead> ReadRankTraceFile(const std::string& path);
  friend absl::StatusOr<RankTraceRead> ReadRankTraceText(std::string_view json,
                                                         const std::string& what);
  friend absl::StatusOr<RankFigures> RankFiguresOf(RankTraceRead read, const std::string& what);
  friend absl::StatusOr<RankFigures> RankWindowFiguresOf(RankTraceRead read,
                                                         const std::string& what,
                                                         const Interval& window);
  std::unique_ptr<RankTraceIntervals> c_;
};

// The pass alone (errors as AnalyseRankTraceFile's, without the one about steps).
absl::StatusOr<RankTraceRead> ReadRankTraceFile(const std::string& path);
absl::StatusOr<RankTraceRead> ReadRankTraceText(std::string_view json,
                                                const std::string& what = "trace");
// Per step: INVALID_ARGUMENT when the trace has no ProfilerStep#N span (no step to divide by).
absl::StatusOr<RankFigures> RankFiguresOf(RankTraceRead read, const std::string& what);
// Per window: every interval cut to `window` (ns, the trace's clock), figures of that one
// window whatever steps the trace marks. INVALID_ARGUMENT when the window is empty.
absl::StatusOr<RankFigures> RankWindowFiguresOf(RankTraceRead read, const std::string& what,
                                                const Interval& window);

// Reads the trace's distributedInfo, stopping as soon as it has been read (torch writes it
// before traceEvents), so a folder is sorted by rank without parsing every event. An absent
// distributedInfo leaves every field unset. Errors as ReadTraceFile's (NOT_FOUND, DATA_LOSS,
// INVALID_ARGUMENT).
absl::StatusOr<DistributedInfo> ReadDistributedInfo(const std::string& path);

// One pass over the trace, per step (ReadRankTraceFile, then RankFiguresOf); memory is the
// kept intervals (16 bytes each), not the events. INVALID_ARGUMENT when the trace has no
// ProfilerStep#N span (no step to divide by).
absl::StatusOr<RankFigures> AnalyseRankTraceFile(const std::string& path);
absl::StatusOr<RankFigures> AnalyseRankTraceText(std::string_view json,
                                                 const std::string& what = "trace");

// The bytes of one element of a profiler dtype name ("float", "Float", "c10::BFloat16",
// "Half", "long int", ...); nullopt when unknown.
std::optional<int64_t> DtypeBytes(std::string_view dtype);

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_ANALYSIS_RANK_TRACE_H_
