#include "server/daemon/workers/python_process.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <string_view>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

extern char** environ;

namespace libreyolo::daemon {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// The daemon's environment with `set` ("NAME=value") over it, in the daemon's order.
std::vector<std::string> MergedEnvironment(const std::vector<std::string>& set) {
  std::map<std::string, std::string> overrides;
  for (const std::string& kv : set) overrides[kv.substr(0, kv.find('='))] = kv;
  std::vector<std::string> out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string kv(*e);
    const std::string name = kv.substr(0, kv.find('='));
    auto it = overrides.find(name);
    if (it == overrides.end()) {
      out.push_back(kv);
    } else {
      out.push_back(it->second);
      overrides.erase(it);
    }
  }
  for (const auto& [name, kv] : overrides) out.push_back(kv);
  return out;
}

std::vector<char*> Pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// posix_spawn in a new session, every signal default and unblocked (the daemon's threads block
// SIGTERM/SIGINT/SIGHUP for its signal thread; a child inheriting that would ignore the TERM).
absl::StatusOr<pid_t> Spawn(const ChildCommand& command, int out_fd) {
  std::vector<std::string> args = command.argv;
  std::vector<std::string> env = MergedEnvironment(command.env_set);
  std::vector<char*> argv = Pointers(args);
  std::vector<char*> envp = Pointers(env);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_fd, 1);
  posix_spawn_file_actions_adddup2(&actions, out_fd, 2);
  if (!command.cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, command.cwd.c_str());
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK |
                                      POSIX_SPAWN_SETSIGDEF);
  pid_t pid = 0;
  const int rc = ::posix_spawn(&pid, argv[0], &actions, &attr, argv.data(), envp.data());
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot start ", command.argv[0], ": ", std::strerror(rc)));
  }
  return pid;
}

// Splits a child's output into lines as it comes.
class LineSplitter {
 public:
  explicit LineSplitter(const std::function<void(const std::string&)>& on_line)
      : on_line_(on_line) {}
  void Feed(std::string_view bytes) {
    for (const char c : bytes) {
      if (c == '\n' || c == '\r') {
        Flush();
      } else if (line_.size() < kMaxLineBytes) {
        line_.push_back(c);
      }
    }
  }
  void Flush() {
    if (!line_.empty() && on_line_) on_line_(line_);
    line_.clear();
  }

 private:
  const std::function<void(const std::string&)>& on_line_;
  std::string line_;
};

// Reads what is there (waiting up to `wait`); false at end of file.
bool ReadSome(int fd, milliseconds wait, LineSplitter* lines) {
  pollfd p{fd, POLLIN, 0};
  const int n = ::poll(&p, 1, static_cast<int>(wait.count()));
  if (n <= 0) return true;  // timeout or EINTR: the caller looks at its clocks again
  char buf[8192];
  const ssize_t got = ::read(fd, buf, sizeof(buf));
  if (got > 0) {
    lines->Feed(std::string_view(buf, static_cast<size_t>(got)));
    return true;
  }
  return got < 0 && (errno == EINTR || errno == EAGAIN);
}

// Whether the leader has ended, leaving it unreaped (its pid, the group's id, stays taken).
bool LeaderEnded(pid_t pid) {
  siginfo_t info{};
  if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0) {
    return errno == ECHILD;
  }
  return info.si_pid == pid;
}

}  // namespace

std::vector<pid_t> ProcessGroupMembers(pid_t pgid) {
  std::vector<pid_t> out;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return out;
  while (const dirent* entry = ::readdir(proc)) {
    int pid = 0;
    if (!absl::SimpleAtoi(entry->d_name, &pid) || pid <= 0) continue;
    const int fd = ::open(absl::StrCat("/proc/", pid, "/stat").c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    char buf[512];
    const ssize_t got = ::read(fd, buf, sizeof(buf) - 1);
    ::close(fd);
    if (got <= 0) continue;
    // "pid (comm) S ppid pgrp ...": comm may hold spaces and ')', so fields follow the last ')'.
    const std::string_view stat(buf, static_cast<size_t>(got));
    const size_t paren = stat.rfind(')');
    if (paren == std::string_view::npos || paren + 2 >= stat.size()) continue;
    char state = 0;
    int ppid = 0, pgrp = 0;
    if (std::sscanf(std::string(stat.substr(paren + 2)).c_str(), "%c %d %d", &state, &ppid,
                    &pgrp) != 3) {
      continue;
    }
    // A zombie runs nothing: it waits for its parent (init, for an orphan) to reap it.
    if (pgrp == pgid && state != 'Z' && state != 'X') out.push_back(pid);
  }
  ::closedir(proc);
  return out;
}

absl::StatusOr<ChildEnd> RunChildGroup(const ChildCommand& command,
                                       const ChildSupervision& supervision,
                                       const engine::CancelToken& cancel,
                                       const std::function<void(const std::string&)>& on_line) {
  if (command.argv.empty()) return absl::InvalidArgumentError("no command to run");
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    return absl::UnavailableError(absl::StrCat("pipe: ", std::strerror(errno)));
  }
  absl::StatusOr<pid_t> spawned = Spawn(command, fds[1]);
  ::close(fds[1]);
  if (!spawned.ok()) {
    ::close(fds[0]);
    return spawned.status();
  }
  ChildEnd end;
  end.pid = *spawned;
  const Clock::time_point start = Clock::now();
  Clock::time_point last_line = start, term_at{};
  bool term_sent = false, kill_sent = false, open = true;
  const auto term = [&](bool* reason) {
    *reason = true;
    term_sent = true;
    term_at = Clock::now();
    ::kill(-end.pid, SIGTERM);
  };
  const std::function<void(const std::string&)> count = [&](const std::string& line) {
    last_line = Clock::now();
    if (on_line) on_line(line);
  };
  LineSplitter counted(count);
  while (!LeaderEnded(end.pid)) {
    const Clock::time_point now = Clock::now();
    if (!term_sent) {
      if (cancel.cancelled.load()) {
        term(&end.cancelled);
      } else if (supervision.wall_limit.count() > 0 && now - start >= supervision.wall_limit) {
        term(&end.wall_limit_reached);
      } else if (supervision.progress_timeout.count() > 0 &&
                 now - last_line >= supervision.progress_timeout) {
        term(&end.stalled);
      }
    } else if (!kill_sent && now - term_at >= supervision.cancel_grace) {
      end.killed_after_grace = kill_sent = true;
      ::kill(-end.pid, SIGKILL);
    }
    if (open) {
      open = ReadSome(fds[0], milliseconds(100), &counted);
    } else {
      std::this_thread::sleep_for(milliseconds(50));
    }
  }
  // The leader is gone (not yet reaped: the group's id stays its own): what it left in its group
  // (data-loader workers, subprocesses) goes with it.
  ::kill(-end.pid, SIGKILL);
  while (::waitpid(end.pid, &end.wait_status, 0) < 0 && errno == EINTR) {
  }
  const Clock::time_point drain_until = Clock::now() + std::chrono::seconds(2);
  while (open && Clock::now() < drain_until) open = ReadSome(fds[0], milliseconds(100), &counted);
  counted.Flush();
  ::close(fds[0]);
  // Killed members are reaped by their new parent; wait until /proc no longer lists them.
  const Clock::time_point gone_by = Clock::now() + std::chrono::seconds(5);
  for (;;) {
    end.survivors = ProcessGroupMembers(end.pid);
    if (end.survivors.empty() || Clock::now() >= gone_by) break;
    std::this_thread::sleep_for(milliseconds(50));
  }
  return end;
}

void BoundedLog::Add(const std::string& line) {
  if (tail_.empty() && head_.size() + line.size() + 1 <= head_max_) {
    absl::StrAppend(&head_, line, "\n");
    return;
  }
  absl::StrAppend(&tail_, line, "\n");
  if (tail_.size() <= tail_max_) return;
  size_t cut = tail_.size() - tail_max_;
  const size_t newline = tail_.find('\n', cut);
  if (newline != std::string::npos && newline + 1 < tail_.size()) cut = newline + 1;
  dropped_ += cut;
  tail_.erase(0, cut);
}

std::string BoundedLog::Text() const {
  if (dropped_ == 0) return head_ + tail_;
  return absl::StrCat(head_, "[... ", dropped_, " bytes of output left out ...]\n", tail_);
}

}  // namespace libreyolo::daemon
