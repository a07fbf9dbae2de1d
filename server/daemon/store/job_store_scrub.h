// Checking the whole store (issue 23, item 6): every artifact a job record names is read back
// and compared with its recorded size and SHA-256. Read-only, so it may run beside a daemon on
// the same directories (`libreyolod scrub`, docs/deploy.md); a daemon verifies each artifact
// itself before serving it (JobManager::VerifiedArtifactPath).
#ifndef LIBREYOLO_SERVER_DAEMON_STORE_JOB_STORE_SCRUB_H_
#define LIBREYOLO_SERVER_DAEMON_STORE_JOB_STORE_SCRUB_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace libreyolo::daemon {

struct ScrubReport {
  int64_t jobs = 0;       // records read
  int64_t artifacts = 0;  // artifacts checked
  int64_t bytes = 0;      // bytes hashed
  // "<job>/<artifact>: <what is wrong>", one per corrupt, missing or unreadable artifact or
  // unreadable record.
  std::vector<std::string> problems;
};

// Every record under <state_dir>/jobs and each artifact it names under <store_dir>/<id>/.
// An error only when the jobs directory cannot be listed.
absl::StatusOr<ScrubReport> ScrubStore(const std::string& state_dir, const std::string& store_dir);

// `libreyolod scrub [--state-dir DIR] [--store-dir DIR]` (the daemon's defaults otherwise):
// one line per problem and a summary; exits 0 when all is intact, 1 when something is not, 2
// on a usage error.
int ScrubMain(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace libreyolo::daemon

#endif  // LIBREYOLO_SERVER_DAEMON_STORE_JOB_STORE_SCRUB_H_
