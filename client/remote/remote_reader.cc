#include "client/remote/remote_reader.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "client/remote/artifact_download.h"
#include "client/remote/daemon_answer.h"
#include "client/remote/daemon_session.h"
#include "common/io/trace_artifact.h"
#include "common/io/trial_artifacts.h"
#include "common/job/names.h"
#include "common/load/load_profile.h"
#include "common/status/status_macros.h"
#include "wire/reader_spec/reader_request.h"

namespace libreyolo::cli {
namespace {

namespace fs = std::filesystem;

bool RemoteNamed(const ParsedArgs& a) {
  const char* env = std::getenv("LIBREYOLO_REMOTE");
  return a.Value("remote").has_value() || (env != nullptr && *env != '\0');
}

v1::ProfileRef ToRef(const JobRef& j) {
  v1::ProfileRef r;
  r.set_job_id(j.job_id);
  r.set_artifact(j.artifact);
  return r;
}

}  // namespace

std::optional<JobRef> ParseJobRef(const std::string& input, bool bare_ok) {
  std::string rest;
  if (absl::StartsWith(input, "job:")) {
    rest = input.substr(4);
  } else if (bare_ok && IsJobId(input) && !fs::exists(input)) {
    rest = input;
  } else {
    return std::nullopt;
  }
  JobRef ref;
  const size_t slash = rest.find('/');
  ref.job_id = rest.substr(0, slash);
  if (slash != std::string::npos) ref.artifact = rest.substr(slash + 1);
  return ref;
}

bool UsesDaemon(const std::vector<std::string>& inputs, const ParsedArgs& args) {
  const bool bare_ok = RemoteNamed(args);
  for (const std::string& in : inputs) {
    if (ParseJobRef(in, bare_ok).has_value()) return true;
  }
  return false;
}

namespace {

// What `job:<id>` names among the job's artifacts (GetJob; common/io/trial_artifacts.h).
absl::StatusOr<std::string> JobProfileName(DaemonConnection& c, const std::string& id) {
  auto ctx = c.Context(std::chrono::seconds(30));
  v1::GetJobRequest req;
  req.set_job_id(id);
  v1::Job job;
  const grpc::Status s = c.stub().GetJob(ctx.get(), req, &job);
  if (!s.ok()) return c.Error(s);
  RETURN_IF_ERROR(CheckJobAnswer(job, c.address()));
  std::vector<std::string> names;
  for (const v1::Artifact& a : job.artifacts()) names.push_back(a.name());
  return JobProfileArtifact(names);
}

}  // namespace

absl::StatusOr<std::vector<std::string>> FetchJobInputs(const std::vector<std::string>& inputs,
                                                        const ParsedArgs& args,
                                                        const std::string& dir, bool with_trace) {
  const bool bare_ok = RemoteNamed(args);
  std::vector<std::string> paths = inputs;
  std::unique_ptr<DaemonSession> session;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::optional<JobRef> ref = ParseJobRef(inputs[i], bare_ok);
    if (!ref) continue;
    RETURN_IF_ERROR(CheckJobId(ref->job_id));
    if (session == nullptr) {
      ASSIGN_OR_RETURN(session, DaemonSession::Open(args));
    }
    DaemonConnection& c = session->connection();
    std::string name = ref->artifact;
    if (name.empty()) {
      // The job's profile: a --repeat job's repeat file (JobProfileArtifact).
      ASSIGN_OR_RETURN(name, JobProfileName(c, ref->job_id));
    }
    const fs::path sub = fs::path(dir) / absl::StrCat(i);
    const std::string dest = (sub / fs::path(name).filename()).string();
    RETURN_IF_ERROR(DownloadArtifact(c, ref->job_id, name, dest).status());
    paths[i] = dest;
    const std::string trace_name = TraceArtifactBeside(name);
    if (with_trace && trace_name != name) {
      // The timeline needs the trace, put beside the profile where its local read finds it
      // (ProfileTracePath); a job stored without one still gets its report.
      auto trace =
          DownloadArtifact(c, ref->job_id, trace_name, (sub / kTraceFileName).string());
      if (!trace.ok() && trace.status().code() != absl::StatusCode::kNotFound) {
        return trace.status();
      }
    }
  }
  return paths;
}

absl::StatusOr<ReaderOutput> RunRemoteReader(const ReaderInvocation& inv, const ParsedArgs& args) {
  const bool bare_ok = RemoteNamed(args);
  std::vector<std::optional<JobRef>> refs;
  bool all_jobs = true;
  for (const std::string& in : inv.inputs) {
    refs.push_back(ParseJobRef(in, bare_ok));
    all_jobs = all_jobs && refs.back().has_value();
  }
  for (const auto& r : refs) {
    if (!r) continue;
    RETURN_IF_ERROR(CheckJobId(r->job_id));
  }
  if (!all_jobs) {
    // A mix of stored jobs and local files: fetch the jobs' profiles, read everything here.
    ASSIGN_OR_RETURN(auto tmp, ScratchFolder::Create("libreyolo-read"));
    ReaderInvocation local = inv;
    local.labels = inv.inputs;
    ASSIGN_OR_RETURN(local.inputs, FetchJobInputs(inv.inputs, args, tmp->path(), false));
    return RunReader(local, [](const std::string& p) { return LoadProfile(p); });
  }

  std::vector<JobRef> jobs;
  for (const auto& r : refs) jobs.push_back(*r);
  ASSIGN_OR_RETURN(auto session, DaemonSession::Open(args));
  return ReadOnDaemon(session->connection(), inv, jobs);
}

absl::StatusOr<ReaderOutput> ReadOnDaemon(DaemonConnection& c, const ReaderInvocation& inv,
                                          const std::vector<JobRef>& jobs) {
  std::vector<v1::ProfileRef> job_refs;
  for (const JobRef& j : jobs) job_refs.push_back(ToRef(j));
  ASSIGN_OR_RETURN(auto req, readerspec::ToReadRequest(inv, job_refs));
  auto ctx = c.Context(std::chrono::seconds(120));
  v1::ReaderResponse resp;
  const grpc::Status s = c.stub().Read(ctx.get(), req, &resp);
  if (s.error_code() == grpc::StatusCode::UNIMPLEMENTED) {
    return absl::FailedPreconditionError(absl::StrCat(
        c.address(), " predates the Read RPC (an older libreyolod): upgrade it, or download the "
                     "job (`libreyolo jobs download ID`) and read its files here"));
  }
  if (!s.ok()) return FromGrpc(s, c.address());
  return ReaderOutput{resp.text(), resp.json()};
}

}  // namespace libreyolo::cli
