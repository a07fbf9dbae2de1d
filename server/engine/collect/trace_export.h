// Turns collected events into profile_trace.json (Kineto's layout, so Perfetto, chrome://tracing
// and our own analyser read it): CPU ops and ranges on their threads, kernels on per-stream
// tracks of the device's process, launch -> kernel flows, [memory] instants with running totals:
// "Total Allocated" sums the tensor allocations of each device, "Total Reserved" the
// cudaMalloc/cudaFree records CUPTI reports (CollectedEvent::reservation), else the high-water
// mark of Total Allocated.
#ifndef LIBREYOLO_SERVER_ENGINE_COLLECT_TRACE_EXPORT_H_
#define LIBREYOLO_SERVER_ENGINE_COLLECT_TRACE_EXPORT_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/trace/trace_data.h"
#include "common/trace/trace_sink.h"
#include "server/engine/collect/collected_trace.h"

namespace libreyolo::engine {

struct TraceExportOptions {
  int64_t pid = 0;                 // the CPU process id written for host events
  std::string process_name = "libreyolod";
  // Baselines for the [memory] running totals (the device ones apply to each device; a job
  // uses one).
  int64_t cpu_allocated_at_start = 0;
  int64_t device_allocated_at_start = 0;
  int64_t device_reserved_at_start = 0;
  std::string extra_members_json;  // e.g. "\"libreyolo\": {...}" provenance
  std::string trace_name;  // the header's traceName; empty: the file name of `path`
  // distributedInfo (Kineto's, which HTA and Perfetto read): a profiling job is one process
  // of one unless it is a rank of a data-parallel run; backend empty: not written.
  int64_t rank = 0;
  int64_t world_size = 1;
  std::string backend;
};

// Emits the trace's events to `sink` in the order a trace file holds them (track metadata, the
// profiler span, flows, then every event by start time).
void EmitTraceEvents(const CollectedTrace& trace, const TraceExportOptions& options,
                     TraceSink& sink);

// Writes the trace to `path` (not atomically: job_files.h renames into place).
absl::Status ExportChromeTrace(const CollectedTrace& trace, const std::string& path,
                               const TraceExportOptions& options);

// Writes the trace to `path` and returns, from the same pass, the analyser's in-memory form of
// the events written: what ReadTraceFile(path) would return (trace_data_builder.h).
absl::StatusOr<TraceData> ExportChromeTraceAndData(const CollectedTrace& trace,
                                                   const std::string& path,
                                                   const TraceExportOptions& options);

}  // namespace libreyolo::engine

#endif  // LIBREYOLO_SERVER_ENGINE_COLLECT_TRACE_EXPORT_H_
