// The commands that talk to a daemon about jobs: `libreyolo profile run|infer` (submit a job,
// follow it, fetch its artifacts into --project, print the summary: profile_job_commands.cc,
// its request built by job_request.h from the shared flag table client/cli/job_flags.h) and
// `libreyolo jobs list|show|watch|cancel|download` (jobs_commands.cc).
#ifndef LIBREYOLO_CLIENT_COMMANDS_JOB_COMMANDS_H_
#define LIBREYOLO_CLIENT_COMMANDS_JOB_COMMANDS_H_

#include <ostream>
#include <string>
#include <vector>

#include "client/cli/args.h"

namespace libreyolo::cli {

struct JobCommand {
  CommandSpec spec;
  int (*run)(const ParsedArgs& args, std::ostream& out, std::ostream& err);
};

// `profile run` and `profile infer`.
const std::vector<JobCommand>& ProfileJobCommands();
// The `jobs` group's subcommands.
const std::vector<JobCommand>& JobsCommands();

// `run`/`infer --json`'s stdout document: the summary's JSON object with `job_id` and
// `profile_path` as its first keys.
std::string WithJobFields(const std::string& summary_json, const std::string& job_id,
                          const std::string& profile_path);

}  // namespace libreyolo::cli

#endif  // LIBREYOLO_CLIENT_COMMANDS_JOB_COMMANDS_H_
