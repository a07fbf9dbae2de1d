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
#include "server/daemon/request_validation.h"

namespace libreyolo::daemon {
namespace {

namespace fs = std::filesystem;

engine::ModelSpec ToModel(const v1::ModelOptions& m, const v1::Job& job,
                          const DaemonConfig& config) {
  engine::ModelSpec out;
  const std::string& w = m.weights();
  if (w.empty() || w == out.weights) {
    // The default name: the models directory's copy, else the engine's seeded random init.
    const fs::path in_dir = fs::path(config.models_dir) / out.weights;
    if (std::error_code ec; fs::exists(in_dir, ec)) out.weights = in_dir.string();
  } else if (IsPlainName(w)) {
    out.weights = (fs::path(config.models_dir) / w).string();
  } else {
    out.weights = w;  // a local path, allowed at submission (private daemon, same uid)
  }
  if (!m.size().empty()) out.size = m.size();
  out.device = job.device() == "cpu" ? "cpu" : job.device().substr(5);  // "cuda:N" -> "N"
  out.threads = m.threads() > 0 ? m.threads() : config.cpu_threads;
  return out;
}

template <typename Switches>
void ToSwitches(const v1::ProfilerOptions& p, Switches* s) {
  if (p.has_record_shapes()) s->record_shapes = p.record_shapes();
  if (p.has_profile_memory()) s->profile_memory = p.profile_memory();
  if (p.has_with_flops()) s->with_flops = p.with_flops();
  if (p.has_with_modules()) {
    s->with_modules = p.with_modules();
  } else if (p.with_stack()) {
    s->with_modules = true;  // the deprecated alias
  }
  if (p.has_overhead_budget_pct()) s->overhead_budget_pct = p.overhead_budget_pct();
  if (p.activities_size() > 0) {
    s->cuda =
        std::find(p.activities().begin(), p.activities().end(), "cuda") != p.activities().end();
  }
}

// Inline images go into the scratch directory, under names we choose.
absl::StatusOr<std::string> WriteInlineImages(const v1::InferSpec& s, const std::string& scratch) {
  const fs::path dir = fs::path(scratch) / "input";
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    return absl::UnavailableError(absl::StrCat("cannot create ", dir.string(), ": ", ec.message()));
  for (int i = 0; i < s.images_size(); ++i) {
    std::string ext = fs::path(s.images(i).name()).extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    static const std::vector<std::string> kKnown = {".jpg",  ".jpeg", ".png", ".bmp",
                                                    ".webp", ".tif",  ".tiff"};
    if (std::find(kKnown.begin(), kKnown.end(), ext) == kKnown.end()) ext = ".jpg";
    const fs::path file = dir / absl::StrCat("image_", i, ext);
    std::ofstream out(file, std::ios::binary);
    out.write(s.images(i).data().data(), static_cast<std::streamsize>(s.images(i).data().size()));
    if (!out) return absl::UnavailableError(absl::StrCat("cannot write ", file.string()));
  }
  return dir.string();
}

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

  absl::StatusOr<engine::JobResult> result;
  std::string job_dir;  // where the engine wrote profile.json and the traces
  try {
    std::lock_guard<std::mutex> lock(engine_mu_);
    if (job.request().has_infer()) {
      const v1::InferSpec& r = job.request().infer();
      engine::InferJobSpec s;
      s.model = ToModel(r.model(), job, config);
      if (r.images_size() > 0) {
        auto dir = WriteInlineImages(r, *scratch);
        if (!dir.ok()) return fail(dir.status());
        s.source = *dir;
      } else if (IsPlainName(r.source())) {
        s.source = (fs::path(config.images_dir) / r.source()).string();
      } else {
        s.source = r.source();  // empty (the sample image) or an allowed local path
      }
      if (r.batch() > 0) s.batch = r.batch();
      if (r.imgsz() > 0) s.imgsz = r.imgsz();
      s.half = r.half();
      if (!r.amp_dtype().empty()) s.amp_dtype = r.amp_dtype();
      if (r.has_warmup()) s.warmup = r.warmup();
      if (r.has_runs()) s.runs = r.runs();
      if (r.repeat() > 0) s.repeat = r.repeat();
      if (r.has_conf()) s.conf = r.conf();
      if (r.has_iou()) s.iou = r.iou();
      if (r.max_det() > 0) s.max_det = r.max_det();
      if (r.has_trace()) s.trace = r.trace();
      ToSwitches(r.profiler(), &s.profiler);
      s.project = *scratch;
      job_dir = (fs::path(*scratch) / "infer").string();
      result = engine::RunInferJob(s, on_progress, &cancel);
    } else {
      const v1::RunSpec& r = job.request().run();
      engine::TrainJobSpec s;
      s.model = ToModel(r.model(), job, config);
      s.data = r.data();
      if (r.batch() != 0) s.batch = r.batch();
      if (r.imgsz() > 0) s.imgsz = r.imgsz();
      if (r.has_workers()) s.workers = r.workers();
      if (r.has_amp()) s.amp = r.amp();
      if (r.steps() > 0) s.steps = r.steps();
      if (r.has_warmup()) s.warmup = r.warmup();
      if (r.repeat() > 0) s.repeat = r.repeat();
      s.skip_first = r.skip_first();
      s.wait = r.wait();
      if (r.cycles() > 0) s.cycles = r.cycles();
      ToSwitches(r.profiler(), &s.profiler);
      s.project = *scratch;
      job_dir = (fs::path(*scratch) / "prof").string();
      result = engine::RunTrainJob(s, on_progress, &cancel);
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
