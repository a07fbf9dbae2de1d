#include "server/daemon/workers/python_runner.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/job/names.h"
#include "common/load/load_profile.h"
#include "common/status/exit_code.h"
#include "common/status/status_macros.h"
#include "server/daemon/external/produced_files.h"
#include "server/daemon/jobs/job_inputs.h"
#include "server/daemon/workers/engine_worker.h"
#include "server/daemon/workers/python_process.h"

namespace libreyolo::daemon {
namespace {

namespace fs = std::filesystem;

const v1::ModelOptions& ModelOf(const v1::Job& job) {
  return job.request().has_run() ? job.request().run().model() : job.request().infer().model();
}

// The line a failure is told by: the last one that is not the tool's INFO/DEBUG logging, a
// traceback frame (indented) or a box border of its CLI's error panel; box edges stripped.
std::string FailureLine(const std::string& line) {
  if (line.empty() || line[0] == ' ' || line[0] == '\t') return "";
  if (absl::StrContains(line, "| INFO ") || absl::StrContains(line, "| DEBUG ")) return "";
  std::string text = line;
  for (const char* edge : {"│", "╭", "╮", "╰", "╯", "─"}) {
    for (size_t at; (at = text.find(edge)) != std::string::npos;) text.erase(at, strlen(edge));
  }
  return std::string(absl::StripAsciiWhitespace(text));
}

}  // namespace

PythonRunner::PythonRunner(const LiveConfig& config, JobStore* store)
    : config_(config), store_(store) {}

std::string PythonRunner::ToolFor(const v1::Job& job) const {
  (void)job;
  return kToolPython;
}

namespace {

// The job's slot for the Python tool: its GPU alone (or none), its CPU threads, output at once.
std::vector<std::string> SlotEnvironment(const v1::Job& job) {
  const std::string& slot = job.device();
  std::string gpu;
  if (!absl::StartsWith(slot, "cpu")) {
    gpu = absl::StartsWith(slot, "cuda:") ? slot.substr(5) : slot;
  }
  std::vector<std::string> env = {absl::StrCat("CUDA_VISIBLE_DEVICES=", gpu),
                                  "PYTHONUNBUFFERED=1", "NO_COLOR=1", "TERM=dumb"};
  if (const int32_t threads = ModelOf(job).threads(); threads > 0) {
    for (const char* name : {"OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"}) {
      env.push_back(absl::StrCat(name, "=", threads));
    }
  }
  return env;
}

std::string Seconds(std::chrono::milliseconds d) {
  return d.count() % 1000 == 0 ? absl::StrCat(d.count() / 1000)
                               : absl::StrCat(static_cast<double>(d.count()) / 1000.0);
}

// What the Python tool's end means for the job. `what`: "the Python LibreYOLO (`libreyolo
// profile run`, pid N)"; `last_line`: its last line that says something (FailureLine).
absl::Status EndStatus(const ChildEnd& end, const std::string& what, const std::string& last_line,
                       const ChildSupervision& watch, const DaemonConfig& config,
                       std::string* cancel_note) {
  const std::string killed =
      end.killed_after_grace
          ? absl::StrCat(", killed after not stopping within ", Seconds(watch.cancel_grace),
                         " s of the TERM")
          : "";
  if (end.cancelled) {
    const std::string note = absl::StrCat(what, " stopped (TERM to its process group", killed, ")");
    if (end.killed_after_grace) *cancel_note = note;
    return absl::CancelledError(note);
  }
  if (end.wall_limit_reached) {
    return absl::DeadlineExceededError(absl::StrCat(
        what, " reached the job's wall-time limit (", Seconds(watch.wall_limit), " s) and was stopped",
        killed, "; ask for more time (--time-limit, max_wall_seconds; at most the daemon's ",
        "limits.max_job_seconds ", config.limits.max_job_seconds, " s) or a shorter job"));
  }
  if (end.stalled) {
    return absl::InternalError(absl::StrCat(what, " printed nothing for ",
                                            Seconds(watch.progress_timeout),
                                            " s (progress_timeout_s) and was stopped", killed));
  }
  const std::string said = last_line.empty() ? "" : absl::StrCat(": ", last_line);
  if (WIFEXITED(end.wait_status)) {
    const int code = WEXITSTATUS(end.wait_status);
    if (code == 0) return absl::OkStatus();
    const std::string message = absl::StrCat(what, " exited with code ", code, said);
    // Its codes are ours (README "Exit codes"): 2 the user's to fix, 3 no profile, else 1.
    if (code == kExitUsage) return absl::InvalidArgumentError(message);
    if (code == kExitNoProfile) return absl::OutOfRangeError(message);
    return absl::InternalError(message);
  }
  return absl::InternalError(absl::StrCat(what, " was ", DescribeWaitStatus(end.wait_status), said));
}

// The files of `folder` that are there (lstat: a symlink counts, and TakeProducedFiles refuses
// it), each stored as `prefix` + its name.
std::vector<external::ProducedFile> Present(const std::string& folder,
                                            const std::vector<std::string>& names,
                                            const std::string& prefix) {
  std::vector<external::ProducedFile> out;
  for (const std::string& name : names) {
    struct stat st {};
    if (::lstat((fs::path(folder) / name).c_str(), &st) == 0) {
      out.push_back({name, prefix + name});
    }
  }
  return out;
}

}  // namespace

absl::Status PythonRunner::TakeFiles(const v1::Job& job, const std::string& project,
                                     int64_t trials, const DaemonConfig& config,
                                     RunOutcome* out) {
  const bool run = job.request().has_run();
  const std::string kind = run ? kRunOutputFolder : kInferOutputFolder;
  const int64_t max_bytes = config.limits.max_artifact_bytes;
  const uid_t self = ::geteuid();
  // Trial T's folder: <project>/<kind>_T (the last one is the job's profile), or <kind>.
  auto folder = [&](int64_t t) {
    return (fs::path(project) / (trials > 1 ? absl::StrCat(kind, "_", t) : kind)).string();
  };
  const std::string final_folder = folder(trials - 1);
  std::vector<external::ProducedFile> files =
      Present(final_folder, {"profile.json", "profile_trace.json", "metrics.jsonl"}, "");
  if (files.empty() || files[0].name != "profile.json") {
    return absl::OutOfRangeError(absl::StrCat(
        "the Python LibreYOLO ended without writing profile.json (looked in ", final_folder, ")"));
  }
  auto take = [&](const std::string& path, const std::vector<external::ProducedFile>& f) {
    ASSIGN_OR_RETURN(std::vector<v1::Artifact> taken,
                     external::TakeProducedFiles(external::DropFolder{path, self}, f, store_,
                                                 job.id(), max_bytes));
    for (v1::Artifact& a : taken) out->artifacts.push_back(std::move(a));
    return absl::OkStatus();
  };
  RETURN_IF_ERROR(take(final_folder, files));
  // The earlier trials' profiles ("trial<T>.profile.json") and the repeat file at the root.
  for (int64_t t = 0; t + 1 < trials; ++t) {
    const auto earlier = Present(folder(t), {"profile.json"}, absl::StrCat("trial", t, "."));
    RETURN_IF_ERROR(take(folder(t), earlier));
  }
  const std::string repeat = run ? "profile_repeat.json" : "infer_repeat.json";
  if (trials > 1) {
    RETURN_IF_ERROR(take(project, Present(project, {repeat}, "")));
  }
  // Checked before they count: every profile taken must read as one.
  v1::Job stored = job;
  for (const v1::Artifact& a : out->artifacts) *stored.add_artifacts() = a;
  for (const v1::Artifact& a : out->artifacts) {
    if (!absl::EndsWith(a.name(), "profile.json") && a.name() != repeat) continue;
    absl::StatusOr<std::string> path = store_->ArtifactPath(stored, a.name());
    absl::StatusOr<Profile> profile = path.ok() ? LoadProfile(*path) : path.status();
    if (!profile.ok()) {
      return absl::DataLossError(absl::StrCat("the Python LibreYOLO's ", a.name(),
                                              " is not a profile: ", profile.status().message()));
    }
    if (a.name() == "profile.json") {
      out->step_ms = profile->step_ms.value_or(0);
      out->img_per_s = profile->img_per_s.value_or(0);
      out->bound = profile->bound;
    }
  }
  return absl::OkStatus();
}

RunOutcome PythonRunner::Run(const v1::Job& job, const ProgressFn& progress,
                             const engine::CancelToken& cancel) {
  const std::shared_ptr<const DaemonConfig> snapshot = config_.Get();  // SIGHUP may swap it
  const DaemonConfig& config = *snapshot;
  RunOutcome out;
  std::optional<external::DropFolder> drop;
  auto fail = [&](absl::Status s) {
    out.exit_code = ExitCodeForStatus(s);
    out.status = std::move(s);
    if (drop) external::RemoveDropFolder(*drop);
    store_->DiscardScratch(job.id());
    out.artifacts.clear();  // nothing of a failed job stays published
    store_->DiscardArtifacts(job.id());
    return out;
  };
  auto report = [&](const JobProgress& p) {
    if (progress) progress(p);
  };
  absl::StatusOr<std::string> scratch = store_->ScratchDir(job.id());
  if (!scratch.ok()) return fail(scratch.status());
  absl::StatusOr<v1::Job> resolved = ResolveJobInputs(job, config, *scratch);
  if (!resolved.ok()) return fail(resolved.status());
  const std::string& weights = ModelOf(*resolved).weights();
  const std::optional<engine::CheckpointModel> model = NativeCheckpointModel(weights);
  if (!model || model->family.empty() || model->family == "yolo9") {
    return fail(absl::FailedPreconditionError(absl::StrCat(
        weights, " is no longer a native checkpoint of a family the engine lacks; submit the "
        "job again")));
  }
  absl::StatusOr<std::string> tool = PythonToolPath(config, model->family);
  if (!tool.ok()) return fail(tool.status());
  absl::StatusOr<external::DropFolder> made =
      external::MakeDropFolder(*scratch, job.id(), ::geteuid());
  if (!made.ok()) return fail(made.status());
  drop = *made;
  const bool run = resolved->request().has_run();
  const int64_t trials = std::max<int64_t>(
      1, run ? (resolved->request().run().has_repeat() ? resolved->request().run().repeat() : 1)
             : (resolved->request().infer().has_repeat() ? resolved->request().infer().repeat() : 1));
  absl::StatusOr<std::vector<std::string>> args =
      PythonToolArgs(*resolved, *tool, drop->path, model->size, config);
  if (!args.ok()) return fail(args.status());

  ChildSupervision watch;
  watch.cancel_grace = cancel_grace_.value_or(std::chrono::seconds(config.cancel_grace_s));
  watch.wall_limit = std::chrono::seconds(
      JobWallSeconds(job.max_wall_seconds(), config.limits.max_job_seconds));
  watch.progress_timeout = std::chrono::seconds(config.progress_timeout_s);
  const std::string command = run ? "run" : "infer";
  report({"loading model", 0, 1,
          absl::StrCat(weights, ": ", model->Label(), ", a family the engine lacks: the Python ",
                       "LibreYOLO's own `libreyolo profile ", command, "` (", *tool,
                       ") profiles it")});
  BoundedLog log(64 << 10, 448 << 10);
  PythonProgress parser(trials);
  std::string last_line;
  absl::StatusOr<ChildEnd> end = RunChildGroup(
      ChildCommand{*args, SlotEnvironment(*resolved), drop->path}, watch, cancel,
      [&](const std::string& line) {
        log.Add(line);
        if (std::string said = FailureLine(line); !said.empty()) last_line = std::move(said);
        if (std::optional<JobProgress> p = parser.Line(line)) report(*p);
      });
  if (!end.ok()) return fail(end.status());
  const std::string what = absl::StrCat("the Python LibreYOLO (`libreyolo profile ", command,
                                        "`, pid ", end->pid, ")");
  if (!end->survivors.empty()) {
    // Unkillable (a process in uninterruptible sleep): said, not hidden.
    const std::string line = absl::StrCat("libreyolod: job ", job.id(), ": ", end->survivors.size(),
                                          " process(es) of ", what, "'s group still there after "
                                          "SIGKILL (pid ", end->survivors[0], ")");
    std::cerr << line << std::endl;
    log.Add(line);
  }
  if (absl::Status s = EndStatus(*end, what, last_line, watch, config, &out.cancel_note); !s.ok()) {
    return fail(std::move(s));
  }
  report({"storing", 0, 0, ""});
  if (absl::Status s = TakeFiles(*resolved, drop->path, trials, config, &out); !s.ok()) {
    return fail(std::move(s));
  }
  // Its output, bounded, beside its profile.
  const std::string log_file = (fs::path(*scratch) / "python_tool.log").string();
  std::ofstream(log_file, std::ios::binary) << log.Text();
  absl::StatusOr<v1::Artifact> stored_log = store_->PublishArtifact(
      job.id(), log_file, "python_tool.log", config.limits.max_artifact_bytes);
  if (!stored_log.ok()) return fail(stored_log.status());
  out.artifacts.push_back(*stored_log);
  external::RemoveDropFolder(*drop);
  store_->DiscardScratch(job.id());
  return out;
}

}  // namespace libreyolo::daemon
