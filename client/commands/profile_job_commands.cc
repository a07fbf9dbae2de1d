// `libreyolo profile run|infer`: submit the job to a daemon (--remote's, or the caller's
// private one), follow its progress, fetch its artifacts into --project, print the summary.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <set>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "client/cli/exit_codes.h"
#include "client/cli/job_flags.h"
#include "client/commands/command_output.h"
#include "client/commands/job_commands.h"
#include "client/commands/job_request.h"
#include "client/commands/profile_summary_file.h"
#include "client/commands/report_command.h"
#include "client/remote/artifact_download.h"
#include "client/remote/daemon_answer.h"
#include "common/render/terminal_text.h"
#include "client/remote/daemon_session.h"
#include "client/remote/job_watch.h"
#include "client/remote/progress_display.h"
#include "common/json/json_read.h"
#include "common/json/json_writer.h"
#include "common/io/trial_artifacts.h"
#include "common/job/names.h"
#include "common/load/load_profile.h"
#include "common/readers/ranks_view.h"
#include "common/readers/run_reader.h"
#include "common/status/exit_code.h"
#include "wire/job_spec/job_defaults.h"
#include "wire/job_spec/job_spec.h"
#include "rapidjson/document.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"

namespace libreyolo::cli {
namespace {

ProgressStyle StyleFor(const ParsedArgs& a) {
  if (a.Switch("json")) return ProgressStyle::kJson;
  return ::isatty(STDERR_FILENO) ? ProgressStyle::kBar : ProgressStyle::kLines;
}

// ---- Submit, follow, fetch ------------------------------------------------------------------

// After Ctrl-C: cancel or detach. A TTY is asked (detach is the default: a private daemon
// finishes a detached job before it stops); otherwise detach, except on a private daemon
// started on demand, where nobody would follow the job.
bool ShouldCancel(const DaemonSession& session, std::ostream& err, const std::string& id) {
  if (!::isatty(STDIN_FILENO) || !::isatty(STDERR_FILENO)) return session.on_demand_private();
  err << "\nCancel job " << id << " on the daemon? [y/N] (N detaches: it keeps running) ";
  err.flush();
  ClearInterrupt();
  std::string answer;
  std::getline(std::cin, answer);
  return absl::StartsWithIgnoreCase(absl::StripAsciiWhitespace(answer), "y");
}

// What one run leaves in <project>/prof/: a single-device run its files at the top, a
// data-parallel one a folder per rank. Removes `path`, and says so.
void RemoveAndSay(const std::filesystem::path& path, const std::string& why, std::ostream& err,
                  bool json) {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
  if (ec) return;
  if (json) {
    JsonLine(err, "removed", {{"path", path.string()}});
  } else {
    err << "removed " << path.string() << " (" << why << ")\n";
  }
}

bool SingleRunFile(const std::string& name) {
  return name == "profile.json" || name == "report.html" || name == kProfileSummaryFileName ||
         (absl::StartsWith(name, "profile_trace") && absl::EndsWith(name, ".json"));
}

}  // namespace

void RemoveOtherRuns(const std::string& project, int world_size, std::ostream& err, bool json) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path prof = fs::path(project) / kRunOutputFolder;
  std::vector<fs::directory_entry> entries;
  for (const fs::directory_entry& e : fs::directory_iterator(prof, ec)) entries.push_back(e);
  std::sort(entries.begin(), entries.end());
  for (const fs::directory_entry& e : entries) {
    const std::string name = e.path().filename().string();
    int rank = -1;
    const bool rank_folder = e.is_directory(ec) && absl::StartsWith(name, "rank") &&
                             absl::SimpleAtoi(name.substr(4), &rank) && rank >= 0;
    if (rank_folder && rank >= world_size) {
      RemoveAndSay(e.path(),
                   world_size == 0
                       ? "an earlier data-parallel run's rank; this run is on one device"
                       : absl::StrCat("an earlier run's rank; this run has ", world_size),
                   err, json);
    } else if (world_size > 0 && e.is_regular_file(ec) && SingleRunFile(name)) {
      RemoveAndSay(e.path(), "an earlier single-device run's; this run's ranks are in rank*/",
                   err, json);
    }
  }
}

namespace {

std::string Compact(const rapidjson::Value& v) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  v.Accept(w);
  return std::string(buf.GetString(), buf.GetSize());
}

}  // namespace

// The job and its files, the Python tool's keys, then the summary's own keys: one document.
std::string WithJobFields(const std::string& summary_json, const JobJsonFields& f) {
  const rapidjson::Document summary = JsonOrNull(summary_json);
  if (!summary.IsObject()) return summary_json;
  JsonWriter w;
  w.BeginObject().Field("job_id", f.job_id).Field("profile_path", f.profile_path);
  std::set<std::string> written = {"job_id", "profile_path"};
  auto field = [&](const std::string& key, auto value) {
    w.Field(key, value);
    written.insert(key);
  };
  field("profile", f.profile.empty() ? f.profile_path : f.profile);
  if (!f.trace.empty()) field("trace", f.trace);
  field("img_per_s_std", f.img_per_s_std);
  field("img_per_s_n", f.img_per_s_n);
  const auto mode = summary.FindMember("mode");
  const bool inference = mode != summary.MemberEnd() && mode->value.IsString() &&
                         std::string(mode->value.GetString()) == "inference";
  if (inference) {
    const auto lat = summary.FindMember("latency");
    for (const char* pct : {"p50", "p90", "p99"}) {
      const std::string key = absl::StrCat("latency_", pct, "_ms");
      w.Key(key);
      written.insert(key);
      const std::string sub = absl::StrCat(pct, "_ms");
      if (lat != summary.MemberEnd() && lat->value.IsObject() &&
          lat->value.HasMember(sub.c_str())) {
        w.Raw(Compact(lat->value[sub.c_str()]));
      } else {
        w.Null();
      }
    }
  }
  for (const auto& m : summary.GetObject()) {
    const std::string key(m.name.GetString(), m.name.GetStringLength());
    if (written.count(key) == 0) w.Key(key).Raw(Compact(m.value));
  }
  w.EndObject();
  return w.Take();
}

namespace {

// A download that failed after profile.json arrived: says what is missing and why (a daemon
// that went away), and returns the exit code the command ends with. kExitOk when none failed.
// The Python LibreYOLO's profile_summary.json beside each profile.json fetched, made from it
// (profile_summary_file.h). One that cannot be written is a warning: the profile is there.
void WriteProfileSummaries(const std::vector<std::string>& profiles, const std::string& cmd,
                           std::ostream& err, bool json) {
  for (const std::string& profile : profiles) {
    auto path = WriteProfileSummaryBeside(profile);
    if (path.ok() && json) {
      JsonLine(err, "wrote", {{"path", *path}});
    } else if (path.ok()) {
      err << "wrote " << *path << "\n";
    } else {
      const std::string message =
          absl::StrCat("no ", kProfileSummaryFileName, ": ", path.status().message());
      if (json) {
        JsonLine(err, "warning", {{"message", message}});
      } else {
        err << "libreyolo " << cmd << ": warning: " << message << "\n";
      }
    }
  }
}

int FetchFailed(std::ostream& err, const std::string& cmd, const absl::Status& status,
                const std::string& job_id, const std::string& project, bool json) {
  if (status.ok()) return kExitOk;
  std::ostringstream sink;  // the code FailJobStatus would give, printed below as a warning
  const int code = FailJobStatus(sink, cmd, status, /*json=*/false);
  const std::string message =
      absl::StrCat(status.message(), "; the files above are kept; fetch the rest with: ",
                   "libreyolo jobs download ", job_id, " --project ", project);
  if (json) {
    JsonLine(err, "warning", {{"message", message}});
  } else {
    err << "libreyolo " << cmd << ": warning: " << message << "\n";
  }
  return code;
}

// FollowAndFetch's stages, in order:
//
//   follow   the job's events shown until it ends; Ctrl-C cancels or detaches (the command
//            ends there)
//   check    a job that did not succeed ends the command with its exit code and error
//   fetch    its artifacts into <project> (an earlier run's other files removed first); a
//            download that fails keeps the files before it
//   notes    each profile.json's profile_summary.json, a failed download's warning, and how to
//            read the job again
//   report   report.html beside the profile when the daemon stored none
//   summary  the job's summary (its ranks', its repeat aggregate's) on `out`
//
// Each stage that can end the command returns its exit code; std::nullopt goes on.

// What the fetch stage wrote and where; the stages after it read these.
struct FetchedFiles {
  std::string project;
  std::string profile_path, trace_path, repeat_path;
  std::vector<std::string> written;        // the artifacts' names, in download order
  std::vector<std::string> profile_files;  // every folder's profile.json (trials, ranks)
  absl::Status fetch_error;  // the first download that failed; the files before it are kept
};

// After Ctrl-C while following: cancels the job (waiting for the cancellation to land) or
// detaches from it, as ShouldCancel decides, and says which.
int CancelOrDetach(DaemonSession& session, const v1::Job& submitted, int64_t last_sequence,
                   std::ostream& err, bool json) {
  DaemonConnection& c = session.connection();
  if (ShouldCancel(session, err, submitted.id())) {
    auto ctx = c.Context(std::chrono::seconds(30));
    v1::CancelJobRequest req;
    req.set_job_id(submitted.id());
    v1::Job job;
    (void)c.stub().CancelJob(ctx.get(), req, &job);
    ClearInterrupt();
    // Wait for the cancellation to land so the daemon's record is final.
    (void)WatchJob(c, submitted.id(), last_sequence + 1, [](const v1::JobEvent&) {});
    if (json) {
      JsonLine(err, "cancelled", {{"job_id", submitted.id()}}, 130);
    } else {
      err << "job " << submitted.id() << " cancelled\n";
    }
    return kExitInterrupted;
  }
  const std::string follow = absl::StrCat("libreyolo jobs watch ", submitted.id(),
                                          session.is_remote() ? " --remote ..." : "");
  if (json) {
    JsonLine(err, "detached", {{"job_id", submitted.id()}, {"follow", follow}}, 130);
  } else {
    err << "detached; job " << submitted.id() << " keeps running. Follow it with: " << follow
        << "\n";
  }
  return kExitInterrupted;
}

// The follow and check stages: `*job` is the finished job when it succeeded.
std::optional<int> FollowJob(const std::string& cmd, DaemonSession& session,
                             const v1::Job& submitted, const ParsedArgs& a, std::ostream& err,
                             v1::Job* job) {
  DaemonConnection& c = session.connection();
  const bool json = a.Switch("json");
  ProgressDisplay display(err, StyleFor(a));
  // A failed job's error is printed once, by the error line below, not also by the display.
  display.set_quiet_terminal_message(true);
  InstallInterruptFlag();
  auto watched = WatchJob(c, submitted.id(), 1, [&](const v1::JobEvent& e) { display.Show(e); });
  display.Finish();
  if (!watched.ok()) return FailJobStatus(err, cmd, watched.status(), json);
  if (watched->interrupted) {
    return CancelOrDetach(session, submitted, watched->last_sequence, err, json);
  }
  *job = watched->job;
  if (job->state() != v1::JOB_STATE_SUCCEEDED) {
    const int code = job->exit_code() != 0 ? job->exit_code() : kExitAnalysisFailed;
    return FailJob(
        err, cmd, code,
        absl::StrCat("job ", job->id(), " ", StateName(job->state()), ": ", job->error()), json);
  }
  return std::nullopt;
}

// The fetch stage. Ends the command when an artifact has no place under the project, on
// Ctrl-C during the download, and when a download failed before profile.json arrived.
std::optional<int> FetchJobFiles(const std::string& cmd, DaemonConnection& c, const v1::Job& job,
                                 std::ostream& err, bool json, FetchedFiles* files) {
  const std::string& project = files->project;
  if (job.kind() == v1::JOB_KIND_RUN) {
    const bool ranks = jobspec::DataParallelJob(job);
    RemoveOtherRuns(project, ranks ? static_cast<int>(jobspec::JobWorldSize(job)) : 0, err, json);
  }
  std::map<std::string, std::string> fetched;  // identical artifacts: one download, links
  for (const v1::Artifact& art : job.artifacts()) {
    // WatchJob checked the job's names (CheckJobAnswer): nothing here lands outside project.
    auto dest_or = ArtifactDestination(project, job, art.name());
    if (!dest_or.ok()) return FailJobStatus(err, cmd, dest_or.status(), json);
    const std::string& dest = *dest_or;
    auto got = FetchArtifact(c, job.id(), art, dest, &fetched);
    if (!got.ok()) {
      files->fetch_error = got.status();
      break;
    }
    files->written.push_back(art.name());
    if (std::filesystem::path(dest).filename() == "profile.json") {
      files->profile_files.push_back(dest);
    }
    if (art.name() == "profile.json") files->profile_path = dest;
    if (art.name() == "profile_trace.json") files->trace_path = dest;
    if (IsRepeatFileName(art.name())) files->repeat_path = dest;
    if (json) {
      JsonLine(err, "wrote", {{"path", dest}});
    } else {
      err << "wrote " << dest << "\n";
    }
  }
  if (!files->fetch_error.ok() && Interrupted()) {
    // Ctrl-C during the download: the files written so far stay, the one in flight is gone.
    return FailJob(err, cmd, kExitInterrupted,
                   absl::StrCat("interrupted during the download of job ", job.id(), "'s files (",
                                files->written.size(), " of ", job.artifacts_size(),
                                " written); they stay on the daemon: libreyolo jobs download ",
                                job.id(), " --project ", project),
                   json);
  }
  if (!files->fetch_error.ok() && files->profile_path.empty()) {
    return FailJobStatus(err, cmd, files->fetch_error, json);
  }
  return std::nullopt;
}

// The notes stage: the profiles' summary files, then how to read the job again (text only).
void SayHowToReadAgain(const v1::Job& job, const FetchedFiles& files, std::ostream& err,
                       bool json) {
  if (json) return;
  if (jobspec::DataParallelJob(job)) {
    err << "job " << job.id() << " (read its ranks again with: libreyolo profile summary "
        << (std::filesystem::path(files.project) / kRunOutputFolder).string()
        << "/; rank 0's profile: job:"
        << job.id() << ")\n";
  } else {
    // A --repeat job's aggregate is its repeat file (job:<id> alone is the final trial's).
    const std::string repeat_name =
        files.repeat_path.empty()
            ? ""
            : "/" + std::filesystem::path(files.repeat_path).filename().string();
    err << "job " << job.id() << " (read it again with: libreyolo profile summary job:"
        << job.id() << repeat_name << ")\n";
  }
}

// The report stage. The HTML report beside the profile: the daemon stores one with each job
// (downloaded by the fetch stage); a daemon that did not, or a download that failed first, is
// covered here, from the profile. A report that cannot be written does not fail the job: the
// profile is there and `report` can retry.
void EnsureReport(const std::string& cmd, const FetchedFiles& files, std::ostream& err,
                  bool json) {
  const std::string& profile_path = files.profile_path;
  const std::string report_path =
      (std::filesystem::path(profile_path).parent_path() / "report.html").string();
  const bool stored =
      std::find(files.written.begin(), files.written.end(), "report.html") != files.written.end();
  if (stored) {
    // Written by the fetch stage with the other artifacts.
  } else if (auto report = WriteReport({profile_path}, {profile_path}, report_path); report.ok()) {
    if (json) {
      JsonLine(err, "wrote", {{"path", report_path}});
    } else {
      err << "wrote " << report_path << "\n";
    }
  } else if (json) {
    JsonLine(err, "warning",
             {{"message", absl::StrCat("no report.html: ", report.status().message())}});
  } else {
    err << "libreyolo " << cmd << ": warning: no report.html: "
        << report.status().message() << "\n";
  }
}

// The summary stage: the job's summary on `out`; `fetch_code` when it was printed.
int PrintJobSummary(const std::string& cmd, const v1::Job& job, const FetchedFiles& files,
                    int fetch_code, std::ostream& out, std::ostream& err, bool json) {
  const std::string& profile_path = files.profile_path;
  const std::string& repeat_path = files.repeat_path;
  const bool ranks = jobspec::DataParallelJob(job);
  ReaderInvocation inv;
  inv.reader = ReaderId::kSummary;
  // A data-parallel job's summary is its ranks' (the cross-rank view of <project>/prof/). Across
  // hosts, the folder has every rank only where the hosts share it (a shared file system, the
  // other hosts done); else this host's first rank is summarised, and the way to the whole run
  // is said.
  const std::string prof = std::filesystem::path(profile_path).parent_path().parent_path().string();
  // The folder reader's own test of a whole run (every rank of one world, by its traces).
  const bool whole =
      ranks && (job.world().nnodes() <= 1 || ScanRankFolder(prof, /*require_all=*/true).ok());
  if (ranks && !whole) {
    const std::string note =
        absl::StrCat("this host ran ranks ", job.world().first_rank(), "..",
                     job.world().first_rank() + job.devices_size() - 1, " of ",
                     jobspec::JobWorldSize(job), " (group ", job.world().group_id(),
                     "); the summary below is rank ", job.world().first_rank(),
                     "'s. For the whole run, put every host's prof/rank*/ in one "
                     "folder and read it: libreyolo profile summary DIR/");
    if (json) {
      JsonLine(err, "note", {{"message", note}});
    } else {
      err << note << "\n";
    }
  }
  // A --repeat job's summary is its aggregate's (the trials' mean and sd), as the Python tool's.
  const std::string& job_profile = repeat_path.empty() ? profile_path : repeat_path;
  inv.inputs = {whole ? prof : job_profile};
  inv.read_folders = whole;
  auto summary = RunReader(inv, [](const std::string& p) { return LoadProfile(p); });
  if (!summary.ok())
    return FailJob(err, cmd, ExitCodeForStatus(summary.status()),
                   std::string(summary.status().message()), json);
  if (json) {
    // One document: the job and its files, the Python tool's keys, then the summary's own.
    JobJsonFields fields{job.id(), profile_path, repeat_path, files.trace_path, std::nullopt, 1};
    if (auto loaded = LoadProfile(job_profile); loaded.ok()) {
      fields.img_per_s_std = loaded->repeat.img_per_s_std;
      fields.img_per_s_n = loaded->repeat.img_per_s_n.value_or(1);
    }
    out << WithJobFields(summary->json, fields);
  } else {
    out << summary->text;
  }
  out.flush();
  return fetch_code;
}

int FollowAndFetch(const std::string& cmd, DaemonSession& session, const v1::Job& submitted,
                   const ParsedArgs& a, std::ostream& out, std::ostream& err) {
  const bool json = a.Switch("json");
  v1::Job job;
  if (std::optional<int> ended = FollowJob(cmd, session, submitted, a, err, &job)) return *ended;
  FetchedFiles files;
  files.project = a.ValueOr("project", jobspec::defaults::kProject);
  if (std::optional<int> ended = FetchJobFiles(cmd, session.connection(), job, err, json, &files))
    return *ended;
  WriteProfileSummaries(files.profile_files, cmd, err, json);
  // Without the rest, the profile is still read: warn now, fail at the end.
  const int fetch_code = FetchFailed(err, cmd, files.fetch_error, job.id(), files.project, json);
  SayHowToReadAgain(job, files, err, json);
  if (files.profile_path.empty()) {
    return FailJob(err, cmd, kExitNoProfile, "the job stored no profile.json", json);
  }
  EnsureReport(cmd, files, err, json);
  return PrintJobSummary(cmd, job, files, fetch_code, out, err, json);
}

// The project folder the files will be fetched into, made (as the fetch would) and tried with a
// file before the job is submitted: a name too long, a read-only or a file in the way failed the
// fetch only after the whole job had run.
absl::Status CheckProjectWritable(const std::string& project) {
  namespace fs = std::filesystem;
  const auto refused = [&](const std::string& why) {
    return absl::FailedPreconditionError(absl::StrCat(
        "--project ", Excerpt(project), ": ", why,
        "; the job was not submitted: name a folder you can write (or --detach and fetch later "
        "with `libreyolo jobs download`)"));
  };
  std::error_code ec;
  fs::create_directories(project, ec);
  if (ec) return refused(absl::StrCat("cannot create it: ", ec.message()));
  std::string probe = (fs::path(project) / ".libreyolo-write-check.XXXXXX").string();
  const int fd = ::mkstemp(probe.data());
  if (fd < 0) return refused(absl::StrCat("cannot write into it: ", std::strerror(errno)));
  ::close(fd);
  ::unlink(probe.c_str());
  return absl::OkStatus();
}

int SubmitAndFollow(const std::string& cmd, const ParsedArgs& a, std::ostream& out,
                    std::ostream& err,
                    absl::StatusOr<v1::SubmitJobRequest> (*build)(const ParsedArgs&, bool)) {
  const bool json = a.Switch("json");
  auto remote = ResolveRemote(a);
  if (!remote.ok()) return FailJobStatus(err, cmd, remote.status(), json);
  auto request = build(a, remote->has_value());
  if (!request.ok()) return FailJobStatus(err, cmd, request.status(), json);
  if (!a.Switch("detach")) {
    const absl::Status writable =
        CheckProjectWritable(a.ValueOr("project", jobspec::defaults::kProject));
    if (!writable.ok()) return FailJobStatus(err, cmd, writable, json);
  }
  auto session = DaemonSession::Open(a);
  if (!session.ok()) return FailJobStatus(err, cmd, session.status(), json);
  DaemonConnection& c = (*session)->connection();
  auto ctx = c.Context(std::chrono::seconds(60));
  v1::Job job;
  const grpc::Status s = c.stub().SubmitJob(ctx.get(), *request, &job);
  if (!s.ok()) return FailJobStatus(err, cmd, FromGrpc(s, c.address()), json);
  c.MarkReached();
  // The id goes into every later call and into the commands printed for the user.
  if (auto st = CheckJobAnswer(job, c.address()); !st.ok()) {
    return FailJobStatus(err, cmd, st, json);
  }
  if (json) {
    JsonLine(err, "submitted",
             {{"job_id", job.id()}, {"device", job.device()}, {"daemon", c.address()}});
  } else {
    err << "job " << job.id() << " queued on " << TerminalSafe(job.device()) << " ("
        << c.address() << ")\n";
  }
  if (a.Switch("detach")) {
    out << job.id() << "\n";
    return kExitOk;
  }
  return FollowAndFetch(cmd, **session, job, a, out, err);
}

int RunInfer(const ParsedArgs& a, std::ostream& out, std::ostream& err) {
  return SubmitAndFollow("profile infer", a, out, err, BuildInferRequest);
}

int RunTrain(const ParsedArgs& a, std::ostream& out, std::ostream& err) {
  return SubmitAndFollow("profile run", a, out, err, BuildRunRequest);
}

// The request's own flags, after the job's options.
std::vector<FlagSpec> JobFlags() {
  return {
      {"label", "KEY=VALUE", "", "label the job (repeatable), e.g. --label slurm_job_id=42"},
      {"priority", "N", "0", "queue priority -10..10 (higher first)"},
      {"time-limit", "SECONDS", "",
       "stop the job if still running after this long (90s, 30m, 2h); default and cap: the "
       "daemon's limits.max_job_seconds"},
      {"detach", "", "", "print the job id and return once queued"},
      {"project", "DIR", jobspec::defaults::kProject,
       "output root for the fetched profile and traces"},
      {"json", "", "", "the summary as JSON on stdout; progress events as JSON lines on stderr"},
  };
}

std::vector<FlagSpec> Concat(std::vector<std::vector<FlagSpec>> parts) {
  std::vector<FlagSpec> out;
  for (auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

}  // namespace

int SubmitJobAndFollow(const std::string& cmd, const ParsedArgs& a, std::ostream& out,
                       std::ostream& err, RequestBuilder build) {
  return SubmitAndFollow(cmd, a, out, err, build);
}

std::vector<FlagSpec> JobRequestFlags() { return JobFlags(); }

const std::vector<JobCommand>& ProfileJobCommands() {
  static const auto* commands = new std::vector<JobCommand>{
      {{"run",
        "profile a short training run on a libreyolod",
        "Profiles a short training run: --warmup steps, then --steps measured steps, under the\n"
        "profiler schedule (--skip-first --wait --warmup --active --cycles). The job runs on a\n"
        "libreyolod: --remote's, or your private one (started on demand on a Unix socket). The\n"
        "profile and traces are fetched into --project (<project>/prof/) and the summary printed.\n"
        "A dataset too small for the window exits 3. Ctrl-C cancels or detaches.",
        {{"data", true, "dataset YAML, directory or name (coco128), or synthetic[:N]"}},
        Concat({RunSpecFlags(), JobFlags(), RemoteFlagSpecs()})},
       RunTrain},
      {{"infer",
        "profile the inference path on a libreyolod",
        "Profiles inference: --warmup iterations, then --runs measured iterations without the\n"
        "profiler (latency p50/p90/p99, img/s, preprocess/forward/postprocess), then a profiled\n"
        "window. Runs on a libreyolod (--remote's, or your private one); the profile and\n"
        "trace are fetched into --project (<project>/infer/) and the summary printed. With\n"
        "--remote, local images are sent with the request.",
        {{"source", false, "image or directory (default: a generated sample image)"}},
        Concat({InferSpecFlags(), JobFlags(), RemoteFlagSpecs()})},
       RunInfer},
  };
  return *commands;
}

}  // namespace libreyolo::cli
