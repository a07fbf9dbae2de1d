// Shows a job's progress events: a live bar on a terminal, one plain line per stage when piped,
// or JSON lines (--json). Everything goes to stderr; stdout is kept for the result.
#ifndef LIBREYOLO_CLIENT_REMOTE_PROGRESS_DISPLAY_H_
#define LIBREYOLO_CLIENT_REMOTE_PROGRESS_DISPLAY_H_

#include <ostream>
#include <string>

#include "libreyolo/profiler/v1/profiler.pb.h"

namespace libreyolo::cli {

namespace v1 = ::libreyolo::profiler::v1;

enum class ProgressStyle { kBar, kLines, kJson };

class ProgressDisplay {
 public:
  ProgressDisplay(std::ostream& err, ProgressStyle style) : err_(err), style_(style) {}
  void Show(const v1::JobEvent& e);
  void Finish();  // ends a bar line

 private:
  std::ostream& err_;
  ProgressStyle style_;
  std::string last_stage_;
  bool bar_open_ = false;
};

// One JSON object per event (the proto's JSON mapping, one line).
std::string EventJson(const v1::JobEvent& e);
std::string StateName(v1::JobState s);  // "queued", "running", ...

}  // namespace libreyolo::cli

#endif  // LIBREYOLO_CLIENT_REMOTE_PROGRESS_DISPLAY_H_
