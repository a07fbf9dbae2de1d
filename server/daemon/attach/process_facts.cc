#include "server/daemon/attach/process_facts.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace libreyolo::daemon::attach {
namespace {

constexpr size_t kMaxAncestors = 64;
constexpr size_t kMaxCommandLineBytes = 4096;
constexpr size_t kMaxEnvironBytes = 1 << 20;

std::optional<std::string> ReadSmallFile(const std::string& path, size_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::string text(max_bytes, '\0');
  in.read(text.data(), static_cast<std::streamsize>(max_bytes));
  if (in.bad()) return std::nullopt;
  text.resize(static_cast<size_t>(in.gcount()));
  return text;
}

// The value of "Key:\t..." in /proc/<pid>/status.
std::optional<std::string> StatusField(pid_t pid, const std::string& proc_root,
                                       absl::string_view key) {
  const auto text = ReadSmallFile(absl::StrCat(proc_root, "/", pid, "/status"), 1 << 16);
  if (!text) return std::nullopt;
  for (absl::string_view line : absl::StrSplit(*text, '\n')) {
    if (absl::ConsumePrefix(&line, key) && absl::ConsumePrefix(&line, ":")) {
      return std::string(absl::StripAsciiWhitespace(line));
    }
  }
  return std::nullopt;
}

std::optional<int64_t> Integer(absl::string_view text) {
  int64_t v = 0;
  if (!absl::SimpleAtoi(text, &v)) return std::nullopt;
  return v;
}

}  // namespace

std::optional<pid_t> NamespacePid(pid_t pid, const std::string& proc_root) {
  const auto nspid = StatusField(pid, proc_root, "NSpid");
  if (!nspid) return std::nullopt;
  const std::vector<absl::string_view> pids =
      absl::StrSplit(*nspid, absl::ByAnyChar(" \t"), absl::SkipEmpty());
  if (pids.empty()) return std::nullopt;
  const auto last = Integer(pids.back());
  if (!last || *last <= 0) return std::nullopt;
  return static_cast<pid_t>(*last);
}

namespace {

// A GPU's device file: /dev/nvidia<N> (not nvidiactl or nvidia-uvm, which every CUDA import
// may open), /dev/kfd (ROCm), /dev/dri/renderD<N>.
bool IsGpuDevice(absl::string_view target) {
  for (absl::string_view prefix : {"/dev/nvidia", "/dev/dri/renderD"}) {
    absl::string_view rest = target;
    if (absl::ConsumePrefix(&rest, prefix) && !rest.empty() &&
        std::all_of(rest.begin(), rest.end(),
                    [](unsigned char c) { return absl::ascii_isdigit(c); })) {
      return true;
    }
  }
  return target == "/dev/kfd";
}

}  // namespace

std::optional<bool> HoldsGpuDevice(pid_t pid, const std::string& proc_root) {
  const std::string dir = absl::StrCat(proc_root, "/", pid, "/fd");
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return std::nullopt;
  bool holds = false;
  while (const struct dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    char target[256];
    const std::string link = absl::StrCat(dir, "/", e->d_name);
    const ssize_t n = ::readlink(link.c_str(), target, sizeof(target) - 1);
    if (n > 0 && IsGpuDevice(absl::string_view(target, static_cast<size_t>(n)))) {
      holds = true;
      break;
    }
  }
  ::closedir(d);
  return holds;
}

void ParseEnviron(absl::string_view environ_block, ProcessFacts* facts) {
  for (absl::string_view kv : absl::StrSplit(environ_block, '\0', absl::SkipEmpty())) {
    const size_t eq = kv.find('=');
    if (eq == absl::string_view::npos) continue;
    const absl::string_view name = kv.substr(0, eq);
    const absl::string_view value = kv.substr(eq + 1);
    if (name == "SLURM_JOB_ID") {
      facts->slurm_job_id = std::string(value.substr(0, 64));
    } else if (name == "RANK") {
      facts->rank = Integer(value);
    } else if (name == "LOCAL_RANK") {
      facts->local_rank = Integer(value);
    } else if (name == "WORLD_SIZE") {
      facts->world_size = Integer(value);
    } else if (name == "KINETO_ONDEMAND_TRACE_DIR" && value.size() <= 4096) {
      facts->ondemand_trace_dir = std::string(value);
    }
  }
}

ProcessFacts ReadProcessFacts(pid_t pid, const std::string& proc_root) {
  ProcessFacts facts;
  pid_t at = pid;
  while (facts.ancestors.size() < kMaxAncestors) {
    const auto ppid = StatusField(at, proc_root, "PPid");
    const auto parent = ppid ? Integer(*ppid) : std::nullopt;
    if (!parent || *parent <= 0) break;
    facts.ancestors.push_back(static_cast<pid_t>(*parent));
    if (*parent == 1) break;
    at = static_cast<pid_t>(*parent);
  }
  if (auto cmdline =
          ReadSmallFile(absl::StrCat(proc_root, "/", pid, "/cmdline"), kMaxCommandLineBytes)) {
    while (!cmdline->empty() && cmdline->back() == '\0') cmdline->pop_back();
    for (char& c : *cmdline) {
      if (c == '\0') c = ' ';
    }
    facts.command_line = std::move(*cmdline);
  }
  if (auto env = ReadSmallFile(absl::StrCat(proc_root, "/", pid, "/environ"), kMaxEnvironBytes)) {
    facts.environ_readable = true;
    ParseEnviron(*env, &facts);
  }
  return facts;
}

}  // namespace libreyolo::daemon::attach
