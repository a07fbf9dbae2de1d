#include "server/daemon/store/job_store_scrub.h"

#include <fcntl.h>
#include <sys/stat.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/io/sha256.h"
#include "common/io/unique_fd.h"
#include "common/status/status_macros.h"
#include "google/protobuf/util/json_util.h"
#include "libreyolo/profiler/v1/profiler.pb.h"
#include "server/daemon/store/job_store_internal.h"

namespace libreyolo::daemon {

using namespace job_store_internal;  // NOLINT: the store's own helpers

namespace {

namespace v1 = ::libreyolo::profiler::v1;

// Defaults of DaemonConfig (daemon_config.h), repeated so that the store library stays free
// of the configuration's.
constexpr char kDefaultStateDir[] = "/var/lib/libreyolod/state";
constexpr char kDefaultStoreDir[] = "/var/lib/libreyolod/store";

// Empty when the artifact matches its record, otherwise what is wrong with it.
std::string CheckArtifact(const std::string& store_dir, const v1::Job& job,
                          const v1::Artifact& a, ScrubReport* report) {
  if (!ValidArtifactName(a.name())) return "not a plain file name";
  const std::string path = Join(Join(store_dir, job.id()), a.name());
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd.valid()) return absl::StrCat("missing or unreadable (", path, ")");
  int64_t size = 0;
  auto sha = Sha256Fd(fd.get(), path, &size);
  if (!sha.ok()) return std::string(sha.status().message());
  report->bytes += size;
  if (*sha != a.sha256() || size != a.size_bytes()) {
    return absl::StrCat("corrupt: ", size, " bytes with SHA-256 ", *sha, ", recorded ",
                        a.size_bytes(), " bytes with ", a.sha256(), " (", path, ")");
  }
  return "";
}

}  // namespace

absl::StatusOr<ScrubReport> ScrubStore(const std::string& state_dir,
                                       const std::string& store_dir) {
  return Guarded("ScrubStore", [&]() -> absl::StatusOr<ScrubReport> {
    const Layout layout = LayoutOf(StripTrailingSlashes(state_dir), StripTrailingSlashes(store_dir));
    ASSIGN_OR_RETURN(auto names, ListDir(layout.jobs));
    ScrubReport report;
    google::protobuf::util::JsonParseOptions options;
    options.ignore_unknown_fields = true;
    for (const std::string& name : names) {
      if (!absl::EndsWith(name, ".json") || absl::StartsWith(name, kTmpPrefix)) continue;
      auto data = ReadFile(Join(layout.jobs, name));
      v1::Job job;
      if (!data.ok() || !google::protobuf::util::JsonStringToMessage(*data, &job, options).ok() ||
          !ValidJobId(job.id())) {
        report.problems.push_back(absl::StrCat(name, ": the job record cannot be read"));
        continue;
      }
      ++report.jobs;
      for (const v1::Artifact& a : job.artifacts()) {
        ++report.artifacts;
        const std::string why = CheckArtifact(StripTrailingSlashes(store_dir), job, a, &report);
        if (!why.empty()) report.problems.push_back(absl::StrCat(job.id(), "/", a.name(), ": ", why));
      }
    }
    return report;
  });
}

int ScrubMain(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  std::string state_dir = kDefaultStateDir, store_dir = kDefaultStoreDir;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    std::string* target = a == "--state-dir" ? &state_dir : a == "--store-dir" ? &store_dir : nullptr;
    if (a == "--help" || a == "-h") {
      out << "usage: libreyolod scrub [--state-dir DIR] [--store-dir DIR]\n"
             "Checks every stored artifact against its recorded size and SHA-256 (read-only).\n"
             "Exit status: 0 all intact, 1 something corrupt or missing, 2 usage error.\n";
      return 0;
    }
    if (target == nullptr || i + 1 == args.size()) {
      err << "libreyolod scrub: " << (target == nullptr ? "unknown argument " : "missing value for ")
          << Quote(a) << "\nusage: libreyolod scrub [--state-dir DIR] [--store-dir DIR]\n";
      return 2;
    }
    *target = args[++i];
  }
  auto report = ScrubStore(state_dir, store_dir);
  if (!report.ok()) {
    err << "libreyolod scrub: " << report.status().message() << "\n";
    return 2;
  }
  for (const std::string& p : report->problems) out << "PROBLEM " << p << "\n";
  out << "scrub: " << report->jobs << " jobs, " << report->artifacts << " artifacts, "
      << report->bytes << " bytes checked; " << report->problems.size() << " problems\n";
  return report->problems.empty() ? 0 : 1;
}

}  // namespace libreyolo::daemon
