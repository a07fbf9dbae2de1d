// `libreyolo profile report`: one self-contained HTML page per profile, or per comparison.
//
// The numbers come from the readers' views (summary, phases, kernels, ops, compare), built from
// the same Profile as `summary --json`, so the page and the JSON never disagree; the timeline
// charts come from the trace (common/report/trace_timeline.h). Every number shown carries its
// exact value in a data-value attribute next to the key it has in `summary --json`.
#ifndef LIBREYOLO_COMMON_REPORT_REPORT_HTML_H_
#define LIBREYOLO_COMMON_REPORT_REPORT_HTML_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

#include "common/report/report_input.h"

namespace libreyolo {

// Section ids, top to bottom: verdict, summary, steps, gpu-timeline, kernels, ops, layers,
// memory, profiler.
std::string RenderReportHtml(const ReportInput& in);

// Section ids: significance, deltas, side-by-side (each side: verdict, summary, steps, kernels).
std::string RenderCompareReportHtml(const ReportInput& before, const ReportInput& after);

// The page for one input (a report) or two (a comparison), loaded from files with the readers'
// loader and errors (LoadReportInput); `labels` name them on the page (default: the paths).
// Folders of per-rank traces are read as `summary DIR/` reads them (ranks_report.h): one is the
// run's cross-rank page, two the runs' comparison; a folder beside a file is INVALID_ARGUMENT.
// The one path from files to a page: `libreyolo profile report`, `run`/`infer` and the daemon
// (which stores report.html with each job) all use it.
absl::StatusOr<std::string> RenderReportFiles(const std::vector<std::string>& paths,
                                              const std::vector<std::string>& labels);

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_REPORT_REPORT_HTML_H_
