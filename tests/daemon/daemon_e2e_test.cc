// End to end through the process boundary: a real libreyolod, the generated stub and the real
// `libreyolo` client. Jobs are submitted on a Unix socket and on loopback TCP, watched to their
// end, their artifacts read back (ReadArtifact with its SHA-256, `libreyolo jobs download`), and
// every reader run remotely (`job:<id> --remote`) and locally on the downloaded file: the views
// must be equal but for their "source" label. Also the private daemon (`profile infer` without
// --remote), and the health and reflection services.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "tests/daemon/daemon_process.h"

namespace libreyolo::daemon_test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// How the tests reach one daemon: the client's flags and a channel for the stub.
struct Remote {
  std::vector<std::string> cli_flags;  // --remote ... [--insecure --token-file FILE]
  std::shared_ptr<grpc::Channel> channel;
  std::string token;  // for the stub ("" on the Unix socket)
};

std::vector<std::string> Concat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Every artifact of a finished job, read with ReadArtifact whole, in small chunks and resumed
// from an offset: the bytes, the SHA-256 on the last chunk and Artifact.sha256 all agree.
void CheckArtifactsByRpc(const Remote& r, const v1::Job& job) {
  auto stub = v1::ProfilerService::NewStub(r.channel);
  for (const v1::Artifact& a : job.artifacts()) {
    SCOPED_TRACE("artifact " + a.name());
    ASSERT_EQ(a.sha256().size(), 64u);
    ASSERT_GT(a.size_bytes(), 0);
    const ArtifactRead whole = ReadArtifact(*stub, job.id(), a.name(), r.token);
    ASSERT_TRUE(whole.status.ok()) << whole.status.error_message();
    EXPECT_EQ(static_cast<int64_t>(whole.data.size()), a.size_bytes());
    EXPECT_EQ(whole.total_size, a.size_bytes());
    EXPECT_EQ(whole.sha256, a.sha256());
    EXPECT_EQ(Sha256Hex(whole.data), a.sha256());
    EXPECT_TRUE(whole.offsets_contiguous);
    EXPECT_TRUE(whole.last_only_at_end);

    const int32_t chunk = 4096;
    const ArtifactRead small = ReadArtifact(*stub, job.id(), a.name(), r.token, 0, chunk);
    ASSERT_TRUE(small.status.ok()) << small.status.error_message();
    EXPECT_EQ(small.data, whole.data);
    EXPECT_EQ(small.chunks, (a.size_bytes() + chunk - 1) / chunk);
    EXPECT_TRUE(small.offsets_contiguous);
    EXPECT_TRUE(small.last_only_at_end);
    EXPECT_EQ(small.sha256, a.sha256());

    // Resumed half way: the tail, and still the SHA-256 of the whole file.
    const int64_t half = a.size_bytes() / 2;
    const ArtifactRead tail = ReadArtifact(*stub, job.id(), a.name(), r.token, half, chunk);
    ASSERT_TRUE(tail.status.ok()) << tail.status.error_message();
    EXPECT_EQ(tail.data, whole.data.substr(static_cast<size_t>(half)));
    EXPECT_EQ(tail.sha256, a.sha256());
    EXPECT_EQ(Sha256Hex(whole.data.substr(0, static_cast<size_t>(half)) + tail.data), a.sha256());

    // At the end: one empty last chunk. Past it: OUT_OF_RANGE.
    const ArtifactRead end = ReadArtifact(*stub, job.id(), a.name(), r.token, a.size_bytes());
    ASSERT_TRUE(end.status.ok()) << end.status.error_message();
    EXPECT_EQ(end.chunks, 1);
    EXPECT_TRUE(end.data.empty());
    EXPECT_EQ(end.sha256, a.sha256());
    const ArtifactRead past = ReadArtifact(*stub, job.id(), a.name(), r.token, a.size_bytes() + 1);
    EXPECT_EQ(past.status.error_code(), grpc::StatusCode::OUT_OF_RANGE);
  }
}

// `libreyolo jobs download` writes every artifact where `profile run|infer` puts them, with the
// daemon's checksums. Returns the local profile.json.
std::string CheckDownload(const Remote& r, const v1::Job& job, const std::string& project) {
  const CommandResult dl =
      RunClient(Concat({"jobs", "download", job.id(), "--project", project}, r.cli_flags));
  EXPECT_EQ(dl.exit_code, 0) << dl.Describe();
  const std::string sub = job.kind() == v1::JOB_KIND_RUN ? "prof" : "infer";
  for (const v1::Artifact& a : job.artifacts()) {
    const std::string path = project + "/" + sub + "/" + a.name();
    EXPECT_THAT(dl.out, HasSubstr(path));
    EXPECT_TRUE(fs::is_regular_file(path)) << path;
    EXPECT_EQ(Sha256Hex(ReadFile(path)), a.sha256()) << path;
  }
  for (const auto& entry : fs::directory_iterator(project + "/" + sub)) {  // no temp file left
    EXPECT_FALSE(absl::StartsWith(entry.path().filename().string(), ".tmp.")) << entry.path();
  }
  return project + "/" + sub + "/profile.json";
}

// Each reader of `libreyolo profile`, on the stored job and on the downloaded file.
void CheckReadersRemoteEqualLocal(const Remote& r, const v1::Job& job,
                                  const std::string& local_profile) {
  const std::string ref = "job:" + job.id();
  std::vector<std::vector<std::string>> readers = {
      {"summary"},
      {"get"},
      {"get", "step_ms"},
      {"phases"},
      {"kernels"},
      {"ops"},
      {"what-if", "--remove-launches", "1"},
  };
  // An inference job's latency distribution (issue 39 §3: a reader with no RPC of its own).
  if (job.kind() == v1::JOB_KIND_INFER) readers.push_back({"latency", "--buckets", "4"});
  for (const std::vector<std::string>& reader : readers) {
    std::vector<std::string> remote_args = {"profile", reader[0], ref};
    std::vector<std::string> local_args = {"profile", reader[0], local_profile};
    for (size_t i = 1; i < reader.size(); ++i) {
      remote_args.push_back(reader[i]);
      local_args.push_back(reader[i]);
    }
    remote_args.push_back("--json");
    local_args.push_back("--json");
    SCOPED_TRACE("reader: profile " + reader[0] + (reader.size() > 1 ? " " + reader[1] : ""));
    const CommandResult remote = RunClient(Concat(remote_args, r.cli_flags));
    const CommandResult local = RunClient(local_args);
    ASSERT_EQ(remote.exit_code, 0) << remote.Describe();
    ASSERT_EQ(local.exit_code, 0) << local.Describe();
    EXPECT_EQ(JsonDiffIgnoringSource(remote.out, local.out), "");
    if (reader[0] == "summary") {
      EXPECT_THAT(remote.out, HasSubstr("\"" + ref + "\""));
      EXPECT_THAT(local.out, HasSubstr(local_profile));
    }
  }
  // modules reads the downloaded trace (beside profile.json): the per-layer table of the job's
  // module scopes (on by default), in text, JSON and folded stacks; and the same from the daemon
  // (issue 22 §2: `modules job:<id>` was refused): the job's trace artifact, read through the
  // store, named job:<id>/profile_trace.json.
  {
    const CommandResult table = RunClient({"profile", "modules", local_profile});
    ASSERT_EQ(table.exit_code, 0) << table.Describe();
    EXPECT_THAT(table.out, HasSubstr("backbone.conv0"));
    EXPECT_THAT(table.out, HasSubstr("neck.elan_up1"));
    EXPECT_THAT(table.out, HasSubstr("head.cv2.0"));
    const CommandResult top =
        RunClient({"profile", "modules", local_profile, "--depth", "1", "--json"});
    ASSERT_EQ(top.exit_code, 0) << top.Describe();
    EXPECT_THAT(top.out, HasSubstr("\"module\": \"backbone\""));
    EXPECT_THAT(top.out, Not(HasSubstr("backbone.conv0")));
    const CommandResult folded =
        RunClient({"profile", "modules", local_profile, "--format", "folded"});
    ASSERT_EQ(folded.exit_code, 0) << folded.Describe();
    EXPECT_THAT(folded.out, HasSubstr("backbone;backbone.conv0;aten::conv2d"));

    for (const std::vector<std::string>& flags :
         std::vector<std::vector<std::string>>{{"--json"}, {"--depth", "1", "--json"},
                                               {"--sort", "self_cpu", "--json"}}) {
      SCOPED_TRACE("modules " + flags[0]);
      const CommandResult remote =
          RunClient(Concat(Concat({"profile", "modules", ref}, flags), r.cli_flags));
      const CommandResult local = RunClient(Concat({"profile", "modules", local_profile}, flags));
      ASSERT_EQ(remote.exit_code, 0) << remote.Describe();
      ASSERT_EQ(local.exit_code, 0) << local.Describe();
      EXPECT_EQ(JsonDiffIgnoringSource(remote.out, local.out, {"trace"}), "");
      EXPECT_THAT(remote.out, HasSubstr("\"job:" + job.id() + "/profile_trace.json\""));
    }
    const CommandResult remote_folded =
        RunClient(Concat({"profile", "modules", ref, "--format", "folded"}, r.cli_flags));
    ASSERT_EQ(remote_folded.exit_code, 0) << remote_folded.Describe();
    EXPECT_EQ(remote_folded.out, folded.out);
    // A bad option is refused by the daemon as locally (exit 2), naming the option.
    const CommandResult bad =
        RunClient(Concat({"profile", "modules", ref, "--sort", "bogus"}, r.cli_flags));
    EXPECT_EQ(bad.exit_code, 2) << bad.Describe();
    EXPECT_THAT(bad.err, HasSubstr("sort"));
  }

  // compare takes two profiles: the job against itself, both ways.
  const CommandResult remote =
      RunClient(Concat({"profile", "compare", ref, ref, "--json"}, r.cli_flags));
  const CommandResult local =
      RunClient({"profile", "compare", local_profile, local_profile, "--json"});
  ASSERT_EQ(remote.exit_code, 0) << remote.Describe();
  ASSERT_EQ(local.exit_code, 0) << local.Describe();
  EXPECT_EQ(JsonDiffIgnoringSource(remote.out, local.out, {"before", "after"}), "");
  EXPECT_THAT(remote.out, HasSubstr("\"before\": \"" + ref + "\""));

  // The reader RPC itself answers the same JSON the client prints, and a text rendering.
  auto stub = v1::ProfilerService::NewStub(r.channel);
  auto ctx = Ctx(r.token);
  v1::SummaryRequest req;
  req.mutable_profile()->set_job_id(job.id());
  v1::ReaderResponse resp;
  const grpc::Status s = stub->Summary(ctx.get(), req, &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  const CommandResult local_summary = RunClient({"profile", "summary", local_profile, "--json"});
  EXPECT_EQ(JsonDiffIgnoringSource(resp.json(), local_summary.out), "");
  EXPECT_FALSE(resp.text().empty());

  // A reader on another stored artifact: the Chrome trace, analysed on the daemon and here.
  const std::string trace = fs::path(local_profile).parent_path().string() + "/profile_trace.json";
  ASSERT_TRUE(fs::exists(trace));
  const CommandResult remote_trace =
      RunClient(Concat({"profile", "summary", ref + "/profile_trace.json", "--json"}, r.cli_flags));
  const CommandResult local_trace = RunClient({"profile", "summary", trace, "--json"});
  ASSERT_EQ(remote_trace.exit_code, 0) << remote_trace.Describe();
  ASSERT_EQ(local_trace.exit_code, 0) << local_trace.Describe();
  // `trace` names the file read: job:<id>/profile_trace.json there, its path here.
  EXPECT_EQ(JsonDiffIgnoringSource(remote_trace.out, local_trace.out, {"trace"}), "");
}

// The events of a job that ended: 1..N without gaps, states as documented, the last one terminal.
void CheckEvents(const std::vector<v1::JobEvent>& events, const v1::Job& job) {
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(Sequences(events), OneTo(job.last_sequence()));
  EXPECT_EQ(events.front().stage(), "queued");
  EXPECT_EQ(events.front().state(), v1::JOB_STATE_QUEUED);
  EXPECT_EQ(events.back().state(), job.state());
  EXPECT_EQ(events.back().stage(), job.state() == v1::JOB_STATE_SUCCEEDED ? "done" : "failed");
  for (const v1::JobEvent& e : events) EXPECT_EQ(e.job_id(), job.id());
}

// Submits `request` with the stub, watches it from the first event to its end, checks it.
v1::Job StubJob(const Remote& r, const v1::SubmitJobRequest& request) {
  auto stub = v1::ProfilerService::NewStub(r.channel);
  v1::Job queued;
  const grpc::Status s = Submit(*stub, request, &queued, r.token);
  EXPECT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(queued.state(), v1::JOB_STATE_QUEUED);
  EXPECT_FALSE(queued.id().empty());
  EXPECT_EQ(queued.device(), "cpu");
  std::vector<v1::JobEvent> events;
  const grpc::Status w = Watch(*stub, queued.id(), 0, &events, r.token);
  EXPECT_TRUE(w.ok()) << w.error_message();
  v1::Job job;
  EXPECT_TRUE(GetJob(*stub, queued.id(), &job, r.token).ok());
  EXPECT_EQ(job.state(), v1::JOB_STATE_SUCCEEDED) << job.error();
  CheckEvents(events, job);
  return job;
}

// Submits with `libreyolo profile infer|run ... --remote`, which follows the job, fetches its
// artifacts into --project and prints the summary.
v1::Job CliJob(const Remote& r, const std::string& kind, const std::vector<std::string>& flags,
               const std::string& project) {
  const CommandResult c = RunClient(Concat(Concat({"profile", kind}, flags),
                                           Concat({"--project", project, "--json"}, r.cli_flags)));
  EXPECT_EQ(c.exit_code, 0) << c.Describe();
  const std::string id = QueuedJobId(c.err + c.out);
  EXPECT_FALSE(id.empty()) << c.Describe();
  // --json: one document on stdout naming the job, the local summary's keys after it.
  EXPECT_THAT(c.out, ::testing::ContainsRegex("\"job_id\": ?\"" + id + "\"")) << c.out;
  const std::string sub = kind == "run" ? "prof" : "infer";
  EXPECT_TRUE(fs::is_regular_file(project + "/" + sub + "/profile.json")) << c.Describe();
  // The printed summary is the local summary of the fetched profile.
  const CommandResult local =
      RunClient({"profile", "summary", project + "/" + sub + "/profile.json", "--json"});
  // The job's own fields (WithJobFields: the job, its files, the Python tool's keys) come before
  // the summary's; the rest is the local summary, key for key.
  EXPECT_EQ(JsonDiffIgnoringSource(c.out, local.out, JobJsonFieldLabels()), "");
  auto stub = v1::ProfilerService::NewStub(r.channel);
  v1::Job job;
  const grpc::Status s = GetJob(*stub, id, &job, r.token);
  EXPECT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(job.state(), v1::JOB_STATE_SUCCEEDED) << job.error();
  EXPECT_EQ(job.kind(), kind == "run" ? v1::JOB_KIND_RUN : v1::JOB_KIND_INFER);
  // The fetched files are the stored ones.
  for (const v1::Artifact& a : job.artifacts()) {
    const std::string path = a.name() == "profile_repeat.json"
                                 ? project + "/" + a.name()
                                 : project + "/" + sub + "/" + a.name();
    EXPECT_EQ(Sha256Hex(ReadFile(path)), a.sha256()) << path;
  }
  return job;
}

void CheckJob(const Remote& r, const v1::Job& job, const std::string& work) {
  SCOPED_TRACE("job " + job.id());
  ASSERT_EQ(job.state(), v1::JOB_STATE_SUCCEEDED) << job.error();
  EXPECT_EQ(job.exit_code(), 0);
  EXPECT_TRUE(job.error().empty()) << job.error();
  EXPECT_GT(job.step_ms(), 0);
  EXPECT_FALSE(job.bound().empty());
  std::set<std::string> names;
  for (const v1::Artifact& a : job.artifacts()) names.insert(a.name());
  EXPECT_TRUE(names.count("profile.json")) << job.DebugString();
  EXPECT_TRUE(names.count("profile_trace.json")) << job.DebugString();
  // The HTML report is stored with the job (issue 12), drawn for job:<id>.
  EXPECT_TRUE(names.count("report.html")) << job.DebugString();
  // A training job's per-step lines (issue 20 section 6) are published with it.
  EXPECT_EQ(names.count("metrics.jsonl"), job.kind() == v1::JOB_KIND_RUN ? 1u : 0u)
      << job.DebugString();
  CheckArtifactsByRpc(r, job);
  const std::string local = CheckDownload(r, job, work + "/dl-" + job.id());
  {
    const std::string profile = ReadFile(local);
    EXPECT_THAT(profile, HasSubstr("\"with_stack\":false"));
    EXPECT_THAT(profile, HasSubstr("\"with_modules\":true"));
    // The worker writes the paths the profile records in their final form, relative to the
    // job's output folder; nothing names the daemon's scratch folder (<store>/.tmp/<id>).
    const std::string sub = job.kind() == v1::JOB_KIND_RUN ? "prof" : "infer";
    EXPECT_THAT(profile, HasSubstr("\"trace\": \"" + sub + "/profile_trace.json\""));
    if (job.kind() == v1::JOB_KIND_RUN) {
      EXPECT_THAT(profile, HasSubstr("\"metrics\":\"prof/metrics.jsonl\""));
    }
    EXPECT_THAT(profile, Not(HasSubstr("/.tmp/")));
    // The report was drawn by the worker from the job's memory, for job:<id>.
    const std::string report = ReadFile((fs::path(local).parent_path() / "report.html").string());
    EXPECT_THAT(report, HasSubstr("job:" + job.id()));
    EXPECT_THAT(report, HasSubstr(sub + "/profile_trace.json"));
    EXPECT_THAT(report, Not(HasSubstr("/.tmp/")));
  }
  CheckReadersRemoteEqualLocal(r, job, local);
}

void ExpectServing(const std::shared_ptr<grpc::Channel>& channel) {
  std::string health;
  const grpc::Status s = HealthCheck(channel, &health);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(health, kServing);
}

TEST(DaemonE2eTest, UnixSocketInferByCliAndRunByStub) {
  TempDir dir;
  DaemonDirs dirs(dir.path());
  auto daemon = DaemonProcess::Start(dirs.Flags(), dir.File("daemon.log"));
  ASSERT_TRUE(daemon->WaitServing()) << daemon->LogTail();
  Remote r{{"--remote", "unix:" + dirs.socket}, UnixChannel(dirs.socket), ""};

  ExpectServing(r.channel);
  std::string reflection;
  const grpc::Status refl = ReflectionListServices(r.channel, &reflection);
  ASSERT_TRUE(refl.ok()) << refl.error_message();
  EXPECT_THAT(reflection, HasSubstr("libreyolo.profiler.v1.ProfilerService"));
  EXPECT_THAT(reflection, HasSubstr("grpc.health.v1.Health"));

  // Who the daemon thinks we are on the socket: our uid, no token needed.
  auto stub = v1::ProfilerService::NewStub(r.channel);
  {
    auto ctx = Ctx();
    v1::DaemonInfo info;
    ASSERT_TRUE(stub->GetDaemonInfo(ctx.get(), v1::GetDaemonInfoRequest(), &info).ok());
    EXPECT_FALSE(info.caller().empty());
    EXPECT_FALSE(info.allows_local_paths());  // not a private daemon
    ASSERT_EQ(info.devices_size(), 1);
    EXPECT_EQ(info.devices(0).name(), "cpu");
  }

  // --with-stack is the documented alias of --with-modules: the profile holds module scopes and
  // never claims stacks.
  const v1::Job infer =
      CliJob(r, "infer", Concat(TinyInferFlags(), {"--with-stack"}), dir.File("cli"));
  const v1::Job run = StubJob(r, TinyRun());
  CheckJob(r, infer, dir.path());
  CheckJob(r, run, dir.path());

  // Both are listed, newest first.
  {
    auto ctx = Ctx();
    v1::ListJobsResponse list;
    ASSERT_TRUE(stub->ListJobs(ctx.get(), v1::ListJobsRequest(), &list).ok());
    ASSERT_EQ(list.jobs_size(), 2);
    EXPECT_EQ(list.jobs(0).id(), run.id());
    EXPECT_EQ(list.jobs(1).id(), infer.id());
  }
  double seconds_taken = 0;
  EXPECT_EQ(daemon->Terminate(seconds(60), &seconds_taken), 0) << daemon->LogTail();
  EXPECT_THAT(daemon->Log(), HasSubstr("libreyolod: stopped"));
}

TEST(DaemonE2eTest, LoopbackTcpInferByStubAndRunByCli) {
  TempDir dir;
  DaemonDirs dirs(dir.path());
  const std::string token = "e2e-token-0123456789";
  WriteFile(dir.File("tokens"), token + " tester\n", 0600);
  WriteFile(dir.File("token"), token + "\n", 0600);
  auto daemon =
      DaemonProcess::Start(Concat(dirs.Flags({"tcp:127.0.0.1:0"}),
                                  {"--insecure-tcp", "--tokens-file", dir.File("tokens")}),
                           dir.File("daemon.log"));
  ASSERT_TRUE(daemon->WaitServing()) << daemon->LogTail();
  const int port = daemon->tcp_port();
  ASSERT_GT(port, 0) << daemon->LogTail();
  const std::string address = "127.0.0.1:" + std::to_string(port);
  Remote r{{"--remote", address, "--insecure", "--token-file", dir.File("token")},
           TcpChannel(address),
           token};

  ExpectServing(r.channel);  // health needs no token
  auto stub = v1::ProfilerService::NewStub(r.channel);
  {
    auto ctx = Ctx(token);
    v1::DaemonInfo info;
    ASSERT_TRUE(stub->GetDaemonInfo(ctx.get(), v1::GetDaemonInfoRequest(), &info).ok());
    EXPECT_EQ(info.caller(), "tester");
  }

  const v1::Job infer = StubJob(r, TinyInfer());
  const v1::Job run = CliJob(r, "run", TinyRunFlags(), dir.File("cli"));
  EXPECT_EQ(infer.owner(), "tester");
  EXPECT_EQ(run.owner(), "tester");
  CheckJob(r, infer, dir.path());
  CheckJob(r, run, dir.path());

  // `jobs list` and `jobs show` over TCP agree with the stub.
  const CommandResult list = RunClient(Concat({"jobs", "list", "--json"}, r.cli_flags));
  ASSERT_EQ(list.exit_code, 0) << list.Describe();
  EXPECT_THAT(list.out, HasSubstr(infer.id()));
  EXPECT_THAT(list.out, HasSubstr(run.id()));
  const CommandResult show = RunClient(Concat({"jobs", "show", run.id()}, r.cli_flags));
  ASSERT_EQ(show.exit_code, 0) << show.Describe();
  EXPECT_THAT(show.out, HasSubstr("succeeded"));
  EXPECT_THAT(show.out, HasSubstr(run.artifacts(0).sha256()));

  EXPECT_EQ(daemon->Terminate(seconds(60)), 0) << daemon->LogTail();
}

// `libreyolo profile infer --repeat 2` without --remote: the client starts a private daemon on a
// socket in $XDG_RUNTIME_DIR/libreyolo, with its state in $LIBREYOLO_STATE_DIR, runs the job
// there, writes the Python tool's tree (<project>/infer_0/, infer_1/, infer_repeat.json), and
// stops the daemon it started.
TEST(DaemonE2eTest, PrivateDaemonStartedAndStoppedByTheClient) {
  TempDir dir;
  const std::string runtime = dir.File("run");
  const std::string state = dir.File("st");
  fs::create_directories(runtime);
  fs::create_directories(dir.File("home"));
  const std::vector<std::string> env = {
      "XDG_RUNTIME_DIR=" + runtime, "LIBREYOLO_STATE_DIR=" + state,
      std::string("LIBREYOLOD=") + LIBREYOLOD_BINARY, "HOME=" + dir.File("home"),
      "XDG_STATE_HOME=" + dir.File("home/state")};
  const std::string socket = runtime + "/libreyolo/libreyolod.sock";
  ASSERT_LT(socket.size(), 100u);
  ASSERT_TRUE(ProcessesWithArgument(socket).empty());

  const CommandResult c = RunClient(
      Concat({"profile", "infer", "--project", dir.File("proj"), "--json", "--repeat", "2"},
             TinyInferFlags()),
      env, seconds(240), dir.path());
  // A daemon left behind would be ours: stop it before anything can fail.
  const std::vector<pid_t> left = ProcessesWithArgument(socket);
  for (pid_t pid : left) ::kill(pid, SIGKILL);
  ASSERT_EQ(c.exit_code, 0) << c.Describe() << "\n--- daemon log ---\n"
                            << ReadFile(state + "/libreyolod.log");
  EXPECT_TRUE(left.empty()) << "the private daemon still runs after the client exited";

  // The Python tool's files where it writes them (issue 36 §3), and nothing else.
  std::vector<std::string> tree;
  for (const auto& e : fs::recursive_directory_iterator(dir.File("proj"))) {
    if (e.is_regular_file()) tree.push_back(fs::relative(e.path(), dir.File("proj")).string());
  }
  std::sort(tree.begin(), tree.end());
  EXPECT_THAT(tree, ::testing::ElementsAre("infer_0/profile.json", "infer_0/profile_summary.json",
                                           "infer_1/profile.json", "infer_1/profile_summary.json",
                                           "infer_1/profile_trace.json", "infer_1/report.html",
                                           "infer_repeat.json"))
      << c.Describe();
  const std::string profile = dir.File("proj/infer_repeat.json");
  ASSERT_TRUE(fs::is_regular_file(profile)) << c.Describe();
  EXPECT_THAT(c.out, ::testing::ContainsRegex("\"profile\": ?\"[^\"]*/proj/infer_repeat.json\""));
  EXPECT_THAT(c.out, ::testing::ContainsRegex("\"img_per_s_n\": ?2"));
  // The printed summary is the aggregate's; every trial's profile reads, its trace found.
  const CommandResult local = RunClient({"profile", "summary", profile, "--json"});
  EXPECT_EQ(JsonDiffIgnoringSource(c.out, local.out, JobJsonFieldLabels()), "");
  for (const char* trial : {"proj/infer_0/profile.json", "proj/infer_1/profile.json"}) {
    const CommandResult one =
        RunClient({"profile", "modules", dir.File(trial), "--json"}, {}, seconds(120));
    EXPECT_EQ(one.exit_code, 0) << one.Describe();
  }
  const std::string id = QueuedJobId(c.err + c.out);
  EXPECT_THAT(c.err, HasSubstr("unix:" + socket));

  // The daemon ran with the state root given, and stopped cleanly.
  const std::string log = ReadFile(state + "/libreyolod.log");
  EXPECT_THAT(log, HasSubstr("libreyolod: serving on unix:" + socket));
  EXPECT_THAT(log, HasSubstr("libreyolod: stopped"));
  EXPECT_FALSE(Answers(UnixChannel(socket)));
  EXPECT_TRUE(fs::is_regular_file(state + "/state/jobs/" + id + ".json")) << id;

  // job:<id> is the job's profile: its repeat file (the daemon's reader), also where a reader
  // downloads it to read beside a local file (compare job:<id> FILE).
  const CommandResult stored =
      RunClient({"profile", "get", "job:" + id, "img_per_s", "--json"}, env, seconds(120),
                dir.path());
  const CommandResult here = RunClient({"profile", "get", profile, "img_per_s", "--json"});
  EXPECT_EQ(stored.exit_code, 0) << stored.Describe();
  EXPECT_EQ(stored.out, here.out) << stored.Describe();
  const CommandResult mixed = RunClient(
      {"profile", "compare", "job:" + id, profile, "--json"}, env, seconds(120), dir.path());
  EXPECT_EQ(mixed.exit_code, 0) << mixed.Describe();
  EXPECT_THAT(mixed.out, ::testing::ContainsRegex("\"n\": ?\\[\\s*2,\\s*2\\s*\\]"))
      << mixed.out;
  for (pid_t pid : ProcessesWithArgument(socket)) ::kill(pid, SIGKILL);

  // The job outlives the daemon: a second command starts it again, finds the job, stops it.
  const CommandResult list = RunClient({"jobs", "list", "--json"}, env, seconds(120), dir.path());
  for (pid_t pid : ProcessesWithArgument(socket)) {
    ADD_FAILURE() << "the private daemon still runs after `jobs list`";
    ::kill(pid, SIGKILL);
  }
  ASSERT_EQ(list.exit_code, 0) << list.Describe();
  EXPECT_THAT(list.out, HasSubstr(id));
  EXPECT_THAT(list.out, HasSubstr("JOB_STATE_SUCCEEDED"));
}

}  // namespace
}  // namespace libreyolo::daemon_test
