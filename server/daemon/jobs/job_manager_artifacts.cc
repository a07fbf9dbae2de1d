// The job manager's side of the artifact checks (job_manager.h, VerifiedArtifactPath): the
// check itself is ArtifactVerifier's (artifact_verifier.h); a corrupt artifact is counted,
// logged and recorded as the job's "corrupt" event here.
#include <iostream>

#include "absl/strings/str_cat.h"
#include "server/daemon/jobs/job_manager.h"

namespace libreyolo::daemon {

absl::StatusOr<std::string> JobManager::VerifiedArtifactPath(const v1::Job& job,
                                                             const std::string& name) {
  const ArtifactVerifier::Check check = verifier_.Verify(job, name);  // hashes outside mu_
  if (check.checked) {
    // Remembered only while the job is there: retention forgets a job's entries as it deletes
    // the job (both under mu_), so a check that raced the deletion leaves nothing behind.
    std::lock_guard<std::mutex> lock(mu_);
    verifier_.Record(check, jobs_.count(job.id()) != 0);
  }
  if (check.served.ok() || !absl::IsDataLoss(check.served.status())) return check.served;
  const absl::Status& st = check.served.status();
  std::cerr << "libreyolod: job " << job.id() << ": " << st.message()
            << "; refusing to serve it (run `libreyolod scrub` to check the whole store)"
            << std::endl;
  std::lock_guard<std::mutex> lock(mu_);
  ++artifacts_corrupt_;
  auto it = jobs_.find(job.id());
  if (it != jobs_.end()) AppendNoteLocked(*it->second, "corrupt", 0, 0, std::string(st.message()));
  return st;
}

size_t JobManager::VerifiedArtifactsRemembered() const { return verifier_.remembered(); }

}  // namespace libreyolo::daemon
