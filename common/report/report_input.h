// What one side of an HTML report is drawn from: the profile as the readers load it (same
// numbers as `summary --json`) and, where the trace is at hand, its timeline.
#ifndef LIBREYOLO_COMMON_REPORT_REPORT_INPUT_H_
#define LIBREYOLO_COMMON_REPORT_REPORT_INPUT_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/analysis/module_table.h"
#include "common/profile/profile.h"
#include "common/readers/run_reader.h"
#include "common/report/trace_timeline.h"

namespace libreyolo {

struct ReportInput {
  std::string label;  // what the user named: a path or job:<id>
  Profile profile;
  std::optional<TraceTimeline> timeline;
  std::vector<ModuleRow> layers;  // BuildModuleTable of the trace; empty without module scopes
  std::string trace_path;        // the trace the timeline was drawn from
  std::string timeline_note;     // why there is no timeline (shown in the n/a charts)
};

// Loads `input` through `load` with the readers' errors (LoadReaderInput: exit 2 for a missing
// input, 1 for one that cannot be analysed), then the trace for the timeline: the input itself
// when it is a trace, else the profile's "trace" (absolute, relative to the profile's folder,
// its file name in that folder, or relative to the working directory). A trace that is missing
// or unreadable is not an error: the timeline charts say why they are n/a.
absl::StatusOr<ReportInput> LoadReportInput(const std::string& input, const std::string& label,
                                            const ProfileLoader& load);

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_REPORT_REPORT_INPUT_H_
