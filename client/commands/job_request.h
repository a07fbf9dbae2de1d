// The SubmitJobRequest of `libreyolo profile infer|run|attach`: the job's options from the shared flag
// table (client/cli/job_flags.h), the request's labels and priority, and where the inputs come
// from: on a private daemon (same user, same files) local paths made absolute; on a --remote
// one, local images sent inline and other names left for the daemon's directories.
#ifndef LIBREYOLO_CLIENT_COMMANDS_JOB_REQUEST_H_
#define LIBREYOLO_CLIENT_COMMANDS_JOB_REQUEST_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "client/cli/args.h"
#include "libreyolo/profiler/v1/profiler.pb.h"

namespace libreyolo::cli {

// NOT_FOUND for a local path that does not exist (exit 2), INVALID_ARGUMENT for a bad flag.
// The default `infer` source, as the Python LibreYOLO's (`libreyolo.SAMPLE_IMAGE`): the
// photograph its package bundles (assets/parkour.jpg) when the Python tool this binary hands
// over to is installed (python_cli.h), so that default numbers of both tools compare;
// nothing otherwise (the daemon's generated sample image). `Beside`: for the Python CLI script
// at `python_cli` (<prefix>/bin/libreyolo, its package under <prefix>/lib/python3.*/).
std::optional<std::string> PythonSampleImage();
std::optional<std::string> PythonSampleImageBeside(const std::string& python_cli);

absl::StatusOr<::libreyolo::profiler::v1::SubmitJobRequest> BuildInferRequest(
    const ParsedArgs& args, bool remote);
absl::StatusOr<::libreyolo::profiler::v1::SubmitJobRequest> BuildRunRequest(
    const ParsedArgs& args, bool remote);
// `profile attach --pid N | --slurm-job J | --all` (issue 37): an AttachSpec.
absl::StatusOr<::libreyolo::profiler::v1::SubmitJobRequest> BuildAttachRequest(
    const ParsedArgs& args, bool remote);

}  // namespace libreyolo::cli

#endif  // LIBREYOLO_CLIENT_COMMANDS_JOB_REQUEST_H_
