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
  // Leave the message of a "failed"/"cancelled" event out of the plain display (the command
  // prints the job's error itself, once). JSON lines keep every event whole.
  void set_quiet_terminal_message(bool quiet) { quiet_terminal_ = quiet; }

 private:
  std::ostream& err_;
  ProgressStyle style_;
  std::string last_stage_;
  bool bar_open_ = false;
  bool quiet_terminal_ = false;
};

// One JSON object per event (the proto's JSON mapping, one line).
std::string EventJson(const v1::JobEvent& e);
std::string StateName(v1::JobState s);  // "queued", "running", ...

}  // namespace libreyolo::cli

#endif  // LIBREYOLO_CLIENT_REMOTE_PROGRESS_DISPLAY_H_
