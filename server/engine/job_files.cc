#include "server/engine/job_files.h"


#include <cstdio>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "common/io/atomic_file.h"

namespace libreyolo::engine {
namespace {

namespace fs = std::filesystem;

}  // namespace

JobFiles JobFilesFor(const std::string& project, const std::string& kind) {
  const fs::path dir = fs::path(project) / kind;
  return JobFiles{dir.string(), (dir / "profile.json").string(),
                  (dir / "profile_trace.json").string(),
                  (fs::path(project) / "profile_repeat.json").string()};
}

absl::Status CreateJobDir(const JobFiles& files) {
  std::error_code ec;
  fs::create_directories(files.dir, ec);
  if (ec) {
    return absl::UnavailableError(
        absl::StrCat("cannot create ", files.dir, ": ", ec.message(), " (check --project)"));
  }
  return absl::OkStatus();
}

absl::Status WriteTraceAtomically(const CollectedTrace& trace, const std::string& path,
                                  const TraceExportOptions& options) {
  const std::string tmp = TempPathBeside(path);
  TraceExportOptions named = options;
  if (named.trace_name.empty()) named.trace_name = std::filesystem::path(path).filename().string();
  if (auto s = ExportChromeTrace(trace, tmp, named); !s.ok()) {
    std::remove(tmp.c_str());
    return s;
  }
  return PublishTempFile(tmp, path);
}

}  // namespace libreyolo::engine
