#include "server/daemon/workers/engine_worker.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status/status_macros.h"
#include "server/worker/worker_protocol.h"

extern char** environ;

namespace libreyolo::daemon {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// Whether `pid` is stopped by a signal (SIGSTOP, SIGTSTP) or a debugger: state T or t in
// /proc/<pid>/stat ("pid (comm) S ..."; comm may hold spaces and parentheses, so the state
// follows the last ')').
bool ProcessStopped(pid_t pid) {
  const int fd = ::open(absl::StrCat("/proc/", pid, "/stat").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[512];
  const ssize_t got = ::read(fd, buf, sizeof(buf));
  ::close(fd);
  if (got <= 0) return false;
  const std::string_view stat(buf, static_cast<size_t>(got));
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos || paren + 2 >= stat.size()) return false;
  const char state = stat[paren + 2];
  return state == 'T' || state == 't';
}

// The fd number the worker finds its end of the socketpair on.
constexpr int kWorkerFd = 3;

// "30", "0.5": a supervision deadline in seconds, as the messages give it.
std::string Seconds(milliseconds d) {
  if (d.count() % 1000 == 0) return absl::StrCat(d.count() / 1000);
  return absl::StrCat(static_cast<double>(d.count()) / 1000.0);
}

// Waits up to `timeout` for `fd` to be readable (or closed). False on timeout.
bool WaitReadable(int fd, milliseconds timeout) {
  pollfd p{fd, POLLIN, 0};
  for (;;) {
    const int n = ::poll(&p, 1, static_cast<int>(timeout.count()));
    if (n < 0 && errno == EINTR) continue;
    return n != 0;
  }
}

}  // namespace

std::string DescribeWaitStatus(int status) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const char* name = ::strsignal(sig);
    return absl::StrCat("killed by signal ", sig, " (", name != nullptr ? name : "?", ")",
                        WCOREDUMP(status) ? ", core dumped" : "");
  }
  if (WIFEXITED(status)) return absl::StrCat("exited with code ", WEXITSTATUS(status));
  return absl::StrCat("ended with wait status ", status);
}

absl::StatusOr<std::string> FindWorkerExecutable(const std::string& configured,
                                                 const std::string& daemon_binary,
                                                 const std::string& name) {
  if (!configured.empty()) {
    // A directory passes access(X_OK) and failed later at spawn, exit 1 (issue 40 A.10).
    struct stat st {};
    if (::stat(configured.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "worker_binary ", configured, " is ", S_ISDIR(st.st_mode) ? "a directory" : "not a file",
          ": point it at the libreyolod-worker executable, or unset it to use the one beside "
          "libreyolod"));
    }
    if (::access(configured.c_str(), X_OK) == 0) return configured;
    return absl::NotFoundError(absl::StrCat("worker_binary ", configured,
                                            " is not an executable file (", std::strerror(errno),
                                            "): point it at libreyolod-worker, or unset it to use "
                                            "the one beside libreyolod"));
  }
  const std::filesystem::path dir = std::filesystem::path(daemon_binary).parent_path();
  const std::filesystem::path candidates[] = {dir / name, dir.parent_path() / "worker" / name};
  for (const std::filesystem::path& c : candidates) {
    if (::access(c.c_str(), X_OK) == 0) return c.string();
  }
  return absl::NotFoundError(absl::StrCat(
      "the engine worker executable ", name, " was not found (looked for ",
      candidates[0].string(), " and ", candidates[1].string(),
      "): install it beside libreyolod (docs/deploy.md), or set worker_binary (--worker-binary)"));
}

absl::StatusOr<std::unique_ptr<EngineWorker>> EngineWorker::Start(
    const std::string& executable, const std::string& device, milliseconds hello_timeout,
    const std::vector<std::string>& extra_args) {
  ASSIGN_OR_RETURN(std::unique_ptr<EngineWorker> w, Spawn(executable, device, extra_args));
  RETURN_IF_ERROR(w->AwaitHello(hello_timeout));
  return w;
}

absl::StatusOr<std::unique_ptr<EngineWorker>> EngineWorker::Spawn(
    const std::string& executable, const std::string& device,
    const std::vector<std::string>& extra_args) {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    return absl::UnavailableError(
        absl::StrCat("engine worker for ", device, ": socketpair: ", std::strerror(errno)));
  }
  std::vector<std::string> args = {executable, "--fd",     std::to_string(kWorkerFd),
                                   "--device", device,     "--parent",
                                   std::to_string(::getpid())};
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  // dup2 onto fd 3 clears close-on-exec there (glibc also when sv[1] is 3 already); every other
  // descriptor of the daemon (listeners, other workers' sockets, the store's locks) is CLOEXEC.
  posix_spawn_file_actions_adddup2(&actions, sv[1], kWorkerFd);
  pid_t pid = 0;
  const int rc = ::posix_spawn(&pid, executable.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(sv[1]);
  if (rc != 0) {
    ::close(sv[0]);
    return absl::UnavailableError(absl::StrCat("engine worker for ", device, ": cannot start ",
                                               executable, ": ", std::strerror(rc)));
  }
  return std::unique_ptr<EngineWorker>(new EngineWorker(pid, sv[0], device));
}

absl::Status EngineWorker::AwaitHello(milliseconds timeout) {
  const pid_t pid = pid_;
  if (!WaitReadable(fd_, timeout)) {
    const std::string how = Reap(milliseconds(0));
    return absl::UnavailableError(absl::StrCat("engine worker for ", device_, " (pid ", pid,
                                               ") said nothing within ", timeout.count() / 1000,
                                               " s and was ", how));
  }
  wv1::WorkerToDaemon msg;
  absl::StatusOr<bool> got = worker::ReadFrame(fd_, &msg);
  if (!got.ok() || !*got || !msg.has_hello()) {
    const std::string how = Reap(milliseconds(5000));
    return absl::UnavailableError(absl::StrCat(
        "engine worker for ", device_, " (pid ", pid, ") ", how, " before it was ready",
        got.ok() ? "" : absl::StrCat(" (", got.status().message(), ")"),
        "; its messages are in the daemon's log"));
  }
  hello_ = msg.hello();
  return absl::OkStatus();
}

EngineWorker::~EngineWorker() { Stop(milliseconds(5000)); }

std::string EngineWorker::LastStage() const {
  if (last_progress_.stage.empty()) return "before its first step";
  if (last_progress_.total > 0) {
    return absl::StrCat("during ", last_progress_.stage, ", step ", last_progress_.done, "/",
                        last_progress_.total);
  }
  return absl::StrCat("during ", last_progress_.stage);
}

std::string EngineWorker::Reap(milliseconds grace) {
  if (pid_ <= 0) return "had already ended";
  int status = 0;
  const auto deadline = Clock::now() + grace;
  pid_t r = 0;
  while ((r = ::waitpid(pid_, &status, WNOHANG)) == 0 && Clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(20));
  }
  if (r == 0) {
    ::kill(pid_, SIGKILL);
    while ((r = ::waitpid(pid_, &status, 0)) < 0 && errno == EINTR) {
    }
  }
  pid_ = 0;
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (r < 0) return "ended (its status could not be read)";
  return DescribeWaitStatus(status);
}

std::string EngineWorker::CheckIdle() {
  if (pid_ <= 0) return "had already ended";
  int status = 0;
  pid_t r = 0;
  while ((r = ::waitpid(pid_, &status, WNOHANG)) < 0 && errno == EINTR) {
  }
  if (r == pid_) {
    pid_ = 0;
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    return absl::StrCat("died while idle: ", DescribeWaitStatus(status));
  }
  if (ProcessStopped(pid_)) {
    ::kill(pid_, SIGKILL);
    (void)Reap(milliseconds(0));
    return "was stopped while idle (state T: SIGSTOP or a debugger) and was killed";
  }
  // An idle worker sends nothing: a readable channel is its end (EOF) or a protocol breach.
  pollfd p{fd_, POLLIN | POLLRDHUP, 0};
  if (::poll(&p, 1, 0) > 0 && (p.revents & (POLLIN | POLLHUP | POLLRDHUP | POLLERR)) != 0) {
    ::kill(pid_, SIGKILL);
    return absl::StrCat("closed its channel while idle (", Reap(milliseconds(1000)), ")");
  }
  return "";
}

void EngineWorker::Stop(milliseconds grace) {
  if (pid_ <= 0) return;
  wv1::DaemonToWorker stop;
  stop.mutable_stop();
  (void)worker::WriteFrame(fd_, stop);
  ::shutdown(fd_, SHUT_WR);  // and the end of the stream, for a worker busy elsewhere
  (void)Reap(grace);
}

EngineWorker::JobEnd EngineWorker::RunJob(const v1::Job& resolved_job,
                                          const std::string& project_dir,
                                          const ProgressFn& progress,
                                          const engine::CancelToken& cancel,
                                          const Supervision& supervision,
                                          const wv1::RankPlacement& rank) {
  JobEnd end;
  last_progress_ = JobProgress{};
  if (pid_ <= 0) {
    end.death = "had already ended";
    return end;
  }
  wv1::DaemonToWorker run;
  *run.mutable_run()->mutable_job() = resolved_job;
  run.mutable_run()->set_project_dir(project_dir);
  run.mutable_run()->set_max_decoded_pixels(supervision.max_decoded_pixels);
  if (rank.world_size() >= 1) *run.mutable_run()->mutable_rank() = rank;  // a gang, even of one
  if (!worker::WriteFrame(fd_, run).ok()) {
    end.death = Reap(milliseconds(5000));
    return end;
  }
  std::optional<Clock::time_point> cancel_sent;
  const Clock::time_point started = Clock::now();
  Clock::time_point last_heard = started;
  // SIGKILL works on a stopped process too (SIGSTOP, a debugger): the job's end never waits for
  // the worker to be continued.
  // A worker found stopped when it is killed is said to be (a data-parallel job's peers wait
  // for it in a collective: GangCauseRank takes the stopped one as the cause).
  auto kill_now = [&](std::string why) {
    end.stopped = ProcessStopped(pid_);
    ::kill(pid_, SIGKILL);
    (void)Reap(milliseconds(0));
    end.death = end.stopped ? absl::StrCat(why, "; it was stopped by a signal (SIGSTOP, "
                                                "SIGTSTP) or a debugger")
                            : std::move(why);
    return end;
  };
  for (;;) {
    if (cancel.cancelled.load() && !cancel_sent) {
      wv1::DaemonToWorker c;
      c.mutable_cancel()->set_job_id(resolved_job.id());
      (void)worker::WriteFrame(fd_, c);
      cancel_sent = Clock::now();
    }
    const Clock::time_point now = Clock::now();
    if (cancel_sent && now - *cancel_sent > supervision.cancel_grace) {
      end.cancelled_by_kill = true;
      return kill_now(absl::StrCat("killed after not stopping within ",
                                   Seconds(supervision.cancel_grace), " s of the cancel"));
    }
    if (now - started >= supervision.wall_limit) {
      end.wall_limit_reached = true;
      return kill_now(absl::StrCat("killed: the job's wall-time limit of ",
                                   Seconds(supervision.wall_limit), " s was reached ",
                                   LastStage()));
    }
    if (now - last_heard >= supervision.progress_timeout) {
      end.stalled = true;
      return kill_now(absl::StrCat("killed: no progress for ",
                                   Seconds(supervision.progress_timeout), " s ", LastStage()));
    }
    if (!WaitReadable(fd_, milliseconds(100))) continue;
    wv1::WorkerToDaemon msg;
    absl::StatusOr<bool> got = worker::ReadFrame(fd_, &msg);
    if (!got.ok() || !*got) {
      end.death = Reap(milliseconds(5000));
      return end;
    }
    last_heard = Clock::now();
    if (msg.has_progress()) {
      last_progress_ = worker::ProgressFromWire(msg.progress());
      if (progress) progress(last_progress_);
    } else if (msg.has_done()) {
      end.done = msg.done();
      if (end.done->context_lost()) end.death = Reap(milliseconds(10000));
      return end;
    }
  }
}

}  // namespace libreyolo::daemon
