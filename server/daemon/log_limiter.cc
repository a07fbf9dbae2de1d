#include "server/daemon/log_limiter.h"

#include <grpc/support/log.h>

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace libreyolo::daemon {

std::optional<std::string> LogLimiter::Admit(const std::string& site, const std::string& message,
                                             absl::Time now) {
  std::lock_guard<std::mutex> lock(mu_);
  Site& s = sites_[site];
  if (now - s.last_printed < window_) {
    ++s.held;
    return std::nullopt;
  }
  std::string line = message;
  if (s.held > 0) {
    absl::StrAppend(&line, " (", s.held, " more like this in the last ",
                    absl::FormatDuration(window_), ")");
  }
  s.last_printed = now;
  s.held = 0;
  return line;
}

namespace {

LogLimiter& GrpcLimiter() {
  static LogLimiter* limiter = new LogLimiter();  // never destroyed: gRPC may log during exit
  return *limiter;
}

void LimitedGrpcLog(gpr_log_func_args* args) {
  const char* file = args->file != nullptr ? args->file : "?";
  const char* base = file;
  for (const char* p = file; *p != '\0'; ++p) {
    if (*p == '/') base = p + 1;
  }
  const std::string site = absl::StrCat(base, ":", args->line);
  std::optional<std::string> line =
      GrpcLimiter().Admit(site, args->message != nullptr ? args->message : "", absl::Now());
  if (!line) return;
  const char level = args->severity == GPR_LOG_SEVERITY_ERROR  ? 'E'
                     : args->severity == GPR_LOG_SEVERITY_INFO ? 'I'
                                                               : 'D';
  std::fprintf(stderr, "libreyolod: grpc %c %s] %s\n", level, site.c_str(), line->c_str());
}

}  // namespace

void InstallGrpcLogLimiter() { gpr_set_log_function(LimitedGrpcLog); }

}  // namespace libreyolo::daemon
