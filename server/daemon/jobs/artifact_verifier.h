// Issue 39 §2, JobManager's artifact seam: what the daemon serves is what a job published. An
// artifact's bytes are checked against the size and SHA-256 recorded when it was published; a
// file whose identity (device, inode, size, change times) is unchanged since its last intact
// check is not hashed again. The job manager decides what a check means for the job (a
// "corrupt" event, the counter) and when a job's entries go (retention, DeleteJob).
#ifndef LIBREYOLO_SERVER_DAEMON_JOBS_ARTIFACT_VERIFIER_H_
#define LIBREYOLO_SERVER_DAEMON_JOBS_ARTIFACT_VERIFIER_H_

#include <cstddef>
#include <map>
#include <mutex>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "libreyolo/profiler/v1/profiler.pb.h"
#include "server/daemon/store/job_store.h"

namespace libreyolo::daemon {

namespace v1 = ::libreyolo::profiler::v1;

class ArtifactVerifier {
 public:
  explicit ArtifactVerifier(const JobStore* store) : store_(store) {}

  // One check of artifact `name` of `job`: `served` is its path, or why it may not be served
  // (the store's ArtifactPath errors; NOT_FOUND for a name the job did not publish; DATA_LOSS
  // naming both digests for bytes that differ). `checked` when the bytes were looked at (the
  // outcome is then Record'ed).
  struct Check {
    absl::StatusOr<std::string> served;
    bool checked = false;
    std::string key;       // "<job>/<artifact>"
    std::string identity;  // of the file as checked
  };
  // Hashes outside every lock but its own short look-up: call it with none held.
  Check Verify(const v1::Job& job, const std::string& name) const;

  // Remembers an intact file for next time, while its job is still there (`job_present`,
  // decided under the caller's lock, which Forget also runs under, so a check racing the job's
  // deletion leaves nothing behind); forgets the entry otherwise.
  void Record(const Check& check, bool job_present);
  // Forgets every entry of job `job_id` (it is deleted).
  void Forget(const std::string& job_id);
  // How many artifacts are remembered as intact.
  size_t remembered() const;

 private:
  const JobStore* store_;
  mutable std::mutex mu_;
  std::map<std::string, std::string> intact_ ABSL_GUARDED_BY(mu_);  // key -> identity
};

}  // namespace libreyolo::daemon

#endif  // LIBREYOLO_SERVER_DAEMON_JOBS_ARTIFACT_VERIFIER_H_
