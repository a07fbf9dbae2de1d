// Readers on profiles stored on a daemon: `job:<id>` (or `job:<id>/profile_repeat.json`), or a
// bare job id when --remote is given. Answered by the daemon's reader RPCs, which run the same
// common/readers code as a local read.
#ifndef LIBREYOLO_CLIENT_REMOTE_REMOTE_READER_H_
#define LIBREYOLO_CLIENT_REMOTE_REMOTE_READER_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/cli/args.h"
#include "client/remote/daemon_connection.h"
#include "common/readers/run_reader.h"

namespace libreyolo::cli {

struct JobRef {
  std::string job_id;
  std::string artifact;  // "" = profile.json
};

// "job:<id>" / "job:<id>/<artifact>"; with `bare_ok`, also "<id>" that is not a local file.
std::optional<JobRef> ParseJobRef(const std::string& input, bool bare_ok);

// True when any input names a stored job (see above).
bool UsesDaemon(const std::vector<std::string>& inputs, const ParsedArgs& args);

// Downloads the inputs that name stored jobs into <dir>/<index>/ (the profile, and with
// `with_trace` also the job's profile_trace.json when it has one, beside it as the job stored
// them) and returns the local path of every input (local files unchanged). Errors keep the
// daemon's meaning (NOT_FOUND for an unknown job, UNAVAILABLE for no daemon, ...).
absl::StatusOr<std::vector<std::string>> FetchJobInputs(const std::vector<std::string>& inputs,
                                                        const ParsedArgs& args,
                                                        const std::string& dir, bool with_trace);

// Runs the reader through the daemon (all inputs jobs), or downloads the jobs' profiles and
// reads them here alongside local files (a mix).
absl::StatusOr<ReaderOutput> RunRemoteReader(const ReaderInvocation& invocation,
                                             const ParsedArgs& args);

// RunRemoteReader's all-jobs case on an open connection: one Read RPC over `jobs`. A daemon
// without Read (UNIMPLEMENTED: an older libreyolod) is FAILED_PRECONDITION naming its address;
// any other error as FromGrpc (UNAVAILABLE with the hint naming the address).
absl::StatusOr<ReaderOutput> ReadOnDaemon(DaemonConnection& c, const ReaderInvocation& invocation,
                                          const std::vector<JobRef>& jobs);

}  // namespace libreyolo::cli

#endif  // LIBREYOLO_CLIENT_REMOTE_REMOTE_READER_H_
