#include "server/daemon/jobs/artifact_verifier.h"

#include "absl/strings/str_cat.h"

namespace libreyolo::daemon {

ArtifactVerifier::Check ArtifactVerifier::Verify(const v1::Job& job,
                                                 const std::string& name) const {
  Check check{store_->ArtifactPath(job, name), false, "", ""};
  if (!check.served.ok()) return check;
  const v1::Artifact* artifact = nullptr;
  for (const v1::Artifact& a : job.artifacts()) {
    if (a.name() == name) artifact = &a;
  }
  if (artifact == nullptr) {
    check.served = absl::NotFoundError(absl::StrCat("job ", job.id(), " has no artifact ", name));
    return check;
  }
  check.key = absl::StrCat(job.id(), "/", name);
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = intact_.find(check.key);
    if (it != intact_.end()) check.identity = it->second;
  }
  check.checked = true;
  if (absl::Status s = store_->VerifyArtifact(job.id(), *artifact, &check.identity); !s.ok()) {
    check.served = s;
  }
  return check;
}

void ArtifactVerifier::Record(const Check& check, bool job_present) {
  if (!check.checked) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (check.served.ok() && job_present) {
    intact_[check.key] = check.identity;
  } else {
    intact_.erase(check.key);
  }
}

void ArtifactVerifier::Forget(const std::string& job_id) {
  const std::string prefix = absl::StrCat(job_id, "/");
  std::lock_guard<std::mutex> lock(mu_);
  auto it = intact_.lower_bound(prefix);
  while (it != intact_.end() && it->first.compare(0, prefix.size(), prefix) == 0) {
    it = intact_.erase(it);
  }
}

size_t ArtifactVerifier::remembered() const {
  std::lock_guard<std::mutex> lock(mu_);
  return intact_.size();
}

}  // namespace libreyolo::daemon
