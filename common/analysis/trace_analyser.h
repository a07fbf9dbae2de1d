// The Chrome-trace analyser: a pure function from trace events to a Profile.
#ifndef LIBREYOLO_COMMON_ANALYSIS_TRACE_ANALYSER_H_
#define LIBREYOLO_COMMON_ANALYSIS_TRACE_ANALYSER_H_

#include <string>

#include "absl/status/statusor.h"
#include "common/profile/profile.h"
#include "common/trace/trace_data.h"

namespace libreyolo {

// Computes every metric of docs/metrics.md over the trace's step window. Takes the trace by
// value so that out-of-window events can be dropped in place (callers std::move it in).
Profile AnalyseTrace(TraceData trace);

// Reads and analyses a Chrome trace file (.json or .json.gz).
absl::StatusOr<Profile> AnalyseTraceFile(const std::string& path);

// The phase a phase-span name stands for ("step/forward" -> "forward"); empty when none.
std::string PhaseOfSpanName(const std::string& name);

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_ANALYSIS_TRACE_ANALYSER_H_
