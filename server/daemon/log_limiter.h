// Repeated log lines, limited (issue 23 item 2): under a connection flood that exhausts the
// descriptors, gRPC logs "accept: Too many open files" once per attempt, thousands a second,
// burying everything else. gRPC's log lines reach the daemon's log through this: a call site
// (file:line) prints at most once per window, and the next line it prints says how many were
// held back ("... (1523 more like this in the last 10 s)"). Torch-free, gRPC-free.
#ifndef LIBREYOLO_SERVER_DAEMON_LOG_LIMITER_H_
#define LIBREYOLO_SERVER_DAEMON_LOG_LIMITER_H_

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"

namespace libreyolo::daemon {

class LogLimiter {
 public:
  explicit LogLimiter(absl::Duration window = absl::Seconds(10)) : window_(window) {}

  // The line to print for `message` from call site `site` at `now`, or nullopt when it is held
  // back. Thread-safe. Sites are few (gRPC's call sites), so the table stays small.
  std::optional<std::string> Admit(const std::string& site, const std::string& message,
                                   absl::Time now);

 private:
  struct Site {
    absl::Time last_printed = absl::InfinitePast();
    int64_t held = 0;
  };
  const absl::Duration window_;
  std::mutex mu_;
  std::map<std::string, Site> sites_ ABSL_GUARDED_BY(mu_);
};

// Sends gRPC's own log lines (severity ERROR and INFO as gRPC chooses) through one process-wide
// LogLimiter to stderr as "libreyolod: grpc E tcp_server_posix.cc:412] <message>".
void InstallGrpcLogLimiter();

}  // namespace libreyolo::daemon

#endif  // LIBREYOLO_SERVER_DAEMON_LOG_LIMITER_H_
