// `libreyolo jobs list|show|watch|cancel|delete|download`: the daemon's job records, one RPC each
// (watch: a stream).
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "client/cli/exit_codes.h"
#include "client/commands/command_output.h"
#include "client/commands/job_commands.h"
#include "client/commands/profile_summary_file.h"
#include "client/remote/artifact_download.h"
#include "client/remote/daemon_answer.h"
#include "client/remote/daemon_session.h"
#include "client/remote/job_list.h"
#include "client/remote/job_watch.h"
#include "client/remote/progress_display.h"
#include "common/job/names.h"
#include "common/render/terminal_text.h"
#include "common/status/status_macros.h"
#include "wire/job_spec/job_defaults.h"
#include "wire/job_spec/job_spec.h"

namespace libreyolo::cli {
namespace {

absl::StatusOr<int64_t> IntFlag(const ParsedArgs& a, const std::string& name) {
  auto v = a.Value(name);
  if (!v) return absl::NotFoundError(name);
  return ParseIntFlag(name, *v);
}

// Copies an integer flag into a proto setter when given.
template <typename Set>
absl::Status MaybeInt(const ParsedArgs& a, const std::string& name, Set set) {
  auto v = IntFlag(a, name);
  if (absl::IsNotFound(v.status())) return absl::OkStatus();
  if (!v.ok()) return v.status();
  set(*v);
  return absl::OkStatus();
}

absl::StatusOr<v1::JobState> ParseState(const std::string& s) {
  for (v1::JobState st : {v1::JOB_STATE_QUEUED, v1::JOB_STATE_RUNNING, v1::JOB_STATE_SUCCEEDED,
                          v1::JOB_STATE_FAILED, v1::JOB_STATE_CANCELLED}) {
    if (StateName(st) == absl::AsciiStrToLower(s)) return st;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "--state '", Excerpt(s), "' is not queued, running, succeeded, failed or cancelled"));
}

std::string Age(int64_t unix_ms) {
  if (unix_ms <= 0) return "-";
  return absl::FormatTime("%Y-%m-%d %H:%M:%S", absl::FromUnixMillis(unix_ms), absl::UTCTimeZone());
}

// A job's kind as `jobs list|show` print it.
const char* KindName(v1::JobKind kind) {
  switch (kind) {
    case v1::JOB_KIND_RUN:
      return "run";
    case v1::JOB_KIND_ATTACH:
      return "attach";
    default:
      return "infer";
  }
}

// `jobs list --limit`: its default, and its most (the client pages through ListJobs for it).
constexpr int64_t kDefaultListLimit = 50;
constexpr int64_t kMaxListLimit = 1000000;

int JobsList(const ParsedArgs& a, std::ostream& out, std::ostream& err) {
  v1::ListJobsRequest req;
  for (const std::string& s : a.Values("state")) {
    auto st = ParseState(s);
    if (!st.ok()) return FailStatus(err, "jobs list", st.status());
    req.add_states(*st);
  }
  for (const std::string& l : a.Values("label")) {
    const size_t eq = l.find('=');
    if (eq == std::string::npos)
      return Fail(err, "jobs list", kExitUsage, "--label needs KEY=VALUE");
    (*req.mutable_labels())[l.substr(0, eq)] = l.substr(eq + 1);
  }
  if (auto o = a.Value("owner")) req.set_owner(*o);
  int64_t limit = kDefaultListLimit;
  if (auto st = MaybeInt(a, "limit", [&](int64_t v) { limit = v; }); !st.ok()) {
    return FailStatus(err, "jobs list", st);
  }
  if (limit < 1 || limit > kMaxListLimit) {
    return Fail(err, "jobs list", kExitUsage,
                absl::StrCat("--limit: ", limit, " is outside 1..", kMaxListLimit,
                             " (the most jobs listed)"));
  }
  auto session = DaemonSession::Open(a);
  if (!session.ok()) return FailStatus(err, "jobs list", session.status());
  DaemonConnection& c = (*session)->connection();
  auto listed = ListJobsUpTo(c, req, limit);
  if (!listed.ok()) return FailStatus(err, "jobs list", listed.status());
  const v1::ListJobsResponse& resp = *listed;
  if (a.Switch("json")) {
    out << ProtoJson(resp) << "\n";
    return kExitOk;
  }
  out << absl::StrFormat("%-26s %-6s %-10s %-8s %-10s %-19s %10s  %s\n", "JOB", "KIND", "STATE",
                         "DEVICE", "OWNER", "CREATED (UTC)", "STEP MS", "BOUND / ERROR");
  for (const v1::Job& j : resp.jobs()) {
    std::string state = StateName(j.state());
    if (j.state() == v1::JOB_STATE_QUEUED) state = absl::StrCat("queued#", j.queue_position());
    out << absl::StrFormat("%-26s %-6s %-10s %-8s %-10s %-19s %10s  %s\n", TerminalSafe(j.id()),
                           KindName(j.kind()), state,
                           TerminalSafe(j.device()), TerminalSafe(j.owner()),
                           Age(j.create_time_unix_ms()),
                           j.step_ms() > 0 ? absl::StrFormat("%.2f", j.step_ms()) : "-",
                           TerminalSafe(j.error().empty() ? j.bound() : j.error()));
  }
  if (!resp.next_page_token().empty()) {
    out << "(more than " << limit << ": raise --limit, or narrow with --state or --label)\n";
  }
  return kExitOk;
}

// The job's record (GetJob), its error as the client reports it.
absl::StatusOr<v1::Job> GetJobRecord(DaemonConnection& c, const std::string& id) {
  auto ctx = c.Context(std::chrono::seconds(30));
  v1::GetJobRequest req;
  req.set_job_id(id);
  v1::Job job;
  const grpc::Status s = c.stub().GetJob(ctx.get(), req, &job);
  if (!s.ok()) return FromGrpc(s, c.address());
  RETURN_IF_ERROR(CheckJobAnswer(job, c.address()));
  return job;
}

int JobsShow(const ParsedArgs& a, std::ostream& out, std::ostream& err) {
  auto session = DaemonSession::Open(a);
  if (!session.ok()) return FailStatus(err, "jobs show", session.status());
  auto record = GetJobRecord((*session)->connection(), a.positionals[0]);
  if (!record.ok()) return FailStatus(err, "jobs show", record.status());
  const v1::Job& job = *record;
  if (a.Switch("json")) {
    out << ProtoJson(job) << "\n";
    return kExitOk;
  }
  // Every string of the job comes from the daemon: printed through TerminalSafe.
  out << "job       " << TerminalSafe(job.id()) << "\nkind      "
      << KindName(job.kind()) << "\nstate     "
      << StateName(job.state()) << "\nowner     " << TerminalSafe(job.owner()) << "\ndevice    "
      << TerminalSafe(jobspec::DataParallelJob(job)
                          ? absl::StrCat(absl::StrJoin(job.devices(), ", "), " (",
                                         job.devices_size(),
                                         job.devices_size() == 1 ? " rank)" : " ranks)")
                          : job.device())
      << "\ncreated   " << Age(job.create_time_unix_ms()) << "\nstarted   "
      << Age(job.start_time_unix_ms()) << "\nfinished  " << Age(job.finish_time_unix_ms()) << "\n";
  if (job.world().nnodes() > 1) {
    const v1::JobWorld& w = job.world();
    out << "world     "
        << absl::StrFormat("ranks %d-%d of %d, host %d of %d", w.first_rank(),
                           w.first_rank() + job.devices_size() - 1, w.world_size(), w.node_rank(),
                           w.nnodes())
        << ", group " << TerminalSafe(w.group_id()) << "\n";
  }
  if (job.queue_position() > 0) out << "position  " << job.queue_position() << "\n";
  if (!job.error().empty()) out << "error     " << TerminalSafe(job.error()) << "\n";
  if (job.step_ms() > 0) {
    out << absl::StrFormat("step      %.3f ms, %.2f img/s, %s\n", job.step_ms(), job.img_per_s(),
                           TerminalSafe(job.bound()));
  }
  for (const auto& [k, v] : job.labels()) {
    out << "label     " << TerminalSafe(k) << "=" << TerminalSafe(v) << "\n";
  }
  // An attach job's processes (issue 37): traced (with its trace) or skipped, and why.
  for (const v1::AttachTarget& t : job.attach_targets()) {
    out << "process   " << t.pid() << (t.traced() ? " traced" : " skipped")
        << (t.has_rank() ? absl::StrCat(", rank ", t.rank()) : "")
        << (t.trace().empty() ? "" : absl::StrCat(", ", TerminalSafe(t.trace())))
        << (t.reason().empty() ? "" : absl::StrCat(": ", TerminalSafe(t.reason())))
        << (t.command_line().empty() ? "" : absl::StrCat(" (", TerminalSafe(t.command_line()), ")"))
        << "\n";
  }
  for (const v1::Artifact& art : job.artifacts()) {
    out << absl::StrFormat("artifact  %-28s %12d bytes  sha256 %s\n", TerminalSafe(art.name()),
                           art.size_bytes(), TerminalSafe(art.sha256()));
  }
  return kExitOk;
}

int JobsWatch(const ParsedArgs& a, std::ostream& out, std::ostream& err) {
  int64_t from = 1;
  if (auto st = MaybeInt(a, "from", [&](int64_t v) { from = v; }); !st.ok()) {
    return FailStatus(err, "jobs watch", st);
  }
  auto session = DaemonSession::Open(a);
  if (!session.ok()) return FailStatus(err, "jobs watch", session.status());
  InstallInterruptFlag();
  const bool json = a.Switch("json");
  ProgressDisplay display(err,
                          ::isatty(STDERR_FILENO) ? ProgressStyle::kBar : ProgressStyle::kLines);
  auto w = WatchJob((*session)->connection(), a.positionals[0], from, [&](const v1::JobEvent& e) {
    if (json) {
      out << EventJson(e) << "\n";
      out.flush();
    } else {
      display.Show(e);
    }
  });
  display.Finish();
  if (!w.ok()) return FailStatus(err, "jobs watch", w.status());
  if (w->interrupted) return kExitInterrupted;
  if (!json) out << "job " << TerminalSafe(w->job.id()) << " " << StateName(w->job.state()) << "\n";
  return w->job.state() == v1::JOB_STATE_SUCCEEDED ? kExitOk : std::max(1, w->job.exit_code());
}

int JobsCancel(const ParsedArgs& a, std::ostream& out, std::ostream& err) {
  auto session = DaemonSession::Open(a);
  if (!session.ok()) return FailStatus(err, "jobs cancel", session.status());
  DaemonConnection& c = (*session)->connection();
  auto ctx = c.Context(std::chrono::seconds(30));
  v1::CancelJobRequest req;
  req.set_job_id(a.positionals[0]);
  v1::Job job;
  const grpc::Status s = c.stub().CancelJob(ctx.get(), req, &job);
  if (!s.ok()) return FailStatus(err, "jobs cancel", FromGrpc(s, c.address()));
  out << "job " << TerminalSafe(job.id()) << ": "
      << (job.state() == v1::JOB_STATE_RUNNING ? "cancelling (stops at the next step)"
                                               : StateName(job.state()))
      << "\n";
  return kExitOk;
}

int JobsDelete(const ParsedArgs& a, std::ostream& out, std::ostream& err) {
  auto session = DaemonSession::Open(a);
  if (!session.ok()) return FailStatus(err, "jobs delete", session.status());
  DaemonConnection& c = (*session)->connection();
  auto ctx = c.Context(std::chrono::seconds(60));
  v1::DeleteJobRequest req;
  req.set_job_id(a.positionals[0]);
  v1::Job job;
  const grpc::Status s = c.stub().DeleteJob(ctx.get(), req, &job);
  if (!s.ok()) return FailStatus(err, "jobs delete", FromGrpc(s, c.address()));
  int64_t bytes = 0;
  for (const v1::Artifact& art : job.artifacts()) bytes += art.size_bytes();
  out << "deleted job " << TerminalSafe(job.id()) << " (" << job.artifacts_size()
      << " artifacts, " << bytes << " bytes freed on the daemon)\n";
  return kExitOk;
}

int JobsDownload(const ParsedArgs& a, std::ostream& out, std::ostream& err) {
  auto session = DaemonSession::Open(a);
  if (!session.ok()) return FailStatus(err, "jobs download", session.status());
  DaemonConnection& c = (*session)->connection();
  auto record = GetJobRecord(c, a.positionals[0]);
  if (!record.ok()) return FailStatus(err, "jobs download", record.status());
  const v1::Job& job = *record;
  if (job.artifacts_size() == 0) {
    return Fail(err, "jobs download", kExitUsage,
                absl::StrCat("job ", job.id(), " has no artifacts (", StateName(job.state()), ")"));
  }
  const std::string project = a.ValueOr("project", jobspec::defaults::kProject);
  InstallInterruptFlag();  // Ctrl-C ends the download in flight and removes its temp file
  std::map<std::string, std::string> fetched;  // identical artifacts: one download, links
  for (const v1::Artifact& art : job.artifacts()) {
    // GetJobRecord checked every name (CheckJobAnswer) before the first file is written.
    auto dest_or = ArtifactDestination(project, job, art.name());
    if (!dest_or.ok()) return FailStatus(err, "jobs download", dest_or.status());
    const std::string& dest = *dest_or;
    auto got = FetchArtifact(c, job.id(), art, dest, &fetched);
    if (!got.ok() && Interrupted()) {
      return Fail(err, "jobs download", kExitInterrupted,
                  absl::StrCat("interrupted: ", art.name(),
                               " was not written (no partial file is kept); the files listed "
                               "above are complete; run it again to fetch the rest"));
    }
    if (!got.ok()) return FailStatus(err, "jobs download", got.status());
    out << dest << "\n";
    // The Python LibreYOLO's profile_summary.json beside each profile.json, from it.
    if (std::filesystem::path(dest).filename() == "profile.json") {
      auto summary = WriteProfileSummaryBeside(dest);
      if (summary.ok()) {
        out << *summary << "\n";
      } else {
        err << "libreyolo jobs download: warning: no " << kProfileSummaryFileName << ": "
            << summary.status().message() << "\n";
      }
    }
  }
  return kExitOk;
}

std::vector<FlagSpec> WithRemote(std::vector<FlagSpec> flags) {
  for (FlagSpec& f : RemoteFlagSpecs()) flags.push_back(f);
  return flags;
}

// The model and where it runs: the same for `run` and `infer`.
}  // namespace

const std::vector<JobCommand>& JobsCommands() {
  static const auto* commands = new std::vector<JobCommand>{
      {{"list",
        "jobs on the daemon (yours; all for admins), newest first",
        "Lists jobs with their state, device, owner, step time and verdict or error.",
        {},
        WithRemote({{"state", "S", "", "only jobs in state S (repeatable)"},
                    {"label", "KEY=VALUE", "", "only jobs with this label (repeatable)"},
                    {"owner", "USER", "", "only USER's jobs (admins)"},
                    {"limit", "N", absl::StrCat(kDefaultListLimit),
                     absl::StrCat("at most N jobs, 1..", kMaxListLimit)},
                    {"json", "", "", "the ListJobs response as JSON"}})},
       JobsList},
      {{"show",
        "one job: state, times, error, artifacts",
        "Shows one job's record.",
        {{"job", true, "job id"}},
        WithRemote({{"json", "", "", "the Job as JSON"}})},
       JobsShow},
      {{"watch",
        "follow a job's progress until it ends",
        "Streams a job's progress events (from --from, a sequence number) until it ends. Exits\n"
        "0 when it succeeded, else the job's exit code.",
        {{"job", true, "job id"}},
        WithRemote({{"from", "SEQ", "1", "first event sequence number to show"},
                    {"json", "", "", "events as JSON lines on stdout"}})},
       JobsWatch},
      {{"cancel",
        "cancel a queued or running job",
        "Cancels a queued job at once, a running one at its next step.",
        {{"job", true, "job id"}},
        WithRemote({})},
       JobsCancel},
      {{"delete",
        "delete a finished job and its artifacts on the daemon",
        "Deletes a finished job (succeeded, failed or cancelled): its record, events and\n"
        "artifacts, to reclaim the daemon's disk. A queued or running job is refused (cancel\n"
        "it first). Files already downloaded into --project are not touched.",
        {{"job", true, "job id"}},
        WithRemote({})},
       JobsDelete},
      {{"download",
        "fetch a job's artifacts into --project",
        "Downloads every artifact of a finished job (checksums verified) into the layout\n"
        "`profile run|infer` uses.",
        {{"job", true, "job id"}},
        WithRemote({{"project", "DIR", jobspec::defaults::kProject, "output root"}})},
       JobsDownload},
  };
  return *commands;
}

}  // namespace libreyolo::cli
