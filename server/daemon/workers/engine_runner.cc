#include "server/daemon/workers/engine_runner.h"

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/io/trial_artifacts.h"
#include "common/job/names.h"
#include "common/status/exit_code.h"
#include "common/status/status_macros.h"
#include "wire/job_spec/job_spec.h"
#include "server/daemon/jobs/job_inputs.h"

namespace libreyolo::daemon {
namespace {

namespace fs = std::filesystem;

}  // namespace

EngineRunner::EngineRunner(const LiveConfig& config, JobStore* store,
                           std::string worker_executable)
    : config_(config), store_(store), executable_(std::move(worker_executable)) {}

EngineRunner::~EngineRunner() { StopWorkers(); }

std::vector<std::string> EngineRunner::WorkerArgs(const std::string&) const {
  // Nothing beyond its channel: a worker keeps no state between jobs of its own. (Until issue 36
  // it kept its switch decisions in <state_dir>/switch-decisions/; the switches no longer change
  // by themselves, and a file left there from then is not read: docs/deploy.md.)
  return {};
}

absl::Status EngineRunner::StartWorker(const std::string& device) {
  absl::StatusOr<EngineWorker*> w = EnsureWorker(device);
  return w.ok() ? absl::OkStatus() : w.status();
}

absl::StatusOr<EngineWorker*> EngineRunner::EnsureWorker(const std::string& device) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    Slot& slot = slots_[device];
    if (slot.worker && slot.worker->alive()) {
      // A worker that died or was stopped while idle is replaced now, not found dead by the
      // job (issue 40 A.4: the job used to fail at once, or after the whole watchdog).
      const std::string idle = slot.worker->CheckIdle();
      if (idle.empty()) return slot.worker.get();
      RecordDeath(absl::StrCat("the engine worker for ", device, " (pid ", slot.hello.pid(),
                               ") ", idle, "; a fresh one starts for the next job"));
      slot.worker.reset();
    }
  }
  // Started outside the lock: LibTorch takes seconds to load, and other devices' jobs and
  // GetDaemonInfo go on meanwhile.
  absl::StatusOr<std::unique_ptr<EngineWorker>> started =
      EngineWorker::Spawn(executable_, device, WorkerArgs(device));
  absl::Status hello = started.ok() ? (*started)->AwaitHello(hello_timeout_) : started.status();
  // A worker that was spawned and ended before its Hello died (the start is retried at the
  // device's next job); one that could not be spawned never lived.
  if (started.ok() && !hello.ok()) RecordDeath(std::string(hello.message()));
  std::lock_guard<std::mutex> lock(mu_);
  Slot& slot = slots_[device];
  if (!hello.ok()) {
    slot.start_error = std::string(hello.message());
    return hello;
  }
  slot.worker = *std::move(started);
  slot.hello = slot.worker->hello();
  slot.start_error.clear();
  if (first_hello_.pid() == 0) first_hello_ = slot.hello;
  return slot.worker.get();
}

void EngineRunner::StartWorkers(const std::vector<std::string>& devices,
                                std::vector<std::string>* warnings) {
  std::vector<std::pair<std::string, std::unique_ptr<EngineWorker>>> spawned;
  for (const std::string& device : devices) {
    absl::StatusOr<std::unique_ptr<EngineWorker>> w =
        EngineWorker::Spawn(executable_, device, WorkerArgs(device));
    if (!w.ok()) {
      warnings->push_back(std::string(w.status().message()));
      std::lock_guard<std::mutex> lock(mu_);
      slots_[device].start_error = std::string(w.status().message());
      continue;
    }
    spawned.emplace_back(device, *std::move(w));
  }
  for (auto& [device, w] : spawned) {
    absl::Status hello = w->AwaitHello(hello_timeout_);
    std::lock_guard<std::mutex> lock(mu_);
    Slot& slot = slots_[device];
    if (!hello.ok()) {
      RecordDeath(std::string(hello.message()), /*log=*/false);  // the warning is its line
      warnings->push_back(std::string(hello.message()));
      slot.start_error = std::string(hello.message());
      continue;
    }
    slot.worker = std::move(w);
    slot.hello = slot.worker->hello();
    slot.start_error.clear();
  }
}

void EngineRunner::RecordDeath(const std::string& what, bool log) {
  const int64_t n = ++deaths_;
  if (log) {
    std::cerr << "libreyolod: " << what << "; " << n << " engine worker death"
              << (n == 1 ? "" : "s") << " since start" << std::endl;
  }
}

void EngineRunner::StopWorkers() {
  std::map<std::string, std::unique_ptr<EngineWorker>> workers;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [device, slot] : slots_) workers[device] = std::move(slot.worker);
  }
  for (auto& [device, w] : workers) {
    if (w) w->Stop(std::chrono::milliseconds(5000));
  }
}

EngineFacts EngineRunner::Facts() const {
  std::lock_guard<std::mutex> lock(mu_);
  return EngineFacts{first_hello_.libtorch_version(), first_hello_.cuda_version(),
                     first_hello_.cuda_device_count()};
}

std::string EngineRunner::DescribeDevice(const std::string& device) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = slots_.find(device);
  if (it == slots_.end()) return "no engine worker started yet";
  if (!it->second.hello.device_description().empty()) {
    return it->second.hello.device_description();
  }
  return absl::StrCat("engine worker not running: ", it->second.start_error);
}

absl::Status EngineRunner::EndStatus(const v1::Job& job, const std::string& device, pid_t pid,
                                     const EngineWorker& worker, const EngineWorker::JobEnd& end,
                                     const DaemonConfig& config, std::string* cancel_note) {
  if (!end.done) {
    // The worker died with the job: only this job fails; the next one starts a fresh worker.
    const std::string what = absl::StrCat("the engine worker for ", device, " (pid ", pid, ") ",
                                          end.death, " ", worker.LastStage());
    RecordDeath(absl::StrCat("job ", job.id(), ": ", what, "; a fresh worker runs the next job"));
    if (end.cancelled_by_kill) {
      *cancel_note = what;
      return absl::CancelledError(what);
    }
    if (end.wall_limit_reached) {
      return absl::DeadlineExceededError(absl::StrCat(
          what, "; ask for more time (--time-limit, max_wall_seconds; at most the daemon's ",
          "limits.max_job_seconds ", config.limits.max_job_seconds, " s) or a shorter job"));
    }
    if (end.stalled && !end.stopped) {
      return absl::InternalError(absl::StrCat(
          what, " (a stopped or hung engine worker: SIGSTOP, a stuck kernel, a dead data ",
          "loader); the daemon starts a fresh worker for the next job"));
    }
    return absl::InternalError(
        absl::StrCat(what, "; the daemon starts a fresh worker for the next job"));
  }
  const wv1::Done& done = *end.done;
  if (done.context_lost()) {
    RecordDeath(absl::StrCat("job ", job.id(), ": the CUDA context of ", device,
                             " is unusable (", done.context_error(), "); its worker (pid ", pid,
                             ") was ended, a fresh one runs the next job"));
  }
  if (done.code() == 0) return absl::OkStatus();
  std::string message = done.error();
  if (done.context_lost()) {
    absl::StrAppend(&message, " (the CUDA context was lost: ", done.context_error(),
                    "; the daemon starts a fresh worker for the next job)");
  }
  return absl::Status(static_cast<absl::StatusCode>(done.code()), message);
}

absl::Status EngineRunner::Publish(const v1::Job& job, const std::string& job_dir,
                                   const std::string& scratch, const std::string& prefix,
                                   const DaemonConfig& config, const ProgressFn& progress,
                                   RunOutcome* out) {
  // Publish what the worker wrote, as it wrote it (job_files.h: profile.json records its files
  // relative to the job's output folder, report.html drawn from the job's memory): the job
  // directory's JSON files, metrics.jsonl and report.html; for a --repeat job the earlier
  // trials' folders under trial names and the repeat file from the project root
  // (common/io/trial_artifacts.h).
  std::vector<std::pair<std::string, fs::path>> files;  // published name, file
  auto list = [&](const fs::path& dir, int64_t trial, int64_t trials) -> absl::Status {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      const fs::path& f = entry.path();
      if (entry.is_regular_file() && (f.extension() == ".json" || f.extension() == ".jsonl" ||
                                      f.filename() == "report.html")) {
        files.emplace_back(TrialArtifactName(trial, trials, prefix + f.filename().string()), f);
      }
    }
    if (ec) return absl::UnavailableError(absl::StrCat("cannot list ", dir.string(), ": ",
                                                       ec.message()));
    return absl::OkStatus();
  };
  const int64_t trials = prefix.empty() ? jobspec::JobTrials(job) : 1;
  RETURN_IF_ERROR(list(job_dir, trials - 1, trials));
  const std::string kind = job.kind() == v1::JOB_KIND_RUN ? kRunOutputFolder : kInferOutputFolder;
  for (int64_t t = 0; t + 1 < trials; ++t) {
    RETURN_IF_ERROR(list(fs::path(scratch) / TrialFolderName(kind, t), t, trials));
  }
  if (prefix.empty()) {
    // The repeat file; a single run has none (ranks keep theirs in their own folders).
    for (const char* name : {kInferRepeatFileName, kRunRepeatFileName}) {
      std::error_code ec;
      const fs::path repeat = fs::path(scratch) / name;
      if (fs::exists(repeat, ec)) files.emplace_back(name, repeat);
    }
  }
  std::sort(files.begin(), files.end());
  if (progress) progress(JobProgress{"storing", 0, static_cast<int64_t>(files.size()), ""});
  for (const auto& [name, f] : files) {
    ASSIGN_OR_RETURN(v1::Artifact a, store_->PublishArtifact(job.id(), f.string(), name,
                                                             config.limits.max_artifact_bytes));
    out->artifacts.push_back(std::move(a));
  }
  return absl::OkStatus();
}

RunOutcome EngineRunner::Run(const v1::Job& job, const ProgressFn& progress,
                             const engine::CancelToken& cancel) {
  const std::shared_ptr<const DaemonConfig> snapshot = config_.Get();  // SIGHUP may swap it
  const DaemonConfig& config = *snapshot;
  RunOutcome out;
  auto fail = [&](absl::Status s) {
    out.exit_code = ExitCodeForStatus(s);
    out.status = std::move(s);
    store_->DiscardScratch(job.id());
    // Nothing of a failed job stays published: not the artifacts stored before the failure.
    out.artifacts.clear();
    store_->DiscardArtifacts(job.id());
    return out;
  };
  auto scratch = store_->ScratchDir(job.id());
  if (!scratch.ok()) return fail(scratch.status());
  auto resolved = ResolveJobInputs(job, config, *scratch);
  if (!resolved.ok()) return fail(resolved.status());
  if (jobspec::DataParallelJob(job)) {
    absl::Status s = RunRanks(job, *resolved, *scratch, config, progress, cancel, &out);
    if (!s.ok()) return fail(std::move(s));
    store_->DiscardScratch(job.id());
    return out;
  }

  absl::StatusOr<EngineWorker*> worker = EnsureWorker(job.device());
  if (!worker.ok()) return fail(worker.status());
  const pid_t pid = (*worker)->pid();
  EngineWorker::JobEnd end =
      (*worker)->RunJob(*resolved, *scratch, progress, cancel, Watch(job, config));
  if (absl::Status s = EndStatus(job, job.device(), pid, **worker, end, config, &out.cancel_note);
      !s.ok()) {
    return fail(std::move(s));
  }
  const wv1::Done& done = *end.done;
  if (absl::Status s = Publish(job, done.job_dir(), *scratch, "", config, progress, &out);
      !s.ok()) {
    return fail(std::move(s));
  }
  store_->DiscardScratch(job.id());
  out.step_ms = done.step_ms();
  out.img_per_s = done.img_per_s();
  out.bound = done.bound();
  return out;
}

EngineWorker::Supervision EngineRunner::Watch(const v1::Job& job,
                                              const DaemonConfig& config) const {
  EngineWorker::Supervision watch;
  watch.cancel_grace = cancel_grace_;
  watch.progress_timeout =
      progress_timeout_.value_or(std::chrono::seconds(config.progress_timeout_s));
  // A job recorded before it had a limit of its own (0) runs under the daemon's.
  watch.wall_limit = std::chrono::seconds(
      JobWallSeconds(job.max_wall_seconds(), config.limits.max_job_seconds));
  // The live config's (a reload applies to the jobs sent after it).
  watch.max_decoded_pixels = config.limits.max_decoded_pixels;
  return watch;
}

}  // namespace libreyolo::daemon
