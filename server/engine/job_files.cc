#include "server/engine/job_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"

namespace libreyolo::engine {
namespace {

namespace fs = std::filesystem;

absl::Status Errno(const std::string& what, const std::string& path) {
  return absl::UnavailableError(absl::StrCat(what, " ", path, ": ", std::strerror(errno)));
}

absl::Status FsyncAndRename(const std::string& tmp, const std::string& path) {
  const int fd = ::open(tmp.c_str(), O_RDONLY);
  if (fd < 0) return Errno("cannot reopen", tmp);
  const int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) return Errno("fsync failed for", tmp);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) return Errno("cannot rename into", path);
  return absl::OkStatus();
}

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

absl::Status WriteFileAtomically(const std::string& path, const std::string& content) {
  const std::string tmp = absl::StrCat(path, ".tmp.", ::getpid());
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) return Errno("cannot write", tmp);
  const bool short_write = std::fwrite(content.data(), 1, content.size(), f) != content.size();
  const bool close_failed = std::fclose(f) != 0;
  if (short_write || close_failed) {
    std::remove(tmp.c_str());
    return Errno("writing failed (disk full?):", tmp);
  }
  return FsyncAndRename(tmp, path);
}

absl::Status WriteTraceAtomically(const CollectedTrace& trace, const std::string& path,
                                  const TraceExportOptions& options) {
  const std::string tmp = absl::StrCat(path, ".tmp.", ::getpid());
  TraceExportOptions named = options;
  if (named.trace_name.empty()) named.trace_name = std::filesystem::path(path).filename().string();
  if (auto s = ExportChromeTrace(trace, tmp, named); !s.ok()) {
    std::remove(tmp.c_str());
    return s;
  }
  return FsyncAndRename(tmp, path);
}

}  // namespace libreyolo::engine
