#include "client/remote/artifact_download.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <memory>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "client/remote/job_watch.h"
#include "common/io/atomic_file.h"
#include "common/io/sha256.h"
#include "common/io/unique_fd.h"
#include "common/job/names.h"
#include "common/render/terminal_text.h"
#include "common/status/status_macros.h"

namespace libreyolo::cli {
namespace {

namespace fs = std::filesystem;

DownloadObserver g_observer = nullptr;

void Observe(const std::string& name, int64_t received) {
  if (g_observer != nullptr) g_observer(name, received);
}

// A download's temp file that no live download holds (its writer killed: SIGKILL, a power
// cut): ".tmp.<name>.<pid>.<n>" beside `dest`, whose flock nobody holds and whose pid is gone.
void RemoveAbandonedTemps(const std::string& dest) {
  const fs::path dir = fs::path(dest).parent_path();
  const std::string prefix =
      absl::StrCat(kAtomicTempPrefix, fs::path(dest).filename().string(), ".");
  std::error_code ec;
  for (auto it = fs::directory_iterator(dir.empty() ? fs::path(".") : dir, ec);
       !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const std::string file = it->path().filename().string();
    if (!absl::StartsWith(file, prefix)) continue;
    const std::vector<std::string> parts = absl::StrSplit(file.substr(prefix.size()), '.');
    int pid = 0;
    if (parts.size() == 2 && absl::SimpleAtoi(parts[0], &pid) && pid > 0 &&
        (::kill(pid, 0) == 0 || errno != ESRCH)) {
      continue;  // its writer may still be at work
    }
    UniqueFd held(::open(it->path().c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (!held.valid() || ::flock(held.get(), LOCK_EX | LOCK_NB) != 0) continue;
    std::error_code ignored;
    fs::remove(it->path(), ignored);
  }
}

struct Received {
  int64_t bytes = 0;
  std::string sha256;  // the daemon's, from the last chunk
};

// Streams `name` into `fd`, resuming after a broken transport. Ctrl-C (job_watch.h's flag)
// cancels the stream: CANCELLED, "interrupted".
absl::Status ReceiveInto(DaemonConnection& c, const std::string& job_id, const std::string& name,
                         int fd, const std::string& tmp, Received* got) {
  bool complete = false;
  absl::Status last_error;
  Reconnect reconnect(c);
  for (bool retry = true; retry && !complete;) {
    retry = false;
    // The last attempt's error only: a resumed stream that ends early is DATA_LOSS, not the
    // UNAVAILABLE that broke the one before.
    last_error = absl::OkStatus();
    v1::ReadArtifactRequest req;
    req.set_job_id(job_id);
    req.set_name(name);
    req.set_offset(got->bytes);
    Observe(name, got->bytes);
    auto ctx = c.Context(std::chrono::seconds(0));
    CancelOnInterrupt interrupter(ctx.get());
    auto reader = c.stub().ReadArtifact(ctx.get(), req);
    v1::ArtifactChunk chunk;
    while (reader->Read(&chunk)) {
      reconnect.Reset();
      if (chunk.offset() != got->bytes) {
        return absl::DataLossError(absl::StrCat("artifact ", name, ": chunk at offset ",
                                                chunk.offset(), ", expected ", got->bytes));
      }
      RETURN_IF_ERROR(WriteAllToFd(fd, chunk.data(), tmp));
      got->bytes += static_cast<int64_t>(chunk.data().size());
      Observe(name, got->bytes);
      if (chunk.last()) {
        got->sha256 = chunk.sha256();
        complete = true;
      }
    }
    const grpc::Status s = reader->Finish();
    if (Interrupted()) {
      return absl::CancelledError(absl::StrCat("artifact ", name, ": interrupted (Ctrl-C)"));
    }
    if (!s.ok()) {
      last_error = c.Error(s);
      // Only a broken transport (or a restarting daemon) is worth resuming; anything else is
      // the answer.
      retry = reconnect.ShouldRetry(s);
    }
  }
  if (complete) return absl::OkStatus();
  if (!last_error.ok()) {
    return absl::Status(last_error.code(),
                        absl::StrCat("artifact ", name, ": ", last_error.message()));
  }
  return absl::DataLossError(absl::StrCat("artifact ", name, ": the stream ended early"));
}

}  // namespace

void SetDownloadObserver(DownloadObserver observer) { g_observer = observer; }

absl::StatusOr<int64_t> DownloadArtifact(DaemonConnection& c, const std::string& job_id,
                                         const std::string& name, const std::string& dest) {
  if (!IsPlainArtifactName(name)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", Excerpt(name), "' is not an artifact name (a plain file name: letters, digits, . _ -)"));
  }
  std::error_code ec;
  fs::create_directories(fs::path(dest).parent_path(), ec);
  if (ec) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot create ", fs::path(dest).parent_path().string(), ": ", ec.message()));
  }
  RemoveAbandonedTemps(dest);
  const std::string tmp = TempPathBeside(dest);
  UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644));
  if (!fd.valid()) {
    return absl::ErrnoToStatus(errno, absl::StrCat("cannot write ", tmp));
  }
  // Held until the file is published or removed: a later download sees it is not abandoned.
  ::flock(fd.get(), LOCK_EX | LOCK_NB);
  // Until it is published, the temp file goes with any failure.
  struct RemoveUnlessPublished {
    const std::string& path;
    bool published = false;
    ~RemoveUnlessPublished() {
      std::error_code ignored;
      if (!published) fs::remove(path, ignored);
    }
  } cleanup{tmp};
  Received got;
  RETURN_IF_ERROR(ReceiveInto(c, job_id, name, fd.get(), tmp, &got));
  if (::close(fd.Release()) != 0) {
    return absl::ErrnoToStatus(errno, absl::StrCat("cannot write ", tmp));
  }
  ASSIGN_OR_RETURN(auto sha, Sha256File(tmp));
  if (!got.sha256.empty() && sha != got.sha256) {
    return absl::DataLossError(absl::StrCat("artifact ", name, ": SHA-256 mismatch (got ", sha,
                                            ", the daemon has ", got.sha256, ")"));
  }
  cleanup.published = true;  // PublishTempFile removes it on failure
  RETURN_IF_ERROR(PublishTempFile(tmp, dest));
  return got.bytes;
}

absl::StatusOr<int64_t> FetchArtifact(DaemonConnection& c, const std::string& job_id,
                                      const v1::Artifact& artifact, const std::string& dest,
                                      std::map<std::string, std::string>* fetched) {
  const std::string key = absl::StrCat(artifact.sha256(), "/", artifact.size_bytes());
  auto same = artifact.sha256().empty() ? fetched->end() : fetched->find(key);
  if (same != fetched->end() && IsPlainArtifactName(artifact.name())) {
    // Linked under a temp name, then renamed: `dest` is never half there.
    std::error_code ec;
    fs::create_directories(fs::path(dest).parent_path(), ec);
    const std::string tmp = TempPathBeside(dest);
    fs::create_hard_link(same->second, tmp, ec);
    if (ec) {
      ec.clear();
      fs::copy_file(same->second, tmp, fs::copy_options::overwrite_existing, ec);
    }
    if (!ec) {
      fs::rename(tmp, dest, ec);
      if (!ec) return artifact.size_bytes();
    }
    fs::remove(tmp, ec);  // fall through: download it after all
  }
  auto got = DownloadArtifact(c, job_id, artifact.name(), dest);
  if (got.ok() && !artifact.sha256().empty()) fetched->emplace(key, dest);
  return got;
}

}  // namespace libreyolo::cli
