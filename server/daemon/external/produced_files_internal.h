// What produced_files.cc and produced_analysis.cc share; not part of the interface.
#ifndef LIBREYOLO_SERVER_DAEMON_EXTERNAL_PRODUCED_FILES_INTERNAL_H_
#define LIBREYOLO_SERVER_DAEMON_EXTERNAL_PRODUCED_FILES_INTERNAL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/io/unique_fd.h"
#include "server/daemon/external/produced_files.h"

namespace libreyolo::daemon::external::internal {

// The folder, opened without following a link, and owned by its producer (FAILED_PRECONDITION
// when it is not: replaced since it was made).
absl::StatusOr<UniqueFd> OpenDropFolder(const DropFolder& folder);

// One file taken by the rules of produced_files.h into `scratch`, then published.
absl::StatusOr<v1::Artifact> TakeOne(int dir, const DropFolder& folder, const ProducedFile& file,
                                     const std::string& scratch, JobStore* store,
                                     const std::string& job_id, int64_t max_bytes);

// Removes the artifacts this call published (best effort): a failed take leaves none.
void UnpublishArtifacts(JobStore* store, const std::string& job_id,
                        const std::vector<v1::Artifact>& published);

}  // namespace libreyolo::daemon::external::internal

#endif  // LIBREYOLO_SERVER_DAEMON_EXTERNAL_PRODUCED_FILES_INTERNAL_H_
