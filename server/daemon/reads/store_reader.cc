#include "server/daemon/reads/store_reader.h"

#include <map>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/io/trace_artifact.h"
#include "common/io/trial_artifacts.h"
#include "common/job/names.h"
#include "common/load/load_profile.h"
#include "common/status/status_macros.h"

namespace libreyolo::daemon {

absl::StatusOr<JobId> JobId::Parse(absl::string_view id, absl::string_view field) {
  RETURN_IF_ERROR(CheckJobId(id, field));
  return JobId(std::string(id));
}

std::string ArtifactRef::Label() const {
  return absl::StrCat("job:", job.str(), artifact.empty() ? "" : "/", artifact);
}

absl::StatusOr<std::string> StoreReader::PathOf(const Identity& who, const JobId& id,
                                                const std::string& name) const {
  ASSIGN_OR_RETURN(v1::Job job, jobs_.readable(who, id.str()));
  if (job.artifacts_size() == 0) {
    return absl::NotFoundError(absl::StrCat("job ", job.id(), " has no profile (state ",
                                            v1::JobState_Name(job.state()), ")"));
  }
  if (!name.empty()) return jobs_.verified_path(job, name);
  std::vector<std::string> names;
  for (const v1::Artifact& a : job.artifacts()) names.push_back(a.name());
  return jobs_.verified_path(job, JobProfileArtifact(names));
}

absl::StatusOr<TraceInput> StoreReader::TraceOf(const Identity& who,
                                                const ArtifactRef& ref) const {
  const std::string name = TraceArtifactBeside(ref.artifact);
  absl::StatusOr<std::string> path = PathOf(who, ref.job, name);
  if (!path.ok()) {
    if (path.status().code() != absl::StatusCode::kNotFound) return path.status();
    return absl::FailedPreconditionError(
        absl::StrCat("modules reads the Chrome trace, and job ", ref.job.str(), " has no ", name,
                     " (", path.status().message(), ")"));
  }
  return TraceInput{*std::move(path), ArtifactRef{ref.job, name}.Label()};
}

absl::StatusOr<ReaderOutput> StoreReader::Read(const Identity& who, ReaderInvocation inv,
                                               const std::vector<ArtifactRef>& refs) const {
  // RunReader names its inputs by strings: here each is its ref's label, the name the view
  // shows, and leads back to the ref itself (one label, one ref).
  std::map<std::string, const ArtifactRef*> by_label;
  inv.inputs.clear();
  inv.labels.clear();
  for (const ArtifactRef& ref : refs) {
    const std::string label = ref.Label();
    by_label.emplace(label, &ref);
    inv.inputs.push_back(label);
    inv.labels.push_back(label);
  }
  auto load = [&](const std::string& input) -> absl::StatusOr<Profile> {
    const ArtifactRef& ref = *by_label.at(input);
    ASSIGN_OR_RETURN(std::string path, PathOf(who, ref.job, ref.artifact));
    return LoadProfile(path);
  };
  auto locate = [&](const std::string& input, const Profile&) -> absl::StatusOr<TraceInput> {
    return TraceOf(who, *by_label.at(input));
  };
  return RunReader(inv, load, locate);
}

absl::StatusOr<ServedArtifact> StoreReader::Artifact(const Identity& who, const JobId& id,
                                                     const std::string& name) const {
  ASSIGN_OR_RETURN(v1::Job job, jobs_.readable(who, id.str()));
  ASSIGN_OR_RETURN(std::string path, jobs_.verified_path(job, name));
  ServedArtifact served{std::move(path), ""};
  for (const v1::Artifact& a : job.artifacts()) {
    if (a.name() == name) served.sha256 = a.sha256();
  }
  return served;
}

}  // namespace libreyolo::daemon
