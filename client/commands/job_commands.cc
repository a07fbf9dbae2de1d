#include "client/commands/job_commands.h"

#include <google/protobuf/util/json_util.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "client/cli/exit_codes.h"
#include "common/io/image_extensions.h"
#include "client/commands/report_command.h"
#include "client/remote/artifact_download.h"
#include "client/remote/daemon_session.h"
#include "client/remote/job_watch.h"
#include "client/remote/progress_display.h"
#include "common/json/json_writer.h"
#include "common/load/load_profile.h"
#include "common/readers/run_reader.h"
#include "common/render/terminal_text.h"

namespace libreyolo::cli {
namespace {

namespace fs = std::filesystem;

// Messages may carry the daemon's text: printed through TerminalSafe, like every remote string.
int Fail(std::ostream& err, const std::string& cmd, int code, const std::string& msg) {
  err << "libreyolo " << cmd << ": error: " << TerminalSafe(msg, /*multiline=*/true) << "\n";
  return code;
}

// `run`/`infer --json`: stderr carries JSON lines only (progress events and these), so a
// program can parse every line of it; stdout is the one result document.
void JsonLine(std::ostream& err, const std::string& event,
              const std::vector<std::pair<std::string, std::string>>& fields,
              std::optional<int64_t> exit_code = std::nullopt) {
  JsonWriter w(/*pretty=*/false);
  w.BeginObject().Field("event", event);
  for (const auto& [k, v] : fields) w.Field(k, v);
  if (exit_code) w.Field("exit_code", *exit_code);
  w.EndObject();
  err << absl::StripTrailingAsciiWhitespace(w.Take()) << "\n";
  err.flush();
}

int FailJob(std::ostream& err, const std::string& cmd, int code, const std::string& msg,
            bool json) {
  if (!json) return Fail(err, cmd, code, msg);
  JsonLine(err, "error", {{"command", absl::StrCat("libreyolo ", cmd)}, {"message", msg}}, code);
  return code;
}

int FailStatus(std::ostream& err, const std::string& cmd, const absl::Status& s) {
  return Fail(err, cmd, ExitCodeForStatus(s), std::string(s.message()));
}

int FailJobStatus(std::ostream& err, const std::string& cmd, const absl::Status& s, bool json) {
  if (!json) return FailStatus(err, cmd, s);
  std::ostringstream sink;  // the exit code FailStatus would choose, without its plain line
  const int code = FailStatus(sink, cmd, s);
  return FailJob(err, cmd, code, std::string(s.message()), true);
}

std::string ProtoJson(const google::protobuf::Message& m) {
  std::string out;
  google::protobuf::util::JsonPrintOptions o;
  o.preserve_proto_field_names = true;
  o.add_whitespace = true;
  (void)google::protobuf::util::MessageToJsonString(m, &out, o);
  return out;
}

ProgressStyle StyleFor(const ParsedArgs& a) {
  if (a.Switch("json")) return ProgressStyle::kJson;
  return ::isatty(STDERR_FILENO) ? ProgressStyle::kBar : ProgressStyle::kLines;
}

absl::StatusOr<int64_t> IntFlag(const ParsedArgs& a, const std::string& name) {
  auto v = a.Value(name);
  if (!v) return absl::NotFoundError(name);
  int64_t n = 0;
  if (!absl::SimpleAtoi(*v, &n)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", name, " needs an integer, got '", *v, "'"));
  }
  return n;
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

template <typename Set>
absl::Status MaybeDouble(const ParsedArgs& a, const std::string& name, Set set) {
  auto v = a.Value(name);
  if (!v) return absl::OkStatus();
  auto d = ParseDoubleFlag(name, *v);
  if (!d.ok()) return d.status();
  set(*d);
  return absl::OkStatus();
}

// ---- Request building -----------------------------------------------------------------------

bool IsImage(const fs::path& p) { return HasImageExtension(p.string()); }

// A path argument for a private daemon (same user, same files): made absolute when it exists;
// one that looks like a path but does not exist is an error here, before anything is queued.
absl::StatusOr<std::string> LocalPath(const std::string& flag, const std::string& value,
                                      bool must_exist_if_path) {
  std::error_code ec;
  if (fs::exists(value, ec)) return fs::absolute(value).lexically_normal().string();
  if (must_exist_if_path && absl::StrContains(value, '/')) {
    return absl::NotFoundError(absl::StrCat(flag, " ", value, ": no such file or directory"));
  }
  return value;
}

absl::Status AddInlineImages(const std::string& source, v1::InferSpec* spec) {
  std::vector<fs::path> files;
  std::error_code ec;
  if (fs::is_directory(source, ec)) {
    for (const auto& e : fs::directory_iterator(source, ec)) {
      if (e.is_regular_file() && IsImage(e.path())) files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());
  } else {
    files.push_back(source);
  }
  if (files.empty()) {
    return absl::NotFoundError(
        absl::StrCat(source, " holds no images (", ImageExtensionList(), ")"));
  }
  for (const fs::path& f : files) {
    std::ifstream in(f, std::ios::binary);
    if (!in) return absl::NotFoundError(absl::StrCat(f.string(), ": cannot be read"));
    std::stringstream ss;
    ss << in.rdbuf();
    v1::InlineImage* im = spec->add_images();
    im->set_name(f.filename().string());
    im->set_data(ss.str());
  }
  return absl::OkStatus();
}

absl::Status FillModel(const ParsedArgs& a, bool remote, v1::ModelOptions* m) {
  std::string weights = a.ValueOr("weights", "LibreYOLO9t.pt");
  if (!remote) {
    auto p = LocalPath("--weights", weights, true);
    if (!p.ok()) return p.status();
    weights = *p;
  }
  m->set_weights(weights);
  m->set_size(a.ValueOr("size", "t"));
  m->set_device(a.ValueOr("device", "0"));
  return MaybeInt(a, "threads", [&](int64_t v) { m->set_threads(static_cast<int32_t>(v)); });
}

absl::Status FillProfiler(const ParsedArgs& a, v1::ProfilerOptions* p) {
  if (auto act = a.Value("activities")) {
    for (auto part : absl::StrSplit(*act, ',', absl::SkipEmpty())) {
      const std::string s = absl::AsciiStrToLower(absl::StripAsciiWhitespace(part));
      if (s != "cpu" && s != "cuda") {
        return absl::InvalidArgumentError(
            absl::StrCat("--activities: '", s, "' is not cpu or cuda"));
      }
      p->add_activities(s);
    }
  }
  if (a.switches.count("record-shapes")) p->set_record_shapes(a.Switch("record-shapes"));
  if (a.switches.count("profile-memory")) p->set_profile_memory(a.Switch("profile-memory"));
  if (a.switches.count("with-flops")) p->set_with_flops(a.Switch("with-flops"));
  if (a.switches.count("with-modules")) {
    p->set_with_modules(a.Switch("with-modules"));
  } else if (a.Switch("with-stack")) {
    // The alias: C++ records no Python stacks; the module scopes say "which layer".
    p->set_with_modules(true);
  }
  return MaybeDouble(a, "overhead-budget", [&](double v) { p->set_overhead_budget_pct(v); });
}

absl::Status FillCommon(const ParsedArgs& a, v1::SubmitJobRequest* r) {
  for (const std::string& l : a.Values("label")) {
    const size_t eq = l.find('=');
    if (eq == std::string::npos || eq == 0) {
      return absl::InvalidArgumentError(absl::StrCat("--label needs KEY=VALUE, got '", l, "'"));
    }
    (*r->mutable_labels())[l.substr(0, eq)] = l.substr(eq + 1);
  }
  return MaybeInt(a, "priority", [&](int64_t v) { r->set_priority(static_cast<int32_t>(v)); });
}

absl::StatusOr<v1::SubmitJobRequest> BuildInfer(const ParsedArgs& a, bool remote) {
  v1::SubmitJobRequest r;
  v1::InferSpec* s = r.mutable_infer();
  if (auto st = FillModel(a, remote, s->mutable_model()); !st.ok()) return st;
  if (!a.positionals.empty()) {
    const std::string& src = a.positionals[0];
    std::error_code ec;
    if (remote && fs::exists(src, ec)) {
      // The daemon cannot see our files: the images travel with the request.
      if (auto st = AddInlineImages(src, s); !st.ok()) return st;
    } else if (remote) {
      s->set_source(src);  // a name in the daemon's images directory
    } else {
      if (!fs::exists(src, ec)) {
        return absl::NotFoundError(absl::StrCat("source ", src, ": no such file or directory"));
      }
      s->set_source(fs::absolute(src).lexically_normal().string());
    }
  }
  absl::Status st;
  auto set = [&](absl::Status x) {
    if (st.ok()) st = x;
  };
  set(MaybeInt(a, "batch", [&](int64_t v) { s->set_batch(v); }));
  set(MaybeInt(a, "imgsz", [&](int64_t v) { s->set_imgsz(v); }));
  set(MaybeInt(a, "warmup", [&](int64_t v) { s->set_warmup(v); }));
  set(MaybeInt(a, "runs", [&](int64_t v) { s->set_runs(v); }));
  set(MaybeInt(a, "repeat", [&](int64_t v) { s->set_repeat(v); }));
  set(MaybeInt(a, "max-det", [&](int64_t v) { s->set_max_det(v); }));
  set(MaybeDouble(a, "conf", [&](double v) { s->set_conf(v); }));
  set(MaybeDouble(a, "iou", [&](double v) { s->set_iou(v); }));
  if (!st.ok()) return st;
  s->set_half(a.Switch("half"));
  s->set_amp_dtype(a.ValueOr("amp-dtype", "float16"));
  if (a.switches.count("trace")) s->set_trace(a.Switch("trace"));
  if (auto p = FillProfiler(a, s->mutable_profiler()); !p.ok()) return p;
  if (auto c = FillCommon(a, &r); !c.ok()) return c;
  return r;
}

absl::StatusOr<v1::SubmitJobRequest> BuildRun(const ParsedArgs& a, bool remote) {
  v1::SubmitJobRequest r;
  v1::RunSpec* s = r.mutable_run();
  if (auto st = FillModel(a, remote, s->mutable_model()); !st.ok()) return st;
  std::string data = a.positionals[0];
  if (!remote && !absl::StartsWith(data, "synthetic")) {
    auto p = LocalPath("data", data, true);
    if (!p.ok()) return p.status();
    data = *p;
  }
  s->set_data(data);
  absl::Status st;
  auto set = [&](absl::Status x) {
    if (st.ok()) st = x;
  };
  set(MaybeInt(a, "batch", [&](int64_t v) { s->set_batch(v); }));
  set(MaybeInt(a, "imgsz", [&](int64_t v) { s->set_imgsz(v); }));
  set(MaybeInt(a, "workers", [&](int64_t v) { s->set_workers(v); }));
  set(MaybeInt(a, "steps", [&](int64_t v) { s->set_steps(v); }));
  set(MaybeInt(a, "active", [&](int64_t v) { s->set_steps(v); }));
  set(MaybeInt(a, "warmup", [&](int64_t v) { s->set_warmup(v); }));
  set(MaybeInt(a, "repeat", [&](int64_t v) { s->set_repeat(v); }));
  set(MaybeInt(a, "skip-first", [&](int64_t v) { s->set_skip_first(v); }));
  set(MaybeInt(a, "wait", [&](int64_t v) { s->set_wait(v); }));
  set(MaybeInt(a, "cycles", [&](int64_t v) { s->set_cycles(v); }));
  if (!st.ok()) return st;
  if (a.switches.count("amp")) s->set_amp(a.Switch("amp"));
  if (auto p = FillProfiler(a, s->mutable_profiler()); !p.ok()) return p;
  if (auto c = FillCommon(a, &r); !c.ok()) return c;
  return r;
}

// ---- Submit, follow, fetch ------------------------------------------------------------------

// After Ctrl-C: cancel or detach. A TTY is asked (detach is the default); otherwise detach,
// except on a private daemon this command started, which stops with the command.
bool ShouldCancel(const DaemonSession& session, std::ostream& err, const std::string& id) {
  if (session.started_private()) return true;
  if (!::isatty(STDIN_FILENO) || !::isatty(STDERR_FILENO)) return false;
  err << "\nCancel job " << id << " on the daemon? [y/N] (N detaches: it keeps running) ";
  err.flush();
  ClearInterrupt();
  std::string answer;
  std::getline(std::cin, answer);
  return absl::StartsWithIgnoreCase(absl::StripAsciiWhitespace(answer), "y");
}

}  // namespace

// The summary's JSON object with the job's id and profile path first: `run`/`infer --json`
// print one document that names the job it describes.
std::string WithJobFields(const std::string& summary_json, const std::string& job_id,
                          const std::string& profile_path) {
  const size_t brace = summary_json.find('{');
  if (brace == std::string::npos) return summary_json;
  JsonWriter w(/*pretty=*/false);
  w.BeginObject().Field("job_id", job_id).Field("profile_path", profile_path).EndObject();
  std::string fields(absl::StripAsciiWhitespace(w.Take()));  // {"job_id":...,...}
  fields = fields.substr(1, fields.size() - 2);
  const size_t next = summary_json.find_first_not_of(" \n\t", brace + 1);
  const bool empty = next != std::string::npos && summary_json[next] == '}';
  return absl::StrCat(summary_json.substr(0, brace + 1), "\n  ", fields, empty ? "" : ",",
                      summary_json.substr(brace + 1));
}

namespace {

int FollowAndFetch(const std::string& cmd, DaemonSession& session, const v1::Job& submitted,
                   const ParsedArgs& a, std::ostream& out, std::ostream& err) {
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
    if (ShouldCancel(session, err, submitted.id())) {
      auto ctx = c.Context(std::chrono::seconds(30));
      v1::CancelJobRequest req;
      req.set_job_id(submitted.id());
      v1::Job job;
      (void)c.stub().CancelJob(ctx.get(), req, &job);
      ClearInterrupt();
      // Wait for the cancellation to land so the daemon's record is final.
      (void)WatchJob(c, submitted.id(), watched->last_sequence + 1, [](const v1::JobEvent&) {});
      if (json) {
        JsonLine(err, "cancelled", {{"job_id", submitted.id()}}, 130);
      } else {
        err << "job " << submitted.id() << " cancelled\n";
      }
      return 130;
    }
    const std::string follow = absl::StrCat("libreyolo jobs watch ", submitted.id(),
                                            session.is_remote() ? " --remote ..." : "");
    if (json) {
      JsonLine(err, "detached", {{"job_id", submitted.id()}, {"follow", follow}}, 130);
    } else {
      err << "detached; job " << submitted.id() << " keeps running. Follow it with: " << follow
          << "\n";
    }
    return 130;
  }
  const v1::Job& job = watched->job;
  if (job.state() != v1::JOB_STATE_SUCCEEDED) {
    const int code = job.exit_code() != 0 ? job.exit_code() : kExitAnalysisFailed;
    return FailJob(err, cmd, code,
                   absl::StrCat("job ", job.id(), " ", StateName(job.state()), ": ", job.error()),
                   json);
  }
  const std::string project = a.ValueOr("project", "runs/profile");
  std::string profile_path;
  for (const v1::Artifact& art : job.artifacts()) {
    const std::string dest = ArtifactDestination(project, job.kind(), art.name());
    auto got = DownloadArtifact(c, job.id(), art.name(), dest);
    if (!got.ok()) return FailJobStatus(err, cmd, got.status(), json);
    if (art.name() == "profile.json") profile_path = dest;
    if (json) {
      JsonLine(err, "wrote", {{"path", dest}});
    } else {
      err << "wrote " << dest << "\n";
    }
  }
  if (!json) {
    err << "job " << job.id() << " (read it again with: libreyolo profile summary job:"
        << job.id() << ")\n";
  }
  if (profile_path.empty()) {
    return FailJob(err, cmd, kExitNoProfile, "the job stored no profile.json", json);
  }
  // The HTML report beside the profile: the daemon stores one with each job (downloaded above);
  // a daemon that did not is covered here, from the downloaded files. A report that cannot be
  // written does not fail the job: the profile is there and `report` can retry.
  const std::string report_path =
      (std::filesystem::path(profile_path).parent_path() / "report.html").string();
  const bool stored = std::any_of(job.artifacts().begin(), job.artifacts().end(),
                                  [](const v1::Artifact& stored_artifact) {
                                    return stored_artifact.name() == "report.html";
                                  });
  if (stored) {
    // Written above with the other artifacts.
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
    err << "libreyolo profile " << cmd << ": warning: no report.html: "
        << report.status().message() << "\n";
  }
  ReaderInvocation inv;
  inv.reader = "summary";
  inv.inputs = {profile_path};
  auto summary = RunReader(inv, [](const std::string& p) { return LoadProfile(p); });
  if (!summary.ok())
    return FailJob(err, cmd, ExitCodeForStatus(summary.status()),
                   std::string(summary.status().message()), json);
  if (json) {
    // One document: the job and its files, then the summary's own keys.
    out << WithJobFields(summary->json, job.id(), profile_path);
  } else {
    out << summary->text;
  }
  out.flush();
  return kExitOk;
}

int SubmitAndFollow(const std::string& cmd, const ParsedArgs& a, std::ostream& out,
                    std::ostream& err,
                    absl::StatusOr<v1::SubmitJobRequest> (*build)(const ParsedArgs&, bool)) {
  const bool json = a.Switch("json");
  auto remote = ResolveRemote(a);
  if (!remote.ok()) return FailJobStatus(err, cmd, remote.status(), json);
  auto request = build(a, remote->has_value());
  if (!request.ok()) return FailJobStatus(err, cmd, request.status(), json);
  auto session = DaemonSession::Open(a);
  if (!session.ok()) return FailJobStatus(err, cmd, session.status(), json);
  DaemonConnection& c = (*session)->connection();
  auto ctx = c.Context(std::chrono::seconds(60));
  v1::Job job;
  const grpc::Status s = c.stub().SubmitJob(ctx.get(), *request, &job);
  if (!s.ok()) return FailJobStatus(err, cmd, FromGrpc(s, c.address()), json);
  c.MarkReached();
  if (json) {
    JsonLine(err, "submitted",
             {{"job_id", job.id()}, {"device", job.device()}, {"daemon", c.address()}});
  } else {
    err << "job " << job.id() << " queued on " << job.device() << " (" << c.address() << ")\n";
  }
  if (a.Switch("detach")) {
    out << job.id() << "\n";
    return kExitOk;
  }
  return FollowAndFetch(cmd, **session, job, a, out, err);
}

int RunInfer(const ParsedArgs& a, std::ostream& out, std::ostream& err) {
  return SubmitAndFollow("profile infer", a, out, err, BuildInfer);
}

int RunTrain(const ParsedArgs& a, std::ostream& out, std::ostream& err) {
  return SubmitAndFollow("profile run", a, out, err, BuildRun);
}

// ---- jobs ------------------------------------------------------------------------------------

absl::StatusOr<v1::JobState> ParseState(const std::string& s) {
  for (v1::JobState st : {v1::JOB_STATE_QUEUED, v1::JOB_STATE_RUNNING, v1::JOB_STATE_SUCCEEDED,
                          v1::JOB_STATE_FAILED, v1::JOB_STATE_CANCELLED}) {
    if (StateName(st) == absl::AsciiStrToLower(s)) return st;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("--state '", s, "' is not queued, running, succeeded, failed or cancelled"));
}

std::string Age(int64_t unix_ms) {
  if (unix_ms <= 0) return "-";
  return absl::FormatTime("%Y-%m-%d %H:%M:%S", absl::FromUnixMillis(unix_ms), absl::UTCTimeZone());
}

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
  if (auto st =
          MaybeInt(a, "limit", [&](int64_t v) { req.set_page_size(static_cast<int32_t>(v)); });
      !st.ok()) {
    return FailStatus(err, "jobs list", st);
  }
  auto session = DaemonSession::Open(a);
  if (!session.ok()) return FailStatus(err, "jobs list", session.status());
  DaemonConnection& c = (*session)->connection();
  auto ctx = c.Context(std::chrono::seconds(30));
  v1::ListJobsResponse resp;
  const grpc::Status s = c.stub().ListJobs(ctx.get(), req, &resp);
  if (!s.ok()) return FailStatus(err, "jobs list", FromGrpc(s, c.address()));
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
                           j.kind() == v1::JOB_KIND_RUN ? "run" : "infer", state,
                           TerminalSafe(j.device()), TerminalSafe(j.owner()),
                           Age(j.create_time_unix_ms()),
                           j.step_ms() > 0 ? absl::StrFormat("%.2f", j.step_ms()) : "-",
                           TerminalSafe(j.error().empty() ? j.bound() : j.error()));
  }
  if (!resp.next_page_token().empty()) out << "(more: raise --limit)\n";
  return kExitOk;
}

int JobsShow(const ParsedArgs& a, std::ostream& out, std::ostream& err) {
  auto session = DaemonSession::Open(a);
  if (!session.ok()) return FailStatus(err, "jobs show", session.status());
  DaemonConnection& c = (*session)->connection();
  auto ctx = c.Context(std::chrono::seconds(30));
  v1::GetJobRequest req;
  req.set_job_id(a.positionals[0]);
  v1::Job job;
  const grpc::Status s = c.stub().GetJob(ctx.get(), req, &job);
  if (!s.ok()) return FailStatus(err, "jobs show", FromGrpc(s, c.address()));
  if (a.Switch("json")) {
    out << ProtoJson(job) << "\n";
    return kExitOk;
  }
  // Every string of the job comes from the daemon: printed through TerminalSafe.
  out << "job       " << TerminalSafe(job.id()) << "\nkind      "
      << (job.kind() == v1::JOB_KIND_RUN ? "run" : "infer") << "\nstate     "
      << StateName(job.state()) << "\nowner     " << TerminalSafe(job.owner())
      << "\ndevice    " << TerminalSafe(job.device())
      << "\ncreated   " << Age(job.create_time_unix_ms()) << "\nstarted   "
      << Age(job.start_time_unix_ms()) << "\nfinished  " << Age(job.finish_time_unix_ms()) << "\n";
  if (job.queue_position() > 0) out << "position  " << job.queue_position() << "\n";
  if (!job.error().empty()) out << "error     " << TerminalSafe(job.error()) << "\n";
  if (job.step_ms() > 0) {
    out << absl::StrFormat("step      %.3f ms, %.2f img/s, %s\n", job.step_ms(), job.img_per_s(),
                           TerminalSafe(job.bound()));
  }
  for (const auto& [k, v] : job.labels()) {
    out << "label     " << TerminalSafe(k) << "=" << TerminalSafe(v) << "\n";
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
  if (w->interrupted) return 130;
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
  out << "job " << job.id() << ": "
      << (job.state() == v1::JOB_STATE_RUNNING ? "cancelling (stops at the next step)"
                                               : StateName(job.state()))
      << "\n";
  return kExitOk;
}

int JobsDownload(const ParsedArgs& a, std::ostream& out, std::ostream& err) {
  auto session = DaemonSession::Open(a);
  if (!session.ok()) return FailStatus(err, "jobs download", session.status());
  DaemonConnection& c = (*session)->connection();
  auto ctx = c.Context(std::chrono::seconds(30));
  v1::GetJobRequest req;
  req.set_job_id(a.positionals[0]);
  v1::Job job;
  const grpc::Status s = c.stub().GetJob(ctx.get(), req, &job);
  if (!s.ok()) return FailStatus(err, "jobs download", FromGrpc(s, c.address()));
  if (job.artifacts_size() == 0) {
    return Fail(err, "jobs download", kExitUsage,
                absl::StrCat("job ", job.id(), " has no artifacts (", StateName(job.state()), ")"));
  }
  const std::string project = a.ValueOr("project", "runs/profile");
  for (const v1::Artifact& art : job.artifacts()) {
    const std::string dest = ArtifactDestination(project, job.kind(), art.name());
    auto got = DownloadArtifact(c, job.id(), art.name(), dest);
    if (!got.ok()) return FailStatus(err, "jobs download", got.status());
    out << dest << "\n";
  }
  return kExitOk;
}

std::vector<FlagSpec> WithRemote(std::vector<FlagSpec> flags) {
  for (FlagSpec& f : RemoteFlagSpecs()) flags.push_back(f);
  return flags;
}

// The model and where it runs: the same for `run` and `infer`.
std::vector<FlagSpec> ModelFlags() {
  return {
      {"weights", "FILE", "LibreYOLO9t.pt",
       "weights file or name (absent default: seeded random init)"},
      {"size", "S", "t", "model size variant: t, s, m, c"},
      {"device", "D", "0", "device: 0, 1, ... or cpu"},
      {"threads", "N", "0", "CPU threads (0 = all cores)"},
  };
}

std::vector<FlagSpec> ProfilerFlags() {
  return {
      {"activities", "LIST", "cpu,<device>", "what to record: cpu, cuda (comma-separated)"},
      {"record-shapes", "", "auto",
       "record operator input shapes (auto: on within the overhead budget)", true},
      {"profile-memory", "", "auto", "record allocations (auto: on within the overhead budget)",
       true},
      {"with-flops", "", "auto",
       "estimate FLOPs of convolutions and matmuls (auto: on within budget)", true},
      {"with-modules", "", "on",
       "name every LibreYOLO9 module's range in the trace (profile modules reads them)", true},
      {"with-stack", "", "", "alias of --with-modules (C++ records no Python stacks)"},
      {"overhead-budget", "PCT", "3",
       "the auto switches stay on while the profiler costs at most PCT %"},
  };
}

std::vector<FlagSpec> JobFlags() {
  return {
      {"label", "KEY=VALUE", "", "label the job (repeatable), e.g. --label slurm_job_id=42"},
      {"priority", "N", "0", "queue priority -10..10 (higher first)"},
      {"detach", "", "", "print the job id and return once queued"},
      {"project", "DIR", "runs/profile", "output root for the fetched profile and traces"},
      {"json", "", "", "the summary as JSON on stdout; progress events as JSON lines on stderr"},
  };
}

std::vector<FlagSpec> Concat(std::vector<std::vector<FlagSpec>> parts) {
  std::vector<FlagSpec> out;
  for (auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

}  // namespace

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
        Concat({ModelFlags(),
                {{"batch", "N", "16", "micro-batch; -1 picks the largest under ~70% of VRAM"},
                 {"imgsz", "N", "640", "training image size"},
                 {"workers", "N", "8", "data-loader workers"},
                 {"amp", "", "on", "AMP (float16 autocast + loss scaling on CUDA)", true},
                 {"steps", "N", "20", "measured (profiled) steps"},
                 {"active", "N", "20", "alias of --steps (torch.profiler.schedule)"},
                 {"warmup", "N", "5", "steps before measuring"},
                 {"skip-first", "N", "0", "steps skipped once before the first cycle"},
                 {"wait", "N", "0", "steps without the profiler at the start of each cycle"},
                 {"cycles", "N", "1", "profiler cycles; each writes profile_trace.<step>.json"},
                 {"repeat", "N", "1", "trials for mean and standard deviation"}},
                ProfilerFlags(),
                JobFlags(),
                RemoteFlagSpecs()})},
       RunTrain},
      {{"infer",
        "profile the inference path on a libreyolod",
        "Profiles inference: --warmup iterations, then --runs measured iterations without the\n"
        "profiler (latency p50/p90/p99, img/s, preprocess/forward/postprocess), then a profiled\n"
        "window. Runs on a libreyolod (--remote's, or your private one); the profile and\n"
        "trace are fetched into --project (<project>/infer/) and the summary printed. With\n"
        "--remote, local images are sent with the request.",
        {{"source", false, "image or directory (default: a generated sample image)"}},
        Concat({ModelFlags(),
                {{"batch", "N", "1", "images per forward"},
                 {"imgsz", "N", "640", "input size"},
                 {"half", "", "off", "autocast the forward (CUDA only)", true},
                 {"amp-dtype", "T", "float16", "float16 or bfloat16"},
                 {"warmup", "N", "20", "iterations before measuring"},
                 {"runs", "N", "100", "measured iterations"},
                 {"repeat", "N", "1", "trials for mean and standard deviation"},
                 {"conf", "X", "0.25", "confidence threshold (changes NMS work)"},
                 {"iou", "X", "0.45", "NMS IoU threshold"},
                 {"max-det", "N", "300", "max detections per image"},
                 {"trace", "", "on", "export the Chrome trace", true}},
                ProfilerFlags(),
                JobFlags(),
                RemoteFlagSpecs()})},
       RunInfer},
  };
  return *commands;
}

const std::vector<JobCommand>& JobsCommands() {
  static const auto* commands = new std::vector<JobCommand>{
      {{"list",
        "jobs on the daemon (yours; all for admins), newest first",
        "Lists jobs with their state, device, owner, step time and verdict or error.",
        {},
        WithRemote({{"state", "S", "", "only jobs in state S (repeatable)"},
                    {"label", "KEY=VALUE", "", "only jobs with this label (repeatable)"},
                    {"owner", "USER", "", "only USER's jobs (admins)"},
                    {"limit", "N", "50", "at most N jobs"},
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
      {{"download",
        "fetch a job's artifacts into --project",
        "Downloads every artifact of a finished job (checksums verified) into the layout\n"
        "`profile run|infer` uses.",
        {{"job", true, "job id"}},
        WithRemote({{"project", "DIR", "runs/profile", "output root"}})},
       JobsDownload},
  };
  return *commands;
}

}  // namespace libreyolo::cli
