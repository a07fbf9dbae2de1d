// What the client takes from a daemon's answer before it acts on it. A daemon may be hostile or
// not the one meant (a compromised box, a plaintext --insecure path, a wrong
// LIBREYOLO_REMOTE); its job records name files the client writes and ids it puts into
// commands it prints. Everything the client derives a path from is checked against the rules
// the daemon is bound by (common/job/names.h, docs/rpc.md "Conventions") before any file is
// written, so a bad answer writes nothing.
#ifndef LIBREYOLO_CLIENT_REMOTE_DAEMON_ANSWER_H_
#define LIBREYOLO_CLIENT_REMOTE_DAEMON_ANSWER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "libreyolo/profiler/v1/profiler.pb.h"

namespace libreyolo::cli {

namespace v1 = ::libreyolo::profiler::v1;

// OK when `job` (from the daemon at `address`) has a valid id, its artifacts have plain, unique
// names, and a data-parallel job's ranks lie inside the bounds of a world. Otherwise DATA_LOSS
// (exit 1) naming the offending value (escaped, shortened) and the way out.
absl::Status CheckJobAnswer(const v1::Job& job, absl::string_view address);

// Where `libreyolo profile run|infer` and `jobs download` put a job's artifact under
// --project, as the engine lays it out locally: infer -> <project>/infer/<name>; run ->
// <project>/prof/<name>; a --repeat N job's (N >= 2) in the Python tool's trial folders,
// <project>/infer_<T>/<name> and <project>/prof_<T>/<name>, with infer_repeat.json and
// profile_repeat.json at <project>/ (common/io/trial_artifacts.h); a data-parallel job's ->
// <project>/prof/rank<R>/<name> (common/io/rank_artifacts.h). A name that is not plain, or not
// a trial's of the job (CheckJobAnswer), is DATA_LOSS: the result always lies under `project`.
absl::StatusOr<std::string> ArtifactDestination(const std::string& project, const v1::Job& job,
                                                const std::string& name);

// A private folder for a command's downloads: mkdtemp under $TMPDIR (mode 0700, a name no
// other user can predict or plant a link at), removed with its contents when destroyed.
class ScratchFolder {
 public:
  // `prefix`: the folder's name before the random part ("libreyolo-compare").
  static absl::StatusOr<std::unique_ptr<ScratchFolder>> Create(absl::string_view prefix);
  ~ScratchFolder();
  ScratchFolder(const ScratchFolder&) = delete;
  ScratchFolder& operator=(const ScratchFolder&) = delete;
  const std::string& path() const { return path_; }

 private:
  explicit ScratchFolder(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

}  // namespace libreyolo::cli

#endif  // LIBREYOLO_CLIENT_REMOTE_DAEMON_ANSWER_H_
