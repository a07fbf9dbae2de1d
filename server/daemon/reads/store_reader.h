// Reads in the daemon's core, without gRPC: a reader (summary, modules, compare, ...) or an
// artifact download over jobs in the store, for one caller. Inputs are typed (a checked job id
// and an artifact name), never "<job>/<artifact>" strings or paths from a request; the trace
// beside a profile is found by the rule the client's local reads share
// (common/io/trace_artifact.h). The RPC layer (server/daemon/rpc/profiler_service.cc) only
// authenticates, takes a slot, calls this and maps the status.
#ifndef LIBREYOLO_SERVER_DAEMON_READS_STORE_READER_H_
#define LIBREYOLO_SERVER_DAEMON_READS_STORE_READER_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/readers/run_reader.h"
#include "libreyolo/profiler/v1/profiler.pb.h"
#include "server/daemon/security/auth.h"

namespace libreyolo::daemon {

namespace v1 = ::libreyolo::profiler::v1;

// A job id that passed the one job-id rule (common/job/names.h, IsJobId).
class JobId {
 public:
  // INVALID_ARGUMENT naming `field` ("profile.job_id") when `id` is no job id.
  static absl::StatusOr<JobId> Parse(absl::string_view id, absl::string_view field = "job_id");
  const std::string& str() const { return id_; }

 private:
  explicit JobId(std::string id) : id_(std::move(id)) {}
  std::string id_;
};

// One artifact of one job. An empty `artifact` is the job's profile (JobProfileArtifact: a
// --repeat job's repeat file, else profile.json), chosen once the job is read.
struct ArtifactRef {
  JobId job;
  std::string artifact;
  // How a view names it: "job:<id>", or "job:<id>/<artifact>".
  std::string Label() const;
};

// What a read needs of the job manager (JobManager::Readable and VerifiedArtifactPath): the
// jobs `who` may read, and an artifact's path once its bytes match what the job published.
struct JobArtifacts {
  std::function<absl::StatusOr<v1::Job>(const Identity& who, const std::string& id)> readable;
  std::function<absl::StatusOr<std::string>(const v1::Job& job, const std::string& name)>
      verified_path;
};

// An artifact to stream: where it is and the digest the job recorded for it.
struct ServedArtifact {
  std::string path;
  std::string sha256;
};

class StoreReader {
 public:
  explicit StoreReader(JobArtifacts jobs) : jobs_(std::move(jobs)) {}

  // Runs reader `invocation` (its inputs and labels are set here) over `refs`, in the reader's
  // order, for `who`: the shared RunReader (common/readers/run_reader.h) with a loader and a
  // trace locator that read verified artifacts of jobs `who` may read. Errors: the job
  // manager's (NOT_FOUND, PERMISSION_DENIED, DATA_LOSS for a corrupt artifact), NOT_FOUND for a
  // job with no profile yet, FAILED_PRECONDITION for `modules` on a job without the trace, and
  // RunReader's own.
  absl::StatusOr<ReaderOutput> Read(const Identity& who, ReaderInvocation invocation,
                                    const std::vector<ArtifactRef>& refs) const;

  // Artifact `name` of job `job` for a download, verified. The job manager's errors.
  absl::StatusOr<ServedArtifact> Artifact(const Identity& who, const JobId& job,
                                          const std::string& name) const;

 private:
  // The verified path of `ref`'s artifact, or of artifact `name` of its job when given;
  // NOT_FOUND for a job with no artifacts (no profile yet).
  absl::StatusOr<std::string> PathOf(const Identity& who, const JobId& job,
                                     const std::string& name) const;
  // modules: the trace beside `ref` (TraceArtifactBeside), as a path and a label.
  absl::StatusOr<TraceInput> TraceOf(const Identity& who, const ArtifactRef& ref) const;

  JobArtifacts jobs_;
};

}  // namespace libreyolo::daemon

#endif  // LIBREYOLO_SERVER_DAEMON_READS_STORE_READER_H_
