// The one flag table of a job's options: the flags of `libreyolo profile infer|run` and of
// bench/engine_tool (`libreyolo-engine infer|run`), each naming a field of the proto's job spec
// (InferSpec, RunSpec, ModelOptions, ProfilerOptions), with the spec's defaults
// (wire/job_spec/job_defaults.h) in its help. Reading a command line fills the spec with the
// flags given and nothing else: an unset field takes its default where the spec is applied
// (jobspec::ApplyDefaults), and its values are checked by the spec's validator
// (jobspec::ValidateInferSpec / ValidateRunSpec). Torch-free, like all of client/.
#ifndef LIBREYOLO_CLIENT_CLI_JOB_FLAGS_H_
#define LIBREYOLO_CLIENT_CLI_JOB_FLAGS_H_

#include <functional>
#include <vector>

#include "absl/status/status.h"
#include "client/cli/args.h"
#include "libreyolo/profiler/v1/profiler.pb.h"

namespace libreyolo::cli {

// ModelOptions, then the command's own fields, then ProfilerOptions.
std::vector<FlagSpec> InferSpecFlags();
std::vector<FlagSpec> RunSpecFlags();

// Fills `spec` from the flags given (positional 0: the source, or the dataset) as the user wrote
// them; --device is always set (the CLI's default, 0, when absent). INVALID_ARGUMENT naming the
// flag for a value that is not a number, or --steps and --active that disagree.
absl::Status ReadInferSpec(const ParsedArgs& args, ::libreyolo::profiler::v1::InferSpec* spec);
absl::Status ReadRunSpec(const ParsedArgs& args, ::libreyolo::profiler::v1::RunSpec* spec);

// A run across hosts (--nnodes N, N > 1): the rendezvous from the flags, or where a flag is
// absent from the scheduler's environment, torchrun's and Slurm's conventions and a
// Kubernetes Indexed Job's: --node-rank from NODE_RANK, SLURM_NODEID or JOB_COMPLETION_INDEX;
// --master-addr and --master-port from MASTER_ADDR and MASTER_PORT; --group-id from
// SLURM_JOB_ID ("slurm-<id>"). Without --nnodes the environment is not read (a single-host
// profile inside a multi-node allocation stays single-host). `env` is getenv in the CLI.
absl::Status ReadRendezvous(const ParsedArgs& args,
                            const std::function<const char*(const char*)>& env,
                            ::libreyolo::profiler::v1::Rendezvous* rendezvous);

}  // namespace libreyolo::cli

#endif  // LIBREYOLO_CLIENT_CLI_JOB_FLAGS_H_
