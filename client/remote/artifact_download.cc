#include "client/remote/artifact_download.h"

#include <filesystem>
#include <fstream>
#include <memory>

#include "absl/strings/str_cat.h"
#include "common/io/atomic_file.h"
#include "common/io/sha256.h"
#include "common/job/names.h"
#include "common/render/terminal_text.h"

namespace libreyolo::cli {
namespace {

namespace fs = std::filesystem;

DownloadObserver g_observer = nullptr;

void Observe(const std::string& name, int64_t received) {
  if (g_observer != nullptr) g_observer(name, received);
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
  const std::string tmp = TempPathBeside(dest);
  std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
  if (!out) return absl::PermissionDeniedError(absl::StrCat("cannot write ", tmp));
  // Until it is published, the temp file goes with any failure.
  struct RemoveUnlessPublished {
    const std::string& path;
    bool published = false;
    ~RemoveUnlessPublished() {
      std::error_code ignored;
      if (!published) fs::remove(path, ignored);
    }
  } cleanup{tmp};
  int64_t received = 0;
  std::string expected_sha;
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
    req.set_offset(received);
    Observe(name, received);
    auto ctx = c.Context(std::chrono::seconds(0));
    auto reader = c.stub().ReadArtifact(ctx.get(), req);
    v1::ArtifactChunk chunk;
    while (reader->Read(&chunk)) {
      reconnect.Reset();
      if (chunk.offset() != received) {
        return absl::DataLossError(absl::StrCat("artifact ", name, ": chunk at offset ",
                                                chunk.offset(), ", expected ", received));
      }
      out.write(chunk.data().data(), static_cast<std::streamsize>(chunk.data().size()));
      received += static_cast<int64_t>(chunk.data().size());
      Observe(name, received);
      if (chunk.last()) {
        expected_sha = chunk.sha256();
        complete = true;
      }
    }
    const grpc::Status s = reader->Finish();
    if (!s.ok()) {
      last_error = c.Error(s);
      // Only a broken transport (or a restarting daemon) is worth resuming; anything else is
      // the answer.
      retry = reconnect.ShouldRetry(s);
    }
  }
  out.close();
  if (!complete) {
    if (!last_error.ok()) {
      return absl::Status(last_error.code(),
                          absl::StrCat("artifact ", name, ": ", last_error.message()));
    }
    return absl::DataLossError(absl::StrCat("artifact ", name, ": the stream ended early"));
  }
  if (!out) return absl::DataLossError(absl::StrCat("cannot write ", tmp, " (disk full?)"));
  auto sha = Sha256File(tmp);
  if (!sha.ok()) return sha.status();
  if (!expected_sha.empty() && *sha != expected_sha) {
    return absl::DataLossError(absl::StrCat("artifact ", name, ": SHA-256 mismatch (got ", *sha,
                                            ", the daemon has ", expected_sha, ")"));
  }
  cleanup.published = true;  // PublishTempFile removes it on failure
  if (auto published = PublishTempFile(tmp, dest); !published.ok()) return published;
  return received;
}

}  // namespace libreyolo::cli
