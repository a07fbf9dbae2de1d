// The report's last section: the profiler's own record of how the profile was taken (switches,
// measured overhead, collector, notes), the tool and its versions, and the trace's parse
// statistics.
#ifndef LIBREYOLO_COMMON_REPORT_PROFILER_RECORD_H_
#define LIBREYOLO_COMMON_REPORT_PROFILER_RECORD_H_

#include <string>

#include "common/report/report_input.h"

namespace libreyolo {

// A <dl> per group, every key and value escaped; nested JSON values are shown compactly.
std::string ProfilerRecord(const ReportInput& in);

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_REPORT_PROFILER_RECORD_H_
