#include "client/remote/private_daemon.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

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
  return p;
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

absl::StatusOr<std::unique_ptr<PrivateDaemon>> PrivateDaemon::Acquire() {
  const PrivateDaemonPaths paths = PrivateDaemonPathsForUser();
  std::error_code ec;
  fs::create_directories(paths.runtime_dir, ec);
  ::chmod(paths.runtime_dir.c_str(), 0700);
  struct stat st {};
  if (::stat(paths.runtime_dir.c_str(), &st) != 0 || st.st_uid != ::getuid()) {
    return absl::PermissionDeniedError(absl::StrCat(
        paths.runtime_dir, " is not owned by you; set XDG_RUNTIME_DIR to a private directory"));
  }
  auto d = std::unique_ptr<PrivateDaemon>(new PrivateDaemon());
  RemoteTarget target;
  target.address = absl::StrCat("unix:", paths.socket);
  auto conn = DaemonConnection::Open(target);
  if (!conn.ok()) return conn.status();
  d->connection_ = *std::move(conn);
  if (fs::exists(paths.socket, ec) && Answers(*d->connection_)) return d;

  auto binary = FindDaemonBinary();
  if (!binary.ok()) return binary.status();
  const fs::path state = paths.state_root;
  fs::create_directories(state, ec);
  if (ec) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot create ", state.string(), ": ", ec.message(),
                     " (set LIBREYOLO_STATE_DIR to a writable directory)"));
  }
  const std::string datasets =
      EnvOr("LIBREYOLO_DATASETS",
            (fs::path(EnvOr("HOME", ".")) / ".cache/libreyolo/datasets").string());
  std::vector<std::string> args = {
      *binary,
      "--listen", target.address,
      "--state-dir", (state / "state").string(),
      "--store-dir", (state / "store").string(),
      "--models-dir", (state / "models").string(),
      "--datasets-dir", datasets,
      "--images-dir", (state / "images").string(),
      "--allow-local-paths",
      "--unix-socket-mode", "0600",
      "--drain-timeout", "10",
  };
  const pid_t pid = ::fork();
  if (pid < 0) return absl::InternalError("fork failed: cannot start libreyolod");
  if (pid == 0) {
    // The child: its own process group (a Ctrl-C in the terminal is for the client, which
    // decides what happens to the job), output to the log, cwd in the state directory.
    ::setpgid(0, 0);
    const int log = ::open(paths.log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    const int null = ::open("/dev/null", O_RDONLY);
    if (null >= 0) ::dup2(null, 0);
    if (log >= 0) {
      ::dup2(log, 1);
      ::dup2(log, 2);
    }
    if (::chdir(state.c_str()) != 0) _exit(126);
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    _exit(127);
  }
  d->pid_ = pid;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < until) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      d->pid_ = -1;
      // Another client may have started one at the same moment: use it.
      if (Answers(*d->connection_)) return d;
      return absl::UnavailableError(absl::StrCat("libreyolod exited at start (log ", paths.log,
                                                 "):", LogTail(paths.log)));
    }
    if (fs::exists(paths.socket, ec) && Answers(*d->connection_)) return d;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return absl::DeadlineExceededError(absl::StrCat(
      "libreyolod did not answer on ", paths.socket, " within 60 s (log ", paths.log, ")"));
}

PrivateDaemon::~PrivateDaemon() {
  if (pid_ <= 0) return;
  connection_.reset();
  ::kill(pid_, SIGTERM);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  int status = 0;
  while (std::chrono::steady_clock::now() < until) {
    if (::waitpid(pid_, &status, WNOHANG) == pid_) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, &status, 0);
}

}  // namespace libreyolo::cli
