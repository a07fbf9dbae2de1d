// The job store's scratch and artifact directories: creating them, publishing a finished
// job's files into them (size-checked, hashed, atomically), finding and discarding them.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/io/atomic_file.h"
#include "common/io/sha256.h"
#include "common/io/unique_fd.h"
#include "common/status/status_macros.h"
#include "server/daemon/store/job_store.h"
#include "server/daemon/store/job_store_internal.h"

namespace libreyolo::daemon {

using namespace job_store_internal;  // NOLINT: the store's own helpers

absl::StatusOr<std::string> JobStore::ArtifactDir(const std::string& job_id) {
  return Guarded("ArtifactDir", [&]() -> absl::StatusOr<std::string> {
    RETURN_IF_ERROR(CheckJobId(job_id));
    std::string dir = Join(store_dir_, job_id);
    RETURN_IF_ERROR(MakeRealDir(dir, 0750));
    return dir;
  });
}

absl::StatusOr<std::string> JobStore::ScratchDir(const std::string& job_id) {
  return Guarded("ScratchDir", [&]() -> absl::StatusOr<std::string> {
    RETURN_IF_ERROR(CheckJobId(job_id));
    const std::string root = LayoutOf(state_dir_, store_dir_).scratch_root;
    RETURN_IF_ERROR(MakeRealDir(root, 0750));
    std::string dir = Join(root, job_id);
    RETURN_IF_ERROR(MakeRealDir(dir, 0700));
    return dir;
  });
}

void JobStore::DiscardScratch(const std::string& job_id) {
  try {
    if (!ValidJobId(job_id)) return;
    std::error_code ec;
    std::filesystem::remove_all(Join(LayoutOf(state_dir_, store_dir_).scratch_root, job_id), ec);
  } catch (...) {  // best effort: recovery removes what is left
  }
}

void JobStore::DiscardArtifacts(const std::string& job_id) {
  try {
    if (!ValidJobId(job_id)) return;
    const std::string dir = Join(store_dir_, job_id);
    struct stat st {};
    if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return;  // only what we made
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    if (!ec) (void)FsyncDirectory(store_dir_, ops_);
  } catch (...) {  // best effort, like DiscardScratch
  }
}

absl::StatusOr<v1::Artifact> JobStore::PublishArtifact(const std::string& job_id,
                                                       const std::string& file,
                                                       const std::string& name, int64_t max_bytes) {
  return Guarded("PublishArtifact", [&]() -> absl::StatusOr<v1::Artifact> {
    RETURN_IF_ERROR(CheckJobId(job_id));
    if (!ValidArtifactName(name)) {
      return absl::InvalidArgumentError(
          absl::StrCat("artifact name ", Quote(name), " is invalid: expected a plain file name"));
    }
    // `file` is a path, or a name inside the job's scratch directory.
    const std::string src =
        absl::StrContains(file, '/')
            ? file
            : Join(Join(LayoutOf(state_dir_, store_dir_).scratch_root, job_id), file);
    UniqueFd fd(::open(src.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (!fd.valid()) return OsError(errno, "cannot open artifact", src);
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return OsError(errno, "cannot stat", src);
    if (!S_ISREG(st.st_mode)) {
      return absl::InvalidArgumentError(absl::StrCat("artifact ", src, " is not a regular file"));
    }
    const auto too_large = [&](int64_t size) {
      return absl::ResourceExhaustedError(absl::StrCat("artifact ", name, " of job ", job_id,
                                                       " is ", size, " bytes, over the limit of ",
                                                       max_bytes, " bytes (", src, ")"));
    };
    if (st.st_size > max_bytes) return too_large(st.st_size);
    RETURN_IF_ERROR(FsyncFd(fd.get(), src, ops_));  // the data is durable before the name
    int64_t size = 0;
    ASSIGN_OR_RETURN(std::string sha256, Sha256Fd(fd.get(), src, &size));
    if (size > max_bytes) return too_large(size);
    RETURN_IF_ERROR(CloseFd(fd, src));

    ASSIGN_OR_RETURN(const std::string dir, ArtifactDir(job_id));
    const std::string dst = Join(dir, name);
    // Written once: a job's published artifact is never replaced (a job run twice fails here
    // rather than change what its first run's digest names).
    if (ops_.RenameNoReplace(src.c_str(), dst.c_str()) != 0) {
      const int err = errno;
      if (err == EEXIST) {
        return absl::AlreadyExistsError(absl::StrCat(
            "artifact ", name, " of job ", job_id, " is already published (", dst,
            "); published artifacts are never replaced"));
      }
      if (err != EXDEV) return OsError(err, absl::StrCat("cannot rename ", src, " to"), dst);
      // Another file system: copy into the artifact directory atomically, then drop the source.
      ASSIGN_OR_RETURN(const std::string data, ReadFile(src));
      RETURN_IF_ERROR(WriteFileOnce(dst, data, 0640, ops_));
      ::unlink(src.c_str());
    }
    RETURN_IF_ERROR(FsyncDirectory(dir, ops_));
    (void)FsyncDirectory(Parent(src), ops_);

    v1::Artifact artifact;
    artifact.set_name(name);
    artifact.set_size_bytes(size);
    artifact.set_sha256(std::move(sha256));
    return artifact;
  });
}

absl::Status JobStore::VerifyArtifact(const std::string& job_id, const v1::Artifact& artifact,
                                      std::string* identity) const {
  return Guarded("VerifyArtifact", [&]() -> absl::Status {
    RETURN_IF_ERROR(CheckJobId(job_id));
    if (!ValidArtifactName(artifact.name())) {
      return absl::InvalidArgumentError(absl::StrCat("artifact name ", Quote(artifact.name()),
                                                     " is invalid: expected a plain file name"));
    }
    const std::string path = Join(Join(store_dir_, job_id), artifact.name());
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (!fd.valid()) return OsError(errno, "cannot open artifact", path);
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return OsError(errno, "cannot stat", path);
    const std::string id = absl::StrCat(st.st_dev, ":", st.st_ino, ":", st.st_size, ":",
                                        st.st_mtim.tv_sec, ".", st.st_mtim.tv_nsec, ":",
                                        st.st_ctim.tv_sec, ".", st.st_ctim.tv_nsec);
    if (identity != nullptr && *identity == id) return absl::OkStatus();
    int64_t size = 0;
    ASSIGN_OR_RETURN(const std::string sha256, Sha256Fd(fd.get(), path, &size));
    if (sha256 != artifact.sha256() || size != artifact.size_bytes()) {
      return absl::DataLossError(absl::StrCat(
          "artifact ", artifact.name(), " of job ", job_id, " is corrupt in the store: ", size,
          " bytes with SHA-256 ", sha256, ", recorded ", artifact.size_bytes(), " bytes with ",
          artifact.sha256()));
    }
    if (identity != nullptr) *identity = id;
    return absl::OkStatus();
  });
}

absl::StatusOr<std::string> JobStore::ArtifactPath(const v1::Job& job,
                                                   const std::string& name) const {
  return Guarded("ArtifactPath", [&]() -> absl::StatusOr<std::string> {
    RETURN_IF_ERROR(CheckJobId(job.id()));
    const auto not_found = [&](absl::string_view why) {
      return absl::NotFoundError(
          absl::StrCat("job ", job.id(), " has no artifact ", Quote(name), ": ", why));
    };
    if (!ValidArtifactName(name)) return not_found("not a plain file name");
    const bool listed = std::any_of(job.artifacts().begin(), job.artifacts().end(),
                                    [&](const v1::Artifact& a) { return a.name() == name; });
    if (!listed) return not_found("not one of the job's artifacts");

    const std::string dir = Join(store_dir_, job.id());
    std::string path = Join(dir, name);
    struct stat st {};
    if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      return not_found(absl::StrCat(dir, " is not a directory"));
    }
    if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
      return not_found(absl::StrCat(path, " is not a regular file"));
    }
    // Belt and braces: the resolved path must lie under the resolved store root.
    char root_buf[PATH_MAX];
    char path_buf[PATH_MAX];
    if (::realpath(store_dir_.c_str(), root_buf) == nullptr) {
      return OsError(errno, "cannot resolve", store_dir_);
    }
    if (::realpath(path.c_str(), path_buf) == nullptr)
      return OsError(errno, "cannot resolve", path);
    std::string root = root_buf;
    if (root != "/") root.push_back('/');
    if (!absl::StartsWith(path_buf, root)) {
      return not_found(absl::StrCat(path, " resolves outside the store"));
    }
    return path;
  });
}

}  // namespace libreyolo::daemon
