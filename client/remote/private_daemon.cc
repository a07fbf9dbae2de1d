#include "client/remote/private_daemon.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/io/unique_fd.h"
#include "common/status/exit_code.h"
#include "common/status/status_macros.h"

namespace libreyolo::cli {
namespace {

namespace fs = std::filesystem;

std::string EnvOr(const char* name, const std::string& def) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::string(v) : def;
}

bool Executable(const fs::path& p) {
  return ::access(p.c_str(), X_OK) == 0 && fs::is_regular_file(p);
}

// A daemon answers on the socket: GetDaemonInfo succeeds within a short deadline.
bool Answers(DaemonConnection& c) {
  auto ctx = c.Context(std::chrono::seconds(2));
  v1::DaemonInfo info;
  return c.stub().GetDaemonInfo(ctx.get(), v1::GetDaemonInfoRequest(), &info).ok();
}

std::string LogTail(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::string out;
  for (size_t i = lines.size() > 8 ? lines.size() - 8 : 0; i < lines.size(); ++i) {
    absl::StrAppend(&out, "\n  ", lines[i]);
  }
  return out;
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The process has ended: gone, or a zombie its parent has not reaped yet.
bool ProcessEnded(pid_t pid) {
  if (::kill(pid, 0) != 0 && errno == ESRCH) return true;
  const std::string stat = ReadText(absl::StrCat("/proc/", pid, "/stat"));
  const size_t paren = stat.rfind(')');
  return paren == std::string::npos || stat.size() < paren + 3 || stat[paren + 2] == 'Z' ||
         stat[paren + 2] == 'X';
}

// The pid in the pid file, when that process is a libreyolod started on demand on `paths`'s
// socket (its command line says so; a stale file or a reused pid names something else).
pid_t OnDemandDaemonPid(const PrivateDaemonPaths& paths) {
  int64_t pid = 0;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(ReadText(paths.pid_file)), &pid) || pid <= 0) {
    return -1;
  }
  const std::string cmdline = ReadText(absl::StrCat("/proc/", pid, "/cmdline"));
  const std::string socket = absl::StrCat(std::string(1, '\0'), "unix:", paths.socket,
                                          std::string(1, '\0'));
  const std::string leases = absl::StrCat(std::string("--lease-dir") + '\0', paths.leases);
  if (cmdline.find(socket) == std::string::npos || cmdline.find(leases) == std::string::npos) {
    return -1;
  }
  return ProcessEnded(static_cast<pid_t>(pid)) ? -1 : static_cast<pid_t>(pid);
}

std::string SignalName(int sig) {
  switch (sig) {
    case SIGKILL: return "SIGKILL";
    case SIGTERM: return "SIGTERM";
    case SIGSEGV: return "SIGSEGV";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGINT: return "SIGINT";
    default: return absl::StrCat("signal ", sig);
  }
}


// LIBREYOLO_DAEMON_STOP_WAIT_S: how long a command waits for a private daemon that is stopping
// (default kStopWaitDefaultS: a private daemon drains for at most 10 s, then its engine
// workers end).
constexpr int64_t kStopWaitDefaultS = 30;
absl::StatusOr<int64_t> StopWaitSeconds() {
  const std::string text = EnvOr("LIBREYOLO_DAEMON_STOP_WAIT_S", "");
  if (text.empty()) return kStopWaitDefaultS;
  int64_t s = 0;
  if (!absl::SimpleAtoi(text, &s) || s < 0 || s > 3600) {
    return absl::InvalidArgumentError(
        absl::StrCat("LIBREYOLO_DAEMON_STOP_WAIT_S=", text,
                     " is not a number of seconds in 0..3600; fix it or unset it (default ",
                     kStopWaitDefaultS, ")"));
  }
  return s;
}

// The process that holds `dir`/libreyolod.lock, libreyolod's lock on its state or store
// directory (server/daemon/store/dir_lock.h: an exclusive flock, the holder's pid written in
// the file): its pid (0 when the file names none), or nullopt while nobody holds it. Probed
// with a non-blocking shared flock that is dropped at once; the caller holds the lease
// directory's lock, so no other `libreyolo` command starts a daemon meanwhile.
std::optional<int64_t> DirLockHolder(const fs::path& dir) {
  const std::string path = (dir / "libreyolod.lock").string();
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd.valid()) return std::nullopt;
  if (::flock(fd.get(), LOCK_SH | LOCK_NB) == 0 || errno != EWOULDBLOCK) return std::nullopt;
  int64_t pid = 0;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(ReadText(path)), &pid)) pid = 0;
  return pid;
}

std::string PidText(int64_t pid) { return pid > 0 ? absl::StrCat(" (pid ", pid, ")") : ""; }

// Waits until no process holds the private daemon's state or store directory, or `deadline`.
// The first wait says so on `notes` (once per command: `*said`); past the deadline the error
// names the holder and the ways out.
absl::Status WaitForStoppingDaemon(const PrivateDaemonPaths& paths,
                                   std::chrono::steady_clock::time_point deadline,
                                   int64_t bound_s, std::ostream& notes, bool* said) {
  const fs::path root = paths.state_root;
  for (;;) {
    std::optional<int64_t> holder;
    fs::path held;
    for (const char* sub : {"state", "store"}) {
      holder = DirLockHolder(root / sub);
      if (holder) {
        held = root / sub;
        break;
      }
    }
    if (!holder) return absl::OkStatus();
    if (std::chrono::steady_clock::now() >= deadline) {
      return absl::UnavailableError(absl::StrCat(
          held.string(), " is still held by libreyolod", PidText(*holder), " after ", bound_s,
          " s, and nothing answers on ", paths.socket,
          ": a private daemon stuck stopping (kill it", PidText(*holder),
          "), or another libreyolod that uses this state directory (stop it, or set "
          "LIBREYOLO_STATE_DIR to another directory); LIBREYOLO_DAEMON_STOP_WAIT_S sets the "
          "wait"));
    }
    if (!*said) {
      notes << "libreyolo: waiting for libreyolod" << PidText(*holder)
            << " to stop: it still holds " << held.string() << " (at most " << bound_s << " s)"
            << std::endl;
      *said = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

// The command line of a private daemon started on demand.
std::vector<std::string> DaemonArgs(const PrivateDaemonPaths& paths, const std::string& binary,
                                    const std::string& address) {
  const fs::path state = paths.state_root;
  const std::string datasets =
      EnvOr("LIBREYOLO_DATASETS",
            (fs::path(EnvOr("HOME", ".")) / ".cache/libreyolo/datasets").string());
  std::vector<std::string> args = {
      binary,
      "--listen", address,
      "--state-dir", (state / "state").string(),
      "--store-dir", (state / "store").string(),
      "--models-dir", (state / "models").string(),
      "--datasets-dir", datasets,
      "--images-dir", (state / "images").string(),
      "--allow-local-paths",
      "--unix-socket-mode", "0600",
      "--drain-timeout", "10",
      // One CPU slot per core, at most 8: the ranks of `profile run --nproc N --device cpu`
      // (each slot's worker starts at its first job).
      "--cpu-slots", absl::StrCat(std::clamp<unsigned>(std::thread::hardware_concurrency(), 1, 8)),
      "--lease-dir", paths.leases,
      // `profile attach --env`: this user's Kineto socket directory, beside the daemon's socket.
      "--attach-dir", (fs::path(paths.runtime_dir) / "attach").string(),
  };
  for (const std::string& f : PrivateDaemonRetentionFlags()) args.push_back(f);
  return args;
}

}  // namespace

PrivateDaemonPaths PrivateDaemonPathsForUser() {
  PrivateDaemonPaths p;
  const std::string uid = absl::StrCat(::getuid());
  const std::string runtime = EnvOr("XDG_RUNTIME_DIR", "");
  p.runtime_dir = runtime.empty() ? absl::StrCat("/tmp/libreyolo-", uid)
                                  : (fs::path(runtime) / "libreyolo").string();
  p.socket = (fs::path(p.runtime_dir) / "libreyolod.sock").string();
  const std::string home = EnvOr("HOME", ".");
  const std::string xdg_state = EnvOr("XDG_STATE_HOME", (fs::path(home) / ".local/state").string());
  p.state_root = EnvOr("LIBREYOLO_STATE_DIR", (fs::path(xdg_state) / "libreyolo").string());
  p.log = (fs::path(p.state_root) / "libreyolod.log").string();
  p.leases = (fs::path(p.runtime_dir) / "leases").string();
  p.pid_file = (fs::path(p.runtime_dir) / "libreyolod.pid").string();
  return p;
}

std::vector<std::string> PrivateDaemonRetentionFlags() {
  return {"--retention-max-jobs", absl::StrCat(kPrivateRetentionMaxJobs),
          "--retention-max-age-hours", absl::StrCat(kPrivateRetentionMaxAgeHours)};
}

absl::StatusOr<std::string> FindDaemonBinary() {
  const std::string env = EnvOr("LIBREYOLOD", "");
  if (!env.empty()) {
    if (Executable(env)) return env;
    return absl::NotFoundError(absl::StrCat("LIBREYOLOD=", env,
                                            " is not an executable libreyolod (the daemon "
                                            "binary); fix the variable or unset it"));
  }
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  std::vector<fs::path> candidates;
  if (!ec) {
    candidates.push_back(self.parent_path() / "libreyolod");
    candidates.push_back(self.parent_path().parent_path() / "server/daemon/libreyolod");
  }
  for (const auto& dir : absl::StrSplit(EnvOr("PATH", "/usr/local/bin:/usr/bin"), ':')) {
    if (!dir.empty()) candidates.push_back(fs::path(std::string(dir)) / "libreyolod");
  }
  for (const fs::path& c : candidates) {
    if (Executable(c)) return c.string();
  }
  return absl::NotFoundError(
      "libreyolod (the daemon that runs profiling jobs) was not found next to libreyolo or on "
      "PATH; build it (bash scripts/build.sh), set LIBREYOLOD=/path/to/libreyolod, or use "
      "--remote HOST:PORT");
}

absl::StatusOr<std::unique_ptr<PrivateDaemon>> PrivateDaemon::Acquire(std::ostream& notes) {
  const PrivateDaemonPaths paths = PrivateDaemonPathsForUser();
  std::error_code ec;
  fs::create_directories(paths.runtime_dir, ec);
  ::chmod(paths.runtime_dir.c_str(), 0700);
  struct stat st {};
  if (::stat(paths.runtime_dir.c_str(), &st) != 0 || st.st_uid != ::getuid()) {
    return absl::PermissionDeniedError(absl::StrCat(
        paths.runtime_dir, " is not owned by you; set XDG_RUNTIME_DIR to a private directory"));
  }
  ASSIGN_OR_RETURN(auto stop_wait, StopWaitSeconds());
  auto d = std::unique_ptr<PrivateDaemon>(new PrivateDaemon());
  d->paths_ = paths;
  // Under the lease directory's lock until the daemon serves: a daemon stopping now (its last
  // command gone) finishes first, and two commands never start two daemons.
  ASSIGN_OR_RETURN(auto lock, LeaseDirLock::Acquire(paths.leases, std::chrono::seconds(120)));
  std::string command = ReadText("/proc/self/cmdline");
  std::replace(command.begin(), command.end(), '\0', ' ');
  ASSIGN_OR_RETURN(d->lease_, Lease::Take(paths.leases, command));
  RemoteTarget target;
  target.address = absl::StrCat("unix:", paths.socket);
  ASSIGN_OR_RETURN(d->connection_, DaemonConnection::Open(target));
  d->connection_->set_gone_probe([raw = d.get()] { return raw->GoneReason(); });
  if (fs::exists(paths.socket, ec) && Answers(*d->connection_)) {
    d->pid_ = OnDemandDaemonPid(paths);
    return d;
  }

  ASSIGN_OR_RETURN(auto binary, FindDaemonBinary());
  const fs::path state = paths.state_root;
  fs::create_directories(state, ec);
  if (ec) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot create ", state.string(), ": ", ec.message(),
                     " (set LIBREYOLO_STATE_DIR to a writable directory)"));
  }
  const std::vector<std::string> args = DaemonArgs(paths, binary, target.address);
  // A daemon that is stopping (nothing answers on the socket any more) keeps its state and
  // store directories locked while it drains its jobs: a fresh one started now would exit 3,
  // "state_dir ... in use". Wait for it (saying so once), then start; a start that still meets
  // the lock (it was taken in between) waits again, within the same bound.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(stop_wait);
  bool said = false;
  for (;;) {
    RETURN_IF_ERROR(WaitForStoppingDaemon(paths, deadline, stop_wait, notes, &said));
    absl::Status started = d->StartAndWait(args);
    if (started.ok()) return d;
    if (!absl::IsAlreadyExists(started) || std::chrono::steady_clock::now() >= deadline) {
      return started;
    }
  }
}

absl::Status PrivateDaemon::StartAndWait(const std::vector<std::string>& args) {
  pid_ = -1;
  child_ = false;
  wait_status_.reset();
  const pid_t pid = ::fork();
  if (pid < 0) return absl::InternalError("fork failed: cannot start libreyolod");
  if (pid == 0) {
    // The child: its own process group (a Ctrl-C in the terminal is for the client, which
    // decides what happens to the job), output to the log, cwd in the state directory. The
    // lock and the lease are close-on-exec: the daemon holds neither.
    ::setpgid(0, 0);
    const int log = ::open(paths_.log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    const int null = ::open("/dev/null", O_RDONLY);
    if (null >= 0) ::dup2(null, 0);
    if (log >= 0) {
      ::dup2(log, 1);
      ::dup2(log, 2);
    }
    if (::chdir(paths_.state_root.c_str()) != 0) _exit(126);
    std::vector<char*> argv;
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    _exit(127);
  }
  pid_ = pid;
  child_ = true;
  {
    std::ofstream pid_file(paths_.pid_file, std::ios::trunc);
    pid_file << pid << "\n";
  }
  std::error_code ec;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < until) {
    if (Ended()) {
      const bool in_use = wait_status_ && WIFEXITED(*wait_status_) &&
                          WEXITSTATUS(*wait_status_) == kDaemonExitInUse;
      pid_ = -1;
      child_ = false;
      // A daemon the user started at the same moment: use it.
      if (Answers(*connection_)) return absl::OkStatus();
      const std::string why =
          absl::StrCat("libreyolod exited at start (log ", paths_.log, "):", LogTail(paths_.log));
      return in_use ? absl::AlreadyExistsError(why) : absl::UnavailableError(why);
    }
    if (fs::exists(paths_.socket, ec) && Answers(*connection_)) return absl::OkStatus();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return absl::DeadlineExceededError(absl::StrCat(
      "libreyolod did not answer on ", paths_.socket, " within 60 s (log ", paths_.log, ")"));
}

bool PrivateDaemon::Ended() {
  if (pid_ <= 0) return false;
  if (!child_) return ProcessEnded(pid_);
  if (wait_status_) return true;
  int status = 0;
  if (::waitpid(pid_, &status, WNOHANG) != pid_) return false;
  wait_status_ = status;
  return true;
}

std::optional<std::string> PrivateDaemon::GoneReason() {
  if (!Ended()) return std::nullopt;
  std::string how = "is no longer running";
  if (wait_status_ && WIFSIGNALED(*wait_status_)) {
    how = absl::StrCat("was killed by ", SignalName(WTERMSIG(*wait_status_)));
  } else if (wait_status_ && WIFEXITED(*wait_status_)) {
    how = absl::StrCat("exited with code ", WEXITSTATUS(*wait_status_));
  }
  return absl::StrCat("the private libreyolod (pid ", pid_, ") ", how, " (log ", paths_.log, ")");
}

// Queued or running jobs of any command: a detached one, or that of a command that was killed.
// An unanswered question counts as none (the daemon is ours to stop either way).
bool PrivateDaemon::HasLiveJobs() {
  auto ctx = connection_->Context(std::chrono::seconds(5));
  v1::ListJobsRequest req;
  req.add_states(v1::JOB_STATE_QUEUED);
  req.add_states(v1::JOB_STATE_RUNNING);
  req.set_page_size(1);
  v1::ListJobsResponse resp;
  return connection_->stub().ListJobs(ctx.get(), req, &resp).ok() && resp.jobs_size() > 0;
}

void PrivateDaemon::Stop() {
  ::kill(pid_, SIGTERM);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < until) {
    if (Ended()) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(pid_, SIGKILL);
  if (child_) {
    int status = 0;
    ::waitpid(pid_, &status, 0);
  }
}

PrivateDaemon::~PrivateDaemon() {
  lease_.Release();
  if (pid_ <= 0) return;  // the user's own daemon: left running
  // The last command out stops the daemon; a daemon with a job left stops itself after it.
  auto lock = LeaseDirLock::Acquire(paths_.leases, std::chrono::seconds(30));
  if (lock.ok() && !Ended() && CountLiveLeases(paths_.leases) == 0 && !HasLiveJobs()) {
    connection_.reset();
    Stop();
  }
  if (Ended()) {
    std::error_code ignored;
    if (OnDemandDaemonPid(paths_) <= 0) fs::remove(paths_.pid_file, ignored);
  }
}

}  // namespace libreyolo::cli
