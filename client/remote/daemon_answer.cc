#include "client/remote/daemon_answer.h"

#include <stdlib.h>

#include <cerrno>
#include <filesystem>
#include <optional>
#include <set>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "common/io/rank_artifacts.h"
#include "common/io/trial_artifacts.h"
#include "common/job/names.h"
#include "common/render/terminal_text.h"
#include "wire/job_spec/job_defaults.h"
#include "wire/job_spec/job_spec.h"

namespace libreyolo::cli {
namespace {

namespace fs = std::filesystem;

absl::Status Untrusted(absl::string_view address, absl::string_view what) {
  return absl::DataLossError(absl::StrCat(
      "the daemon at ", address, " answered ", what,
      ", which no libreyolod sends (docs/rpc.md, Conventions); nothing was written. Check that "
      "--remote / LIBREYOLO_REMOTE names the daemon you meant, and reach it over TLS"));
}

std::string Quoted(absl::string_view s) {
  return absl::StrCat("'", Excerpt(std::string_view(s.data(), s.size())), "'");
}

// The rank a data-parallel artifact's name gives, within the bounds of a world; -1 when out.
int64_t RankOf(const v1::Job& job, const RankArtifact& file) {
  const int64_t first = job.world().first_rank();
  if (first < 0 || first >= jobspec::bounds::kMaxWorldSize) return -1;
  if (file.rank < 0 || file.rank >= jobspec::bounds::kMaxRanks) return -1;
  return first + file.rank;
}

// An attach job that traced several processes: its artifacts carry rank names
// (produced_files.h, AnalyseIntoJob), so that its files lie as a data-parallel job's do.
bool MultiProcessAttach(const v1::Job& job) {
  if (job.kind() != v1::JOB_KIND_ATTACH) return false;
  for (const v1::Artifact& art : job.artifacts()) {
    if (SplitRankArtifact(art.name()).rank > 0) return true;
  }
  return false;
}

absl::StatusOr<std::string> Destination(const std::string& project, const v1::Job& job,
                                        const std::string& name) {
  if (!IsPlainArtifactName(name)) {
    return absl::DataLossError(
        absl::StrCat("artifact name ", Quoted(name), " is not a plain file name"));
  }
  const fs::path dir =
      fs::path(project) / (job.kind() == v1::JOB_KIND_RUN      ? kRunOutputFolder
                           : job.kind() == v1::JOB_KIND_ATTACH ? kAttachOutputFolder
                                                               : kInferOutputFolder);
  if (jobspec::DataParallelJob(job)) {
    // The run's rank: across hosts, this daemon's names count from its first rank.
    const RankArtifact file = SplitRankArtifact(name);
    const int64_t rank = RankOf(job, file);
    if (rank < 0 || !IsPlainArtifactName(file.file)) {
      return absl::DataLossError(absl::StrCat("artifact name ", Quoted(name), " (first rank ",
                                              job.world().first_rank(),
                                              ") is not a rank's plain file name"));
    }
    return (dir / absl::StrCat("rank", rank) / file.file).string();
  }
  if (MultiProcessAttach(job)) {
    // Each traced process's files in <project>/attach/rank<R>/ (R: its rank name's).
    const RankArtifact file = SplitRankArtifact(name);
    if (file.rank >= jobspec::bounds::kMaxWorldSize || !IsPlainArtifactName(file.file)) {
      return absl::DataLossError(
          absl::StrCat("artifact name ", Quoted(name), " is not a rank's plain file name"));
    }
    return (dir / absl::StrCat("rank", file.rank) / file.file).string();
  }
  if (IsRepeatFileName(name)) return (fs::path(project) / name).string();
  // A --repeat job: each trial's files in the Python tool's <kind>_<T>/ folders.
  const int64_t trials = jobspec::JobTrials(job);
  if (trials < 2) return (dir / name).string();
  const std::optional<TrialArtifact> file = SplitTrialArtifact(name, trials);
  if (!file || !IsPlainArtifactName(file->file)) {
    return absl::DataLossError(absl::StrCat("artifact name ", Quoted(name), " (", trials,
                                            " trials) is not a trial's plain file name"));
  }
  return (fs::path(project) / TrialFolderName(dir.filename().string(), file->trial) / file->file)
      .string();
}

}  // namespace

absl::Status CheckJobAnswer(const v1::Job& job, absl::string_view address) {
  if (!IsJobId(job.id())) return Untrusted(address, absl::StrCat("the job id ", Quoted(job.id())));
  std::set<std::string> seen;
  for (const v1::Artifact& art : job.artifacts()) {
    // Any project will do: the question is whether the name stays inside it, and is one file.
    auto dest = Destination("p", job, art.name());
    if (!dest.ok()) {
      return Untrusted(address, absl::StrCat(dest.status().message(), " for job ", job.id()));
    }
    if (!seen.insert(*dest).second) {
      return Untrusted(address, absl::StrCat("the artifact ", Quoted(art.name()), " of job ",
                                             job.id(), " twice"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ArtifactDestination(const std::string& project, const v1::Job& job,
                                                const std::string& name) {
  return Destination(project, job, name);
}

absl::StatusOr<std::unique_ptr<ScratchFolder>> ScratchFolder::Create(absl::string_view prefix) {
  std::error_code ec;
  fs::path base = fs::temp_directory_path(ec);
  if (ec) base = "/tmp";
  std::string templ = (base / absl::StrCat(prefix, "-XXXXXX")).string();
  if (::mkdtemp(templ.data()) == nullptr) {
    return absl::ErrnoToStatus(errno, absl::StrCat("cannot create a temporary folder in ",
                                                   base.string(), " (set TMPDIR to another)"));
  }
  return std::unique_ptr<ScratchFolder>(new ScratchFolder(std::move(templ)));
}

ScratchFolder::~ScratchFolder() {
  std::error_code ignored;
  fs::remove_all(path_, ignored);
}

}  // namespace libreyolo::cli
