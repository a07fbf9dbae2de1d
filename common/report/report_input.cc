#include "common/report/report_input.h"

#include "absl/strings/str_cat.h"
#include "common/load/load_profile.h"
#include "common/status/status_macros.h"
#include "common/trace/trace_reader.h"

namespace libreyolo {

absl::StatusOr<ReportInput> LoadReportInput(const std::string& input, const std::string& label,
                                            const ProfileLoader& load) {
  ASSIGN_OR_RETURN(auto p, LoadReaderInput(load, input));
  ReportInput r;
  r.label = label;
  r.profile = std::move(p);
  const std::optional<std::string> trace = ProfileTracePath(input, r.profile, &r.timeline_note);
  if (trace) {
    auto data = ReadTraceFile(*trace);
    if (data.ok()) {
      r.timeline = BuildTimeline(*data);
      r.layers = BuildModuleTable(*data).rows;  // the `modules` reader's table
      r.trace_path = *trace;
    } else {
      r.timeline_note =
          absl::StrCat("the trace ", *trace, " cannot be read: ", data.status().message());
    }
  }
  return r;
}

}  // namespace libreyolo
