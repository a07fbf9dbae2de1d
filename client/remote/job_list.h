// `libreyolo jobs list --limit N`: ListJobs page after page (a daemon answers at most 500 jobs a
// page, docs/rpc.md) until N jobs or the last page.
#ifndef LIBREYOLO_CLIENT_REMOTE_JOB_LIST_H_
#define LIBREYOLO_CLIENT_REMOTE_JOB_LIST_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "client/remote/daemon_connection.h"
#include "libreyolo/profiler/v1/profiler.pb.h"

namespace libreyolo::cli {

namespace v1 = ::libreyolo::profiler::v1;

// The jobs `request` matches, at most `limit` (>= 1), in the daemon's order (newest first). The
// answer's next_page_token is the last page's: non-empty when more jobs match. A page that adds
// no job ends the walk, so a daemon that keeps handing out tokens cannot hold the command; a
// page with more jobs than asked is cut. Errors: FromGrpc's, naming the address.
absl::StatusOr<v1::ListJobsResponse> ListJobsUpTo(DaemonConnection& c, v1::ListJobsRequest request,
                                                  int64_t limit);

}  // namespace libreyolo::cli

#endif  // LIBREYOLO_CLIENT_REMOTE_JOB_LIST_H_
