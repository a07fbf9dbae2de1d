#include "client/commands/job_request.h"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "client/cli/job_flags.h"
#include "client/cli/python_cli.h"
#include "client/commands/dataset_name.h"
#include "common/io/image_extensions.h"
#include "common/render/terminal_text.h"
#include "common/status/status_macros.h"
#include "wire/job_spec/job_defaults.h"

namespace libreyolo::cli {
namespace {

namespace fs = std::filesystem;
namespace v1 = ::libreyolo::profiler::v1;

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

// --label KEY=VALUE (repeatable), --priority and --time-limit.
absl::Status FillCommon(const ParsedArgs& a, v1::SubmitJobRequest* r) {
  for (const std::string& l : a.Values("label")) {
    const size_t eq = l.find('=');
    if (eq == std::string::npos || eq == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--label needs KEY=VALUE, got '", Excerpt(l), "'"));
    }
    (*r->mutable_labels())[l.substr(0, eq)] = l.substr(eq + 1);
  }
  if (auto p = a.Value("priority")) {
    int32_t v = 0;
    if (!absl::SimpleAtoi(*p, &v)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--priority needs an integer in -10..10, got '", Excerpt(*p), "'"));
    }
    r->set_priority(v);
  }
  if (auto t = a.Value("time-limit")) {
    // Seconds, or with a unit as Slurm's --time users type them: 90s, 30m, 2h.
    absl::string_view v = *t;
    int64_t scale = 1;
    if (absl::ConsumeSuffix(&v, "h")) {
      scale = 3600;
    } else if (absl::ConsumeSuffix(&v, "m")) {
      scale = 60;
    } else {
      absl::ConsumeSuffix(&v, "s");
    }
    int64_t n = 0;
    if (!absl::SimpleAtoi(v, &n) || n < 1 || n > INT32_MAX / scale) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--time-limit needs a positive number of seconds (or 30m, 2h) up to 2147483647 s, got '",
          Excerpt(*t), "'"));
    }
    r->set_max_wall_seconds(n * scale);
  }
  return absl::OkStatus();
}

// A bare weights name ("LibreYOLO9t.pt": no '/', not ./ or ../) is looked for where the Python
// LibreYOLO looks (its models/__init__.py _resolve_weights_path): weights/<name> first, where it
// keeps and downloads weights, then ./<name>. Returns the first that exists (absolute), or
// nothing with every place looked at in `searched`.
std::optional<std::string> FindBareWeights(const std::string& name,
                                           std::vector<std::string>* searched) {
  std::error_code ec;
  for (const fs::path& candidate : {fs::path("weights") / name, fs::path(name)}) {
    const fs::path abs = fs::absolute(candidate, ec).lexically_normal();
    if (fs::is_regular_file(candidate, ec)) return abs.string();
    searched->push_back(abs.string());
  }
  return std::nullopt;
}

// On a private daemon, the weights (given, or the default name) are the caller's file when one
// exists here (a bare name: FindBareWeights); a name found nowhere here is left for the
// daemon's models directory, with the places looked at (ModelOptions.weights_searched), so that
// a random init names them.
absl::Status LocalWeights(bool remote, v1::ModelOptions* m) {
  if (remote) return absl::OkStatus();
  const std::string given = m->weights().empty() ? jobspec::defaults::kWeights : m->weights();
  if (!absl::StrContains(given, '/')) {
    std::vector<std::string> searched;
    if (auto found = FindBareWeights(given, &searched)) {
      m->set_weights(*found);
    } else {
      for (std::string& s : searched) m->add_weights_searched(std::move(s));
    }
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(auto p, LocalPath("--weights", given, true));
  m->set_weights(p);
  return absl::OkStatus();
}

}  // namespace

std::optional<std::string> PythonSampleImageBeside(const std::string& python_cli) {
  // <prefix>/bin/libreyolo -> <prefix>/lib/python3.X/{site,dist}-packages/libreyolo/assets/.
  std::error_code ec;
  const fs::path lib = fs::path(python_cli).parent_path().parent_path() / "lib";
  std::vector<fs::path> candidates;
  for (auto it = fs::directory_iterator(lib, ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    if (!absl::StartsWith(it->path().filename().string(), "python3")) continue;
    for (const char* packages : {"site-packages", "dist-packages"}) {
      candidates.push_back(it->path() / packages / "libreyolo" / "assets" / "parkour.jpg");
    }
  }
  std::sort(candidates.begin(), candidates.end());
  for (const fs::path& c : candidates) {
    if (fs::is_regular_file(c, ec)) return c.lexically_normal().string();
  }
  return std::nullopt;
}

std::optional<std::string> PythonSampleImage() {
  auto cli = FindPythonCli(CurrentPythonCliSearch());
  if (!cli.ok()) return std::nullopt;
  std::error_code ec;
  const fs::path real = fs::canonical(*cli, ec);
  if (auto found = PythonSampleImageBeside(*cli)) return found;
  if (!ec) return PythonSampleImageBeside(real.string());
  return std::nullopt;
}

absl::StatusOr<v1::SubmitJobRequest> BuildInferRequest(const ParsedArgs& a, bool remote) {
  v1::SubmitJobRequest r;
  v1::InferSpec* s = r.mutable_infer();
  RETURN_IF_ERROR(ReadInferSpec(a, s));
  RETURN_IF_ERROR(LocalWeights(remote, s->mutable_model()));
  if (s->source().empty() && s->images_size() == 0) {
    // The default source, as the Python LibreYOLO's: its bundled photograph when it is
    // installed (else the daemon's generated sample image).
    if (auto sample = PythonSampleImage()) s->set_source(*sample);
  }
  if (!s->source().empty()) {
    const std::string src = s->source();
    std::error_code ec;
    if (remote && fs::exists(src, ec)) {
      // The daemon cannot see our files: the images travel with the request.
      s->clear_source();
      RETURN_IF_ERROR(AddInlineImages(src, s));
    } else if (!remote) {
      if (!fs::exists(src, ec)) {
        return absl::NotFoundError(absl::StrCat("source ", src, ": no such file or directory"));
      }
      s->set_source(fs::absolute(src).lexically_normal().string());
    }  // else: a name in the daemon's images directory
  }
  RETURN_IF_ERROR(FillCommon(a, &r));
  return r;
}

absl::StatusOr<v1::SubmitJobRequest> BuildRunRequest(const ParsedArgs& a, bool remote) {
  v1::SubmitJobRequest r;
  v1::RunSpec* s = r.mutable_run();
  RETURN_IF_ERROR(ReadRunSpec(a, s));
  RETURN_IF_ERROR(LocalWeights(remote, s->mutable_model()));
  if (!remote && !absl::StartsWith(s->data(), "synthetic")) {
    ASSIGN_OR_RETURN(std::string p, LocalPath("data", s->data(), true));
    // A bare name the private daemon's datasets directory lacks: where the Python tool looks.
    if (p == s->data()) {
      ASSIGN_OR_RETURN(p, ResolveDatasetName(p, CurrentDatasetPlaces()));
    }
    s->set_data(p);
  }
  RETURN_IF_ERROR(FillCommon(a, &r));
  return r;
}

// `profile attach`: the processes (--pid, repeatable or comma-separated; --slurm-job; --all),
// the window (--duration-ms or --iterations) and Kineto's switches. The daemon checks the
// bounds (one target, pids > 1, at most 64, the window's ranges).
absl::StatusOr<v1::SubmitJobRequest> BuildAttachRequest(const ParsedArgs& a, bool remote) {
  (void)remote;  // the processes are on the daemon's host either way
  v1::SubmitJobRequest r;
  v1::AttachSpec* s = r.mutable_attach();
  for (const std::string& value : a.Values("pid")) {
    for (absl::string_view piece : absl::StrSplit(value, ',', absl::SkipEmpty())) {
      int32_t pid = 0;
      if (!absl::SimpleAtoi(piece, &pid) || pid <= 1) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--pid needs a process id (an integer > 1), got '", Excerpt(std::string(piece)), "'"));
      }
      s->add_pids(pid);
    }
  }
  if (auto j = a.Value("slurm-job")) s->set_slurm_job_id(*j);
  s->set_all(a.Switch("all"));
  const int targets = (s->pids_size() > 0) + !s->slurm_job_id().empty() + s->all();
  if (targets != 1) {
    return absl::InvalidArgumentError(
        "give one of --pid N, --slurm-job J or --all (`libreyolo profile attach --list` shows "
        "the processes polling the daemon)");
  }
  for (const char* flag : {"duration-ms", "iterations"}) {
    const std::optional<std::string> v = a.Value(flag);
    if (!v) continue;
    ASSIGN_OR_RETURN(const int64_t n, ParseIntFlag(flag, *v));
    if (std::string(flag) == "duration-ms") {
      s->set_duration_ms(n);
    } else {
      s->set_iterations(n);
    }
  }
  if (s->has_duration_ms() && s->has_iterations()) {
    return absl::InvalidArgumentError("give --duration-ms or --iterations, not both");
  }
  v1::ProfilerOptions* p = s->mutable_profiler();
  if (a.Switch("record-shapes")) p->set_record_shapes(true);
  if (a.Switch("profile-memory")) p->set_profile_memory(true);
  if (a.Switch("with-stack")) p->set_with_stack(true);
  if (a.Switch("with-flops")) p->set_with_flops(true);
  if (a.Switch("with-modules")) p->set_with_modules(true);
  if (auto act = a.Value("activities")) {
    for (absl::string_view piece : absl::StrSplit(*act, ',', absl::SkipEmpty())) {
      p->add_activities(std::string(piece));
    }
  }
  RETURN_IF_ERROR(FillCommon(a, &r));
  return r;
}

}  // namespace libreyolo::cli
