// The commands that talk to a daemon about jobs: `libreyolo profile run|infer` (submit a job,
// follow it, fetch its artifacts into --project, print the summary: profile_job_commands.cc,
// its request built by job_request.h from the shared flag table client/cli/job_flags.h) and
// `libreyolo jobs list|show|watch|cancel|delete|download` (jobs_commands.cc).
#ifndef LIBREYOLO_CLIENT_COMMANDS_JOB_COMMANDS_H_
#define LIBREYOLO_CLIENT_COMMANDS_JOB_COMMANDS_H_

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/cli/args.h"
#include "libreyolo/profiler/v1/profiler.pb.h"

namespace libreyolo::cli {

struct JobCommand {
  CommandSpec spec;
  int (*run)(const ParsedArgs& args, std::ostream& out, std::ostream& err);
};

// `profile run` and `profile infer`.
const std::vector<JobCommand>& ProfileJobCommands();
// What run, infer and attach share (profile_job_commands.cc): submit the request `build`
// makes from the flags, follow the job's events, fetch its artifacts into --project and
// print the summary (--detach: print the id once queued).
using RequestBuilder = absl::StatusOr<::libreyolo::profiler::v1::SubmitJobRequest> (*)(
    const ParsedArgs& args, bool remote);
int SubmitJobAndFollow(const std::string& cmd, const ParsedArgs& a, std::ostream& out,
                       std::ostream& err, RequestBuilder build);
// The request's own flags: --label, --priority, --time-limit, --detach, --project, --json.
std::vector<FlagSpec> JobRequestFlags();
// The `jobs` group's subcommands.
const std::vector<JobCommand>& JobsCommands();

// What `run`/`infer --json` adds to the summary: the job and its files, and the Python
// LibreYOLO's keys for the same command (profile, trace, img_per_s_std, img_per_s_n and, for
// inference, latency_p50_ms/p90/p99).
struct JobJsonFields {
  std::string job_id;
  std::string profile_path;  // the fetched profile.json
  std::string profile;       // the Python tool's `profile`: the repeat file when there is one
  std::string trace;         // the fetched profile_trace.json; "" keeps the summary's `trace`
  std::optional<double> img_per_s_std;  // null for a single trial
  int64_t img_per_s_n = 1;
};

// Before a `profile run` job's files are fetched into <project>/prof/: what an earlier run of the
// other shape left there goes, each removal said on `err` ("removed PATH (why)", or a JSON line).
// A data-parallel run of `world_size` ranks removes rank folders at or past it and a
// single-device run's files at the top (profile.json, profile_trace*.json, report.html);
// a single-device run (`world_size` 0) removes every rank folder. Nothing else is touched.
void RemoveOtherRuns(const std::string& project, int world_size, std::ostream& err, bool json);

// `run`/`infer --json`'s stdout document: `job_id`, `profile_path` first, then the Python tool's
// keys, then the summary's own keys (a key the fields above set is not repeated).
std::string WithJobFields(const std::string& summary_json, const JobJsonFields& f);

}  // namespace libreyolo::cli

#endif  // LIBREYOLO_CLIENT_COMMANDS_JOB_COMMANDS_H_
