// The SubmitJobRequest of `libreyolo profile infer|run`: the job's options from the shared flag
// table (client/cli/job_flags.h), the request's labels and priority, and where the inputs come
// from: on a private daemon (same user, same files) local paths made absolute; on a --remote
// one, local images sent inline and other names left for the daemon's directories.
#ifndef LIBREYOLO_CLIENT_COMMANDS_JOB_REQUEST_H_
#define LIBREYOLO_CLIENT_COMMANDS_JOB_REQUEST_H_

#include "absl/status/statusor.h"
#include "client/cli/args.h"
#include "libreyolo/profiler/v1/profiler.pb.h"

namespace libreyolo::cli {

// NOT_FOUND for a local path that does not exist (exit 2), INVALID_ARGUMENT for a bad flag.
absl::StatusOr<::libreyolo::profiler::v1::SubmitJobRequest> BuildInferRequest(
    const ParsedArgs& args, bool remote);
absl::StatusOr<::libreyolo::profiler::v1::SubmitJobRequest> BuildRunRequest(
    const ParsedArgs& args, bool remote);

}  // namespace libreyolo::cli

#endif  // LIBREYOLO_CLIENT_COMMANDS_JOB_REQUEST_H_
