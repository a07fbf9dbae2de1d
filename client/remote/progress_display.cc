#include "client/remote/progress_display.h"

#include <google/protobuf/util/json_util.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/render/terminal_text.h"

namespace libreyolo::cli {

std::string StateName(v1::JobState s) {
  switch (s) {
    case v1::JOB_STATE_QUEUED: return "queued";
    case v1::JOB_STATE_RUNNING: return "running";
    case v1::JOB_STATE_SUCCEEDED: return "succeeded";
    case v1::JOB_STATE_FAILED: return "failed";
    case v1::JOB_STATE_CANCELLED: return "cancelled";
    default: return "unknown";
  }
}

std::string EventJson(const v1::JobEvent& e) {
  std::string out;
  google::protobuf::util::JsonPrintOptions o;
  o.preserve_proto_field_names = true;
  o.always_print_primitive_fields = true;
  (void)google::protobuf::util::MessageToJsonString(e, &out, o);
  return out;
}

void ProgressDisplay::Show(const v1::JobEvent& e) {
  if (style_ == ProgressStyle::kJson) {
    err_ << EventJson(e) << "\n";
    err_.flush();
    return;
  }
  // Stages and messages come from the daemon: printed through TerminalSafe.
  const bool terminal = e.stage() == "failed" || e.stage() == "cancelled";
  const std::string message = quiet_terminal_ && terminal ? std::string() : e.message();
  std::string line = TerminalSafe(e.stage());
  if (e.stage() == "queued" && e.queue_position() > 0) {
    line = absl::StrCat("queued (position ", e.queue_position(), ")");
  }
  if (e.total() > 0) {
    line = absl::StrCat(line, " ", e.done(), "/", e.total());
  }
  if (style_ == ProgressStyle::kBar) {
    std::string bar;
    if (e.total() > 0) {
      const int width = 24;
      const auto filled = static_cast<int>(width * std::min<int64_t>(e.done(), e.total()) / e.total());
      bar = absl::StrCat(" [", std::string(static_cast<size_t>(filled), '#'),
                         std::string(static_cast<size_t>(width - filled), '.'), "]");
    }
    err_ << "\r\033[K" << absl::StrFormat("%-32s%s", line, bar);
    bar_open_ = true;
    if (!message.empty()) {
      err_ << "\n" << TerminalSafe(message, /*multiline=*/true) << "\n";
      bar_open_ = false;
    }
    err_.flush();
    return;
  }
  // Plain lines: one per stage, plus the final count of each stage and any message.
  const bool stage_change = e.stage() != last_stage_;
  const bool complete = e.total() > 0 && e.done() == e.total();
  if (stage_change || complete || !message.empty()) {
    err_ << line;
    if (!message.empty()) err_ << ": " << TerminalSafe(message, /*multiline=*/true);
    err_ << "\n";
    err_.flush();
  }
  last_stage_ = e.stage();
}

void ProgressDisplay::Finish() {
  if (bar_open_) err_ << "\n";
  bar_open_ = false;
  err_.flush();
}

}  // namespace libreyolo::cli
