#include "server/worker/fault_hook.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"

namespace libreyolo::worker {
namespace {

struct Fault {
  std::string action, stage;
  int64_t done = 0;
};

}  // namespace

FaultHook FaultHookFromEnvironment() {
  const char* spec = std::getenv("LIBREYOLO_WORKER_FAULT");
  if (spec == nullptr || *spec == '\0') return nullptr;
  std::vector<Fault> faults;
  for (const absl::string_view item : absl::StrSplit(spec, ',', absl::SkipEmpty())) {
    const std::vector<std::string> parts = absl::StrSplit(item, absl::MaxSplits('@', 1));
    if (parts.size() != 2) continue;
    const size_t colon = parts[1].rfind(':');
    Fault f;
    f.action = parts[0];
    f.stage = parts[1].substr(0, colon);
    if (colon == std::string::npos || !absl::SimpleAtoi(parts[1].substr(colon + 1), &f.done)) {
      continue;
    }
    faults.push_back(f);
  }
  const char* once = std::getenv("LIBREYOLO_WORKER_FAULT_ONCE");
  const std::string once_file = once == nullptr ? "" : once;
  return [faults, once_file](const JobProgress& p) {
    for (const Fault& f : faults) {
      if (p.stage != f.stage || p.done != f.done) continue;
      if (!once_file.empty()) {
        const int fd = ::open(once_file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0) return;  // acted before
        ::close(fd);
      }
      std::cerr << "libreyolod-worker: test fault " << f.action << " at " << f.stage << " "
                << f.done << std::endl;
      if (f.action == "segv") ::raise(SIGSEGV);
      if (f.action == "abort") std::abort();
      if (f.action == "exit") std::_Exit(7);
      if (f.action == "stop") ::raise(SIGSTOP);  // as `kill -STOP` would leave it
      if (f.action == "hang") {
        for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
      }
    }
  };
}

}  // namespace libreyolo::worker
