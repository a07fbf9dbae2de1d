#include "server/engine/runtime/cpu_threads.h"

#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <fstream>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/string_view.h"

namespace libreyolo::engine {
namespace {

using SetFn = void (*)(int);
using GetFn = int (*)();

struct OpenBlasFns {
  SetFn set = nullptr;
  GetFn get = nullptr;
};

// The mapped OpenBLAS library ("/usr/lib/.../libopenblasp-r0.3.21.so"), empty when none.
std::string MappedOpenBlas() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    const size_t slash = line.find('/');
    if (slash == std::string::npos) continue;
    const std::string path = line.substr(slash);
    const size_t base = path.rfind('/');
    if (absl::StrContains(path.substr(base), "openblas") && absl::StrContains(path, ".so")) {
      return path;
    }
  }
  return "";
}

// Looked up on every call: cheap (jobs call it once) and right even if a library is loaded
// later. RTLD_DEFAULT finds OpenBLAS wherever it came in with LibTorch's load-time
// dependencies; a library dlopen()ed RTLD_LOCAL (e.g. by Python) needs its own handle.
OpenBlasFns FindOpenBlas() {
  OpenBlasFns f;
  f.set = reinterpret_cast<SetFn>(::dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
  f.get = reinterpret_cast<GetFn>(::dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
  if (f.set != nullptr && f.get != nullptr) return f;
  const std::string path = MappedOpenBlas();
  if (path.empty()) return {};
  // RTLD_NOLOAD: a handle to the copy already mapped, never a second one. The handle is kept
  // (the library stays loaded anyway).
  void* handle = ::dlopen(path.c_str(), RTLD_LAZY | RTLD_NOLOAD);
  if (handle == nullptr) return {};
  f.set = reinterpret_cast<SetFn>(::dlsym(handle, "openblas_set_num_threads"));
  f.get = reinterpret_cast<GetFn>(::dlsym(handle, "openblas_get_num_threads"));
  if (f.set == nullptr || f.get == nullptr) return {};
  return f;
}

// libgomp reads OMP_WAIT_POLICY in its constructor, before this initialiser runs (LibTorch,
// and so libgomp, is a load-time dependency of every program that links the engine).
const std::string& StartupOmpWaitPolicy() {
  static const std::string policy = DescribeOmpWaitPolicy(std::getenv("OMP_WAIT_POLICY"));
  return policy;
}
[[maybe_unused]] const std::string& kCapturedAtStartup = StartupOmpWaitPolicy();

}  // namespace

std::optional<int> OpenBlasThreads() {
  const OpenBlasFns f = FindOpenBlas();
  if (f.get == nullptr) return std::nullopt;
  return f.get();
}

std::optional<int> SetOpenBlasThreads(int n) {
  const OpenBlasFns f = FindOpenBlas();
  if (f.set == nullptr) return std::nullopt;
  f.set(n < 1 ? 1 : n);
  return f.get();
}

std::string DescribeOmpWaitPolicy(const char* value) {
  if (value == nullptr) return "default";
  const absl::string_view v = absl::StripAsciiWhitespace(value);
  if (absl::EqualsIgnoreCase(v, "passive")) return "passive";
  if (absl::EqualsIgnoreCase(v, "active")) return "active";
  return "default";
}

std::string OmpWaitPolicy() { return StartupOmpWaitPolicy(); }

void ReexecWithPassiveOmpWaitPolicy(char** argv) {
  if (argv == nullptr || argv[0] == nullptr || std::getenv("OMP_WAIT_POLICY") != nullptr ||
      std::getenv("GOMP_SPINCOUNT") != nullptr) {
    return;
  }
  // Exec the binary's own path, not /proc/self/exe: the kernel names the process after the
  // file executed, and `pgrep -x libreyolod` / `systemctl status` must still find it.
  char self[PATH_MAX + 1] = {};
  const ssize_t n = ::readlink("/proc/self/exe", self, PATH_MAX);
  if (n <= 0) return;
  self[n] = '\0';
  if (::setenv("OMP_WAIT_POLICY", "PASSIVE", 0) != 0) return;
  ::execv(self, argv);
  // The exec failed: carry on with libgomp's default, and do not claim PASSIVE in the profile.
  ::unsetenv("OMP_WAIT_POLICY");
}

void WriteThreadFields(JsonWriter& w, const ThreadSettings& t) {
  w.Field("threads", static_cast<int64_t>(t.threads))
      .Field("interop_threads", static_cast<int64_t>(t.interop_threads))
      .Field("blas", t.blas);
  if (t.blas_threads.has_value()) {
    w.Field("blas_threads", static_cast<int64_t>(*t.blas_threads));
  } else {
    w.Key("blas_threads").Null();
  }
  w.Field("omp_wait_policy", t.omp_wait_policy);
}

}  // namespace libreyolo::engine
