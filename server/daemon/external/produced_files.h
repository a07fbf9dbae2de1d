// The piece an attach job (issue 37) and a delegated Python job (issue 38 §4) share: a profile
// made outside the engine, taken into a job. A process the daemon does not control writes files
// for the job (a traced process's Kineto trace; the Python LibreYOLO's profile.json and trace)
// into a drop folder the daemon made for that job; the daemon takes them into the job's
// artifacts without trusting the writer, and, for traces, analyses them into the job's profile.
//
// Rules, for every file taken: opened relative to the drop folder's descriptor with O_NOFOLLOW
// (a symlink planted there is refused, never followed), a regular file, owned by the folder's
// producer, at most the job's artifact limit; copied through that descriptor into the job's
// scratch (so a rename or truncate by the producer afterwards changes nothing stored), then
// published. Nothing outside the drop folder is read; nothing is written outside the job.
//
// Plain C++ over the store and common/ (no gRPC, no LibTorch).
#ifndef LIBREYOLO_SERVER_DAEMON_EXTERNAL_PRODUCED_FILES_H_
#define LIBREYOLO_SERVER_DAEMON_EXTERNAL_PRODUCED_FILES_H_

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "libreyolo/profiler/v1/profiler.pb.h"
#include "server/daemon/jobs/job_runner.h"
#include "server/daemon/store/job_store.h"

namespace libreyolo::daemon::external {

namespace v1 = ::libreyolo::profiler::v1;

// Who made a job's profile (Job.tool): defined with the JobRunner interface.
using ::libreyolo::daemon::kToolEngine;
using ::libreyolo::daemon::kToolKineto;
using ::libreyolo::daemon::kToolPython;

// A job's drop folder: `<parent>/<job id>`, mode 0700, owned by `producer` (the traced
// process's user; the daemon's own for a process it starts), so that only the producer and the
// daemon can write there. `parent` must exist; it is made 01777-style safe by the caller (the
// attach job uses /tmp/libreyolod-<daemon uid>/ or the process's KINETO_ONDEMAND_TRACE_DIR).
struct DropFolder {
  std::string path;
  uid_t producer = 0;
};

// Makes the folder (an existing entry of that name, a symlink included, is an error: nothing is
// reused). Changing its owner needs the daemon to be root; a daemon that is not can only make
// folders for its own uid (FAILED_PRECONDITION naming the user otherwise).
absl::StatusOr<DropFolder> MakeDropFolder(const std::string& parent, const std::string& job_id,
                                          uid_t producer);
// Removes the folder and what is left in it (best effort; never follows a symlink).
void RemoveDropFolder(const DropFolder& folder);

// One file to take: its name in the drop folder (plain, no '/') and the artifact name it is
// stored under (common/job/names.h: IsPlainArtifactName).
struct ProducedFile {
  std::string name;
  std::string artifact;
};

// Takes the files into `job_id`'s artifacts by the rules above. On an error nothing of this
// call stays published (the caller fails the job; its other artifacts are the caller's): the
// message names the file and why ("od_4242.json in the drop folder is a symbolic link: refused").
absl::StatusOr<std::vector<v1::Artifact>> TakeProducedFiles(const DropFolder& folder,
                                                           const std::vector<ProducedFile>& files,
                                                           JobStore* store,
                                                           const std::string& job_id,
                                                           int64_t max_bytes);

// One traced process: its facts and the name of its finished Kineto trace in the drop folder
// ("od_4242.json": Kineto's ACTIVITIES_LOG_FILE with _<pid> before .json).
struct TracedProcess {
  int32_t pid = 0;
  std::optional<int64_t> rank;  // RANK of its environment
  std::string command_line;
  std::string trace_file;
  // WORLD_SIZE of its environment; without it, the number of processes traced (when their
  // RANKs are 0..n-1).
  std::optional<int64_t> world_size = std::nullopt;
};

// What an analysed external trace says it is, for the profile's header.
struct TraceOrigin {
  std::string tool = kToolKineto;
  std::string request_trace_id;  // the REQUEST_TRACE_ID given (the job id): checked in the file
};

// Takes the traces from the folder (TakeProducedFiles' rules) and analyses them into the job's
// profile (common/analysis/trace_analyser.h), publishing both: one process -> profile_trace.json
// and profile.json over it (its "trace" naming it, its tool `origin.tool`); several -> each
// rank's trace and profile under the rank names of common/io/rank_artifacts.h (by RANK, else in
// pid order) and the cross-rank view in rank 0's profile, as a data-parallel job's. The ranks
// and world size are the processes' (RANK, WORLD_SIZE) where the traces carry no
// distributedInfo, and written into each profile's config.traced_process, so that the folder
// reader reads the downloaded files alike; traces without ProfilerStep marks (Kineto's
// on-demand traces) are compared over the window they all recorded (common/readers/
// ranks_view.h). A trace whose top-level trace_id is not `origin.request_trace_id` is refused
// (DATA_LOSS: not the trace this job asked for). Appends every artifact published to
// `artifacts`.
absl::Status AnalyseIntoJob(const v1::Job& job, const DropFolder& folder,
                            const std::vector<TracedProcess>& processes,
                            const TraceOrigin& origin, JobStore* store, int64_t max_bytes,
                            std::vector<v1::Artifact>* artifacts);

}  // namespace libreyolo::daemon::external

#endif  // LIBREYOLO_SERVER_DAEMON_EXTERNAL_PRODUCED_FILES_H_
