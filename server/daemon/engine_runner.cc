#include "server/daemon/engine_runner.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "common/io/atomic_file.h"
#include "common/report/report_html.h"
#include "server/daemon/job_inputs.h"
#include "server/worker/engine_spec.h"

namespace libreyolo::daemon {
namespace {

namespace fs = std::filesystem;

// Removes every occurrence of `prefix` (as it appears inside JSON strings) from the file,
// rewriting it atomically.
absl::Status StripPrefixInFile(const std::string& path, const std::string& prefix) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::UnavailableError(absl::StrCat("cannot read ", path));
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string text = buffer.str();
  in.close();
  std::string escaped;  // JSON escapes '/' optionally and '\\' and '"' always
  for (char c : prefix) {
    if (c == '"' || c == '\\') escaped += '\\';
    escaped += c;
  }
  if (text.find(escaped) == std::string::npos) return absl::OkStatus();
  text = absl::StrReplaceAll(text, {{escaped, ""}});
  const std::string tmp = path + ".rel";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out) return absl::UnavailableError(absl::StrCat("cannot write ", tmp, " (disk full?)"));
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) return absl::UnavailableError(absl::StrCat("cannot replace ", path, ": ", ec.message()));
  return absl::OkStatus();
}

}  // namespace

int ExitCodeFor(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kOk:
      return 0;
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kFailedPrecondition:
      return 2;
    case absl::StatusCode::kOutOfRange:
      return 3;
    default:
      return 1;
  }
}

RunOutcome EngineRunner::Run(const v1::Job& job,
                             const std::function<void(const RunProgress&)>& progress,
                             const engine::CancelToken& cancel) {
  const std::shared_ptr<const DaemonConfig> snapshot = config_.Get();  // SIGHUP may swap it
  const DaemonConfig& config = *snapshot;
  RunOutcome out;
  auto fail = [&](absl::Status s) {
    out.exit_code = ExitCodeFor(s);
    out.status = std::move(s);
    store_->DiscardScratch(job.id());
    // Nothing of a failed job stays published: not the artifacts stored before the failure.
    out.artifacts.clear();
    store_->DiscardArtifacts(job.id());
    return out;
  };
  auto scratch = store_->ScratchDir(job.id());
  if (!scratch.ok()) return fail(scratch.status());
  const engine::ProgressFn on_progress = [&](const engine::JobProgress& p) {
    if (progress) progress(RunProgress{p.stage, p.done, p.total, p.message});
  };

  auto resolved = ResolveJobInputs(job, config, *scratch);
  if (!resolved.ok()) return fail(resolved.status());
  absl::StatusOr<engine::JobResult> result;
  std::string job_dir;  // where the engine wrote profile.json and the traces
  try {
    std::lock_guard<std::mutex> lock(engine_mu_);
    const v1::SubmitJobRequest& request = resolved->request();
    if (request.has_infer()) {
      job_dir = (fs::path(*scratch) / "infer").string();
      result = engine::RunInferJob(worker::ToEngineInferSpec(request.infer(), job.device(), *scratch),
                                   on_progress, &cancel);
    } else {
      job_dir = (fs::path(*scratch) / "prof").string();
      result = engine::RunTrainJob(worker::ToEngineTrainSpec(request.run(), job.device(), *scratch),
                                   on_progress, &cancel);
    }
  } catch (const std::exception& e) {
    return fail(absl::InternalError(absl::StrCat("the engine failed: ", e.what())));
  }
  if (!result.ok()) return fail(result.status());

  // Publish: the job directory's files, and profile_repeat.json from the project root.
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(job_dir, ec)) {
    if (entry.is_regular_file() && entry.path().extension() == ".json")
      files.push_back(entry.path());
  }
  if (ec)
    return fail(absl::UnavailableError(absl::StrCat("cannot list ", job_dir, ": ", ec.message())));
  const fs::path repeat = fs::path(*scratch) / "profile_repeat.json";
  if (fs::exists(repeat, ec)) files.push_back(repeat);
  std::sort(files.begin(), files.end());
  // The engine records where it wrote (profile.trace, the cycle traces): the daemon's scratch
  // directory, which callers must not see and which is gone once published. Make those
  // paths relative to the job's output folder ("infer/profile_trace.json").
  for (const fs::path& f : files) {
    if (f.filename() != "profile.json" && f.filename() != "profile_repeat.json") continue;
    if (auto s = StripPrefixInFile(f.string(), *scratch + "/"); !s.ok()) return fail(s);
  }
  // The HTML report, stored with the job as `run`/`infer` write it beside a local profile: drawn
  // from the profile and its trace by the same code as `libreyolo profile report`. A page that
  // cannot be drawn does not fail a job whose profile is fine (`report job:<id>` can retry).
  if (const fs::path profile = fs::path(job_dir) / "profile.json"; fs::exists(profile, ec)) {
    const fs::path page = fs::path(job_dir) / "report.html";
    absl::StatusOr<std::string> html =
        RenderReportFiles({profile.string()}, {absl::StrCat("job:", job.id())});
    if (html.ok() && WriteFileAtomically(page.string(), *html).ok()) {
      files.push_back(page);
      std::sort(files.begin(), files.end());
    }
  }
  if (progress) progress(RunProgress{"storing", 0, static_cast<int64_t>(files.size()), ""});
  for (const fs::path& f : files) {
    auto a = store_->PublishArtifact(job.id(), f.string(), f.filename().string(),
                                     config.limits.max_artifact_bytes);
    if (!a.ok()) return fail(a.status());
    out.artifacts.push_back(*a);
  }
  store_->DiscardScratch(job.id());
  out.step_ms = result->profile.step_ms.value_or(0);
  out.img_per_s = result->profile.img_per_s.value_or(0);
  out.bound = result->profile.bound;
  return out;
}

}  // namespace libreyolo::daemon
