// The drop folder and the files taken from it (produced_files.h): every step relative to a
// descriptor opened without following symbolic links, so that what the producer plants or
// swaps in the folder is refused, never followed.
#include "server/daemon/external/produced_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/io/unique_fd.h"
#include "common/job/names.h"
#include "common/status/status_macros.h"
#include "server/daemon/external/produced_files_internal.h"

namespace libreyolo::daemon::external {
namespace {

// "alice (uid 1001)", or "uid 1001" for a uid with no passwd entry.
std::string UserOf(uid_t uid) {
  struct passwd pw {};
  struct passwd* found = nullptr;
  std::vector<char> buf(4096);
  if (::getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) == 0 && found != nullptr) {
    return absl::StrCat(found->pw_name, " (uid ", uid, ")");
  }
  return absl::StrCat("uid ", uid);
}

absl::Status OsError(int err, const std::string& what) {
  return absl::ErrnoToStatus(err, what);
}

// The folder's parent and its last component ("/tmp/x/20261206-ab" -> "/tmp/x", "20261206-ab").
bool SplitFolder(const std::string& path, std::string* parent, std::string* name) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos || slash + 1 >= path.size()) return false;
  *parent = slash == 0 ? "/" : path.substr(0, slash);
  *name = path.substr(slash + 1);
  return true;
}

// What a non-regular file is, for the message.
const char* KindOf(mode_t mode) {
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  return "not a regular file";
}

// Removes what `dir` holds, never following a link (a link is removed as the entry it is).
void EmptyDirectory(int dir, int depth) {
  const int dup = ::dup(dir);
  if (dup < 0) return;
  DIR* d = ::fdopendir(dup);
  if (d == nullptr) {
    ::close(dup);
    return;
  }
  std::vector<std::string> names;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  ::closedir(d);
  for (const std::string& name : names) {
    if (::unlinkat(dir, name.c_str(), 0) == 0) continue;
    if (errno != EISDIR && errno != EPERM) continue;
    if (depth >= 8) continue;  // deeper than anything a producer needs: left for the operator
    UniqueFd sub(::openat(dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!sub.valid()) continue;
    EmptyDirectory(sub.get(), depth + 1);
    (void)::unlinkat(dir, name.c_str(), AT_REMOVEDIR);
  }
}

}  // namespace

namespace internal {

absl::StatusOr<UniqueFd> OpenDropFolder(const DropFolder& folder) {
  UniqueFd dir(::open(folder.path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir.valid()) {
    const int err = errno;
    return OsError(err, absl::StrCat("cannot open the drop folder ", folder.path,
                                     err == ELOOP || err == ENOTDIR
                                         ? " (it is not a directory: replaced after it was made?)"
                                         : ""));
  }
  struct stat st {};
  if (::fstat(dir.get(), &st) != 0) {
    return OsError(errno, absl::StrCat("cannot stat the drop folder ", folder.path));
  }
  if (st.st_uid != folder.producer) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the drop folder ", folder.path, " belongs to ", UserOf(st.st_uid), ", not to ",
        UserOf(folder.producer), " for whom it was made: refused (was it replaced?)"));
  }
  return dir;
}

void UnpublishArtifacts(JobStore* store, const std::string& job_id,
                        const std::vector<v1::Artifact>& published) {
  if (published.empty()) return;
  absl::StatusOr<std::string> dir = store->ArtifactDir(job_id);
  if (!dir.ok()) return;
  UniqueFd fd(::open(dir->c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.valid()) return;
  for (const v1::Artifact& a : published) {
    if (IsPlainArtifactName(a.name())) (void)::unlinkat(fd.get(), a.name().c_str(), 0);
  }
  (void)::fsync(fd.get());
}

absl::StatusOr<v1::Artifact> TakeOne(int dir, const DropFolder& folder, const ProducedFile& file,
                                     const std::string& scratch, JobStore* store,
                                     const std::string& job_id, int64_t max_bytes) {
  const std::string what = absl::StrCat(file.name, " in the drop folder ", folder.path);
  // Looked at before it is opened: opening a FIFO or a device may act on it.
  struct stat before {};
  if (::fstatat(dir, file.name.c_str(), &before, AT_SYMLINK_NOFOLLOW) != 0) {
    const int err = errno;
    if (err == ENOENT) {
      return absl::NotFoundError(absl::StrCat(what, " does not exist: the producer did not "
                                              "write it (or wrote it under another name)"));
    }
    return OsError(err, absl::StrCat("cannot stat ", what));
  }
  if (!S_ISREG(before.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, " is ", KindOf(before.st_mode), ": refused (only regular files "
                     "are taken)"));
  }
  UniqueFd in(::openat(dir, file.name.c_str(),
                       O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  if (!in.valid()) {
    const int err = errno;
    if (err == ELOOP) {
      return absl::FailedPreconditionError(
          absl::StrCat(what, " is a symbolic link: refused"));
    }
    return OsError(err, absl::StrCat("cannot open ", what));
  }
  struct stat st {};
  if (::fstat(in.get(), &st) != 0) return OsError(errno, absl::StrCat("cannot stat ", what));
  if (!S_ISREG(st.st_mode) || st.st_ino != before.st_ino || st.st_dev != before.st_dev) {
    return absl::FailedPreconditionError(absl::StrCat(
        what, " changed while it was being opened (now ", KindOf(st.st_mode), "): refused"));
  }
  if (st.st_uid != folder.producer) {
    return absl::PermissionDeniedError(
        absl::StrCat(what, " belongs to ", UserOf(st.st_uid), ", not to the producer ",
                     UserOf(folder.producer), ": refused"));
  }
  const auto too_large = [&](int64_t size) {
    return absl::ResourceExhaustedError(absl::StrCat(what, " is ", size,
                                                     " bytes, over the job's artifact limit of ",
                                                     max_bytes, " bytes: refused"));
  };
  if (st.st_size > max_bytes) return too_large(st.st_size);

  // Copied through the descriptor: what the producer does to the file afterwards (truncate,
  // rewrite, rename) changes nothing stored.
  const std::string copy = absl::StrCat(scratch, "/.produced.", file.artifact);
  (void)::unlink(copy.c_str());
  UniqueFd out(::open(copy.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0640));
  if (!out.valid()) return OsError(errno, absl::StrCat("cannot create ", copy));
  auto fail = [&](absl::Status s) {
    out.Reset();
    (void)::unlink(copy.c_str());
    return s;
  };
  std::vector<char> buf(1 << 20);
  int64_t total = 0;
  for (;;) {
    const ssize_t got = in.Read(buf.data(), buf.size());
    if (got < 0) return fail(OsError(errno, absl::StrCat("cannot read ", what)));
    if (got == 0) break;
    total += got;
    if (total > max_bytes) return fail(too_large(total));  // it grew after the check
    for (ssize_t done = 0; done < got;) {
      const ssize_t w = ::write(out.get(), buf.data() + done, static_cast<size_t>(got - done));
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) return fail(OsError(errno, absl::StrCat("cannot write ", copy)));
      done += w;
    }
  }
  if (const int err = out.Close(); err != 0) {
    return fail(OsError(err, absl::StrCat("cannot write ", copy)));
  }
  absl::StatusOr<v1::Artifact> art = store->PublishArtifact(job_id, copy, file.artifact, max_bytes);
  if (!art.ok()) (void)::unlink(copy.c_str());
  return art;
}

}  // namespace internal

absl::StatusOr<DropFolder> MakeDropFolder(const std::string& parent, const std::string& job_id,
                                          uid_t producer) {
  if (!IsJobId(job_id)) {
    return absl::InvalidArgumentError(
        absl::StrCat(NotAJobIdMessage(job_id), ": no drop folder is made for it"));
  }
  const uid_t self = ::geteuid();
  if (producer != self && self != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "libreyolod runs as ", UserOf(self), ", not as root: it can make a drop folder for its "
        "own user only, not for ", UserOf(producer), ". Run the process as ", UserOf(self),
        ", or run the daemon as root (deploy.md)"));
  }
  UniqueFd up(::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!up.valid()) {
    return OsError(errno, absl::StrCat("cannot open ", parent, ", where drop folders are made"));
  }
  DropFolder folder{absl::StrCat(parent == "/" ? "" : parent, "/", job_id), producer};
  if (::mkdirat(up.get(), job_id.c_str(), 0700) != 0) {
    const int err = errno;
    if (err == EEXIST) {
      return absl::AlreadyExistsError(absl::StrCat(
          folder.path, " already exists (a file, a link or a folder): a drop folder is never "
          "reused; remove it, or let the job get a new id"));
    }
    return OsError(err, absl::StrCat("cannot make the drop folder ", folder.path));
  }
  auto undo = [&](absl::Status s) {
    (void)::unlinkat(up.get(), job_id.c_str(), AT_REMOVEDIR);
    return s;
  };
  UniqueFd dir(::openat(up.get(), job_id.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
                                                      O_CLOEXEC));
  if (!dir.valid()) {
    return undo(OsError(errno, absl::StrCat("cannot open the drop folder just made, ",
                                            folder.path)));
  }
  if (::fchmod(dir.get(), 0700) != 0) {  // whatever the umask took away
    return undo(OsError(errno, absl::StrCat("cannot set the mode of ", folder.path)));
  }
  if (producer != self && ::fchown(dir.get(), producer, static_cast<gid_t>(-1)) != 0) {
    return undo(OsError(errno, absl::StrCat("cannot give ", folder.path, " to ",
                                            UserOf(producer))));
  }
  return folder;
}

void RemoveDropFolder(const DropFolder& folder) {
  std::string parent, name;
  if (!SplitFolder(folder.path, &parent, &name)) return;
  UniqueFd up(::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!up.valid()) return;
  struct stat st {};
  if (::fstatat(up.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return;
  if (!S_ISDIR(st.st_mode)) {
    // Replaced by a link or a file: the entry goes, what a link points at stays untouched.
    (void)::unlinkat(up.get(), name.c_str(), 0);
    return;
  }
  UniqueFd dir(::openat(up.get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (dir.valid()) EmptyDirectory(dir.get(), 0);
  (void)::unlinkat(up.get(), name.c_str(), AT_REMOVEDIR);
}

absl::StatusOr<std::vector<v1::Artifact>> TakeProducedFiles(const DropFolder& folder,
                                                           const std::vector<ProducedFile>& files,
                                                           JobStore* store,
                                                           const std::string& job_id,
                                                           int64_t max_bytes) {
  std::set<std::string> artifacts;
  for (const ProducedFile& f : files) {
    if (!IsPlainArtifactName(f.name)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "'", f.name, "' is not a plain file name (letters, digits, '.', '_', '-'; no '/', "
          "no leading '.'): nothing is taken from the drop folder ", folder.path));
    }
    if (!IsPlainArtifactName(f.artifact)) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", f.artifact, "' is not a plain artifact name (for ", f.name, ")"));
    }
    if (!artifacts.insert(f.artifact).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("two files would be stored as the artifact ", f.artifact));
    }
  }
  ASSIGN_OR_RETURN(UniqueFd dir, internal::OpenDropFolder(folder));
  ASSIGN_OR_RETURN(std::string scratch, store->ScratchDir(job_id));
  std::vector<v1::Artifact> published;
  for (const ProducedFile& f : files) {
    absl::StatusOr<v1::Artifact> art =
        internal::TakeOne(dir.get(), folder, f, scratch, store, job_id, max_bytes);
    if (!art.ok()) {
      internal::UnpublishArtifacts(store, job_id, published);
      return art.status();
    }
    published.push_back(*std::move(art));
  }
  return published;
}

}  // namespace libreyolo::daemon::external
