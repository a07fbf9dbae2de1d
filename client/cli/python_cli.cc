#include "client/cli/python_cli.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "client/cli/exit_codes.h"
#include "client/cli/suggest.h"
#include "common/render/terminal_text.h"
#include "common/status/status_macros.h"

extern char** environ;

namespace libreyolo::cli {
namespace {

constexpr size_t kMaxHandoffChain = 16;
constexpr auto kVersionTimeout = std::chrono::seconds(30);

struct FileId {
  dev_t dev;
  ino_t ino;
  bool operator==(const FileId& o) const { return dev == o.dev && ino == o.ino; }
};

std::optional<FileId> IdOf(const std::string& path) {
  struct stat st {};
  if (path.empty() || ::stat(path.c_str(), &st) != 0) return std::nullopt;
  return FileId{st.st_dev, st.st_ino};
}

bool IsExecutableFile(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

std::string Getenv(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? "" : v;
}

// This binary or a copy of it already passed through.
bool IsOurs(const PythonCliSearch& s, const std::string& path) {
  const std::optional<FileId> id = IdOf(path);
  if (!id) return false;
  if (IdOf(s.self) == id) return true;
  for (const std::string& p : s.skip) {
    if (IdOf(p) == id) return true;
  }
  return false;
}

// The environment of the handed-over process: ours, with `name`=`value` set.
std::vector<std::string> EnvironWith(const std::vector<std::pair<std::string, std::string>>& set) {
  std::vector<std::string> out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string entry(*e);
    bool replaced = false;
    for (const auto& [name, value] : set) replaced |= entry.rfind(name + "=", 0) == 0;
    if (!replaced) out.push_back(entry);
  }
  for (const auto& [name, value] : set) out.push_back(absl::StrCat(name, "=", value));
  return out;
}

std::vector<char*> Pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// $LIBREYOLO_HANDOFF_SKIP with this binary added.
std::string SkipWithSelf(const PythonCliSearch& s) {
  std::vector<std::string> skip = s.skip;
  skip.push_back(s.self);
  return absl::StrJoin(skip, ":");
}

absl::Status PythonCliNotFound() {
  return absl::NotFoundError(absl::StrCat(
      "the Python LibreYOLO is not installed: no other libreyolo on PATH and ", kPythonCliEnv,
      " is not set; ", kPythonCliInstallHint));
}

}  // namespace

bool IsOwnCommand(const std::vector<std::string>& args) {
  if (args.empty()) return true;
  const std::string& a = args[0];
  if (a == "--help" || a == "-h" || a == "--version" || a == "profile" || a == "jobs") {
    return true;
  }
  // `libreyolo profle`: ours, answered with "did you mean 'profile'?" (no Python LibreYOLO
  // command is this close to `profile` or `jobs`).
  return !a.empty() && a[0] != '-' && ClosestName(a, {"profile", "jobs"}).has_value();
}

PythonCliSearch CurrentPythonCliSearch() {
  PythonCliSearch s;
  s.override_path = Getenv(kPythonCliEnv);
  s.path_env = Getenv("PATH");
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n > 0) s.self.assign(buf, static_cast<size_t>(n));
  for (absl::string_view p : absl::StrSplit(Getenv(kHandoffSkipEnv), ':', absl::SkipEmpty())) {
    s.skip.emplace_back(p);
  }
  return s;
}

absl::StatusOr<std::string> FindPythonCli(const PythonCliSearch& s) {
  if (s.skip.size() >= kMaxHandoffChain) {
    return absl::FailedPreconditionError(absl::StrCat(
        "handed over through ", s.skip.size(), " copies of this libreyolo binary (",
        kHandoffSkipEnv, "); set ", kPythonCliEnv, " to the Python LibreYOLO's libreyolo"));
  }
  if (!s.override_path.empty()) {
    if (!IsExecutableFile(s.override_path)) {
      return absl::FailedPreconditionError(absl::StrCat(
          kPythonCliEnv, "=", s.override_path, " is not an executable file; ",
          kPythonCliInstallHint));
    }
    if (IsOurs(s, s.override_path)) {
      return absl::FailedPreconditionError(absl::StrCat(
          kPythonCliEnv, "=", s.override_path,
          " is this libreyolo (profile, jobs), not the Python LibreYOLO; point it at the Python "
          "LibreYOLO's libreyolo (e.g. <venv>/bin/libreyolo)"));
    }
    return s.override_path;
  }
  for (absl::string_view dir : absl::StrSplit(s.path_env, ':')) {
    const std::string candidate = absl::StrCat(dir.empty() ? "." : dir, "/libreyolo");
    if (!IsExecutableFile(candidate) || IsOurs(s, candidate)) continue;
    return candidate;
  }
  return PythonCliNotFound();
}

int HandOffToPythonCli(char** argv, std::ostream& err) {
  const PythonCliSearch search = CurrentPythonCliSearch();
  const std::string command = argv[0] != nullptr && argv[1] != nullptr ? argv[1] : "";
  absl::StatusOr<std::string> cli = FindPythonCli(search);
  if (!cli.ok()) {
    err << "libreyolo: error: '" << TerminalSafe(command, false)
        << "' goes to the Python LibreYOLO (this libreyolo answers only 'profile' and "
           "'jobs'), and "
        << cli.status().message() << "\n";
    return kExitUsage;
  }
  std::vector<std::string> env = EnvironWith({{kHandoffSkipEnv, SkipWithSelf(search)}});
  std::vector<char*> envp = Pointers(env);
  err.flush();
  ::execve(cli->c_str(), argv, envp.data());
  err << "libreyolo: error: cannot run the Python LibreYOLO " << *cli << ": "
      << std::strerror(errno) << "\n";
  return kExitUsage;
}

namespace {

// The output of `<cli> --version`, with its exit status.
absl::StatusOr<std::string> RunVersion(const std::string& cli, int* exit_status) {
  // Everything the child needs is built before fork(): it only dup2()s and exec()s.
  std::vector<std::string> env = EnvironWith(
      {{kHandoffSkipEnv, SkipWithSelf(CurrentPythonCliSearch())}, {kVersionProbeEnv, "1"}});
  std::vector<char*> envp = Pointers(env);
  std::vector<std::string> args = {cli, "--version"};
  std::vector<char*> argv = Pointers(args);
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return absl::InternalError(std::strerror(errno));
  const int devnull = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(fds[1], STDOUT_FILENO);
    if (devnull >= 0) {
      ::dup2(devnull, STDIN_FILENO);
      ::dup2(devnull, STDERR_FILENO);
    }
    ::execve(cli.c_str(), argv.data(), envp.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  if (devnull >= 0) ::close(devnull);
  if (pid < 0) {
    ::close(fds[0]);
    return absl::InternalError(std::strerror(errno));
  }
  std::string output;
  const auto deadline = std::chrono::steady_clock::now() + kVersionTimeout;
  bool timed_out = false;
  while (output.size() < 4096) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    char buf[512];
    const ssize_t got = ::read(fds[0], buf, sizeof(buf));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    output.append(buf, static_cast<size_t>(got));
  }
  ::close(fds[0]);
  if (timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) return absl::DeadlineExceededError(absl::StrCat(cli, " --version did not answer"));
  *exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return output;
}

}  // namespace

absl::StatusOr<PythonCliInfo> ProbePythonCli() {
  ASSIGN_OR_RETURN(std::string cli, FindPythonCli(CurrentPythonCliSearch()));
  int exit_status = 0;
  ASSIGN_OR_RETURN(std::string output, RunVersion(cli, &exit_status));
  PythonCliInfo info{cli, ""};
  for (absl::string_view line : absl::StrSplit(output, '\n')) {
    std::string text(absl::StripAsciiWhitespace(line));
    if (text.empty()) continue;
    if (absl::StartsWith(text, kProbeMarker)) {  // a copy of this binary: its answer
      info.path = std::string(absl::StripAsciiWhitespace(text.substr(strlen(kProbeMarker))));
      if (info.path.empty()) return PythonCliNotFound();
      continue;
    }
    info.version = TerminalSafe(text, false);
    return info;
  }
  return absl::UnavailableError(
      absl::StrCat(cli, " --version printed nothing (exit ", exit_status, ")"));
}

std::string VersionText() {
  if (!Getenv(kVersionProbeEnv).empty()) {  // asked by another copy of this binary
    absl::StatusOr<PythonCliInfo> info = ProbePythonCli();
    if (!info.ok()) return absl::StrCat(kProbeMarker, "\n");
    return absl::StrCat(kProbeMarker, " ", info->path, "\n", info->version, "\n");
  }
  std::string out = absl::StrCat("libreyolo ", LIBREYOLO_VERSION,
                                 " (libreyolo-profiler: libreyolo profile, libreyolo jobs)\n");
  absl::StatusOr<PythonCliInfo> cli = ProbePythonCli();
  if (absl::IsNotFound(cli.status())) {
    absl::StrAppend(&out, "Python LibreYOLO: not found (train, predict, val, export, ... need it); ",
                    kPythonCliInstallHint, "\n");
    return out;
  }
  if (!cli.ok()) {
    absl::StrAppend(&out, "Python LibreYOLO: ", cli.status().message(), "\n");
    return out;
  }
  absl::StrAppend(&out, "Python LibreYOLO ", cli->version, " (", TerminalSafe(cli->path, false),
                  "): every other command\n");
  return out;
}

}  // namespace libreyolo::cli
