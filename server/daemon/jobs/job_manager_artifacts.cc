// The job manager's artifact checks (job_manager.h, VerifiedArtifactPath): what the daemon
// serves is what the job published, or DATA_LOSS.
#include <iostream>

#include "absl/strings/str_cat.h"
#include "server/daemon/jobs/job_manager.h"

namespace libreyolo::daemon {

absl::StatusOr<std::string> JobManager::VerifiedArtifactPath(const v1::Job& job,
                                                             const std::string& name) {
  absl::StatusOr<std::string> path = store_->ArtifactPath(job, name);
  if (!path.ok()) return path.status();
  const v1::Artifact* artifact = nullptr;
  for (const v1::Artifact& a : job.artifacts()) {
    if (a.name() == name) artifact = &a;
  }
  if (artifact == nullptr)
    return absl::NotFoundError(absl::StrCat("job ", job.id(), " has no artifact ", name));
  const std::string key = absl::StrCat(job.id(), "/", name);
  std::string identity;
  {
    std::lock_guard<std::mutex> lock(verified_mu_);
    auto it = verified_.find(key);
    if (it != verified_.end()) identity = it->second;
  }
  const absl::Status st = store_->VerifyArtifact(job.id(), *artifact, &identity);
  {
    // Remembered only while the job is there: retention forgets a job's entries as it deletes
    // the job (both under mu_), so a check that raced the deletion leaves nothing behind.
    std::lock_guard<std::mutex> jobs_lock(mu_);
    std::lock_guard<std::mutex> lock(verified_mu_);
    if (st.ok() && jobs_.count(job.id()) != 0) {
      verified_[key] = identity;
    } else {
      verified_.erase(key);
    }
  }
  if (st.ok()) return path;
  if (!absl::IsDataLoss(st)) return st;
  std::cerr << "libreyolod: job " << job.id() << ": " << st.message()
            << "; refusing to serve it (run `libreyolod scrub` to check the whole store)"
            << std::endl;
  std::lock_guard<std::mutex> lock(mu_);
  ++artifacts_corrupt_;
  auto it = jobs_.find(job.id());
  if (it != jobs_.end()) AppendNoteLocked(*it->second, "corrupt", 0, 0, std::string(st.message()));
  return st;
}

void JobManager::ForgetVerifiedLocked(const std::string& job_id) {
  const std::string prefix = absl::StrCat(job_id, "/");
  std::lock_guard<std::mutex> lock(verified_mu_);
  auto it = verified_.lower_bound(prefix);
  while (it != verified_.end() && it->first.compare(0, prefix.size(), prefix) == 0) {
    it = verified_.erase(it);
  }
}

size_t JobManager::VerifiedArtifactsRemembered() const {
  std::lock_guard<std::mutex> lock(verified_mu_);
  return verified_.size();
}

}  // namespace libreyolo::daemon
