#include "server/daemon/jobs/job_inputs.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/io/image_extensions.h"
#include "common/status/status_macros.h"
#include "wire/job_spec/job_defaults.h"
#include "server/daemon/config/plain_name.h"

namespace libreyolo::daemon {
namespace {

namespace fs = std::filesystem;

void ResolveModel(const DaemonConfig& config, v1::ModelOptions* m) {
  const std::string default_name = jobspec::defaults::kWeights;
  const std::string& w = m->weights();
  if (w.empty() || w == default_name) {
    // The default name: the models directory's copy, else the engine's seeded random init.
    const fs::path in_dir = fs::path(config.models_dir) / default_name;
    std::error_code ec;
    const bool found = fs::exists(in_dir, ec);
    m->set_weights(found ? in_dir.string() : default_name);
    // The random init names every place looked at: the caller's, then this one (its path on a
    // private daemon, whose caller is its owner; a shared daemon's layout is not echoed).
    if (!found) {
      m->add_weights_searched(config.allow_local_paths
                                 ? in_dir.string()
                                 : absl::StrCat("the daemon's models_dir (", default_name, ")"));
    }
  } else if (IsPlainName(w)) {
    m->set_weights((fs::path(config.models_dir) / w).string());
  }  // else a local path, allowed at submission (private daemon, same uid)
  if (m->threads() <= 0 && config.cpu_threads > 0) m->set_threads(config.cpu_threads);
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
    if (!HasImageExtension(s.images(i).name())) ext = ".jpg";
    const fs::path file = dir / absl::StrCat("image_", i, ext);
    std::ofstream out(file, std::ios::binary);
    out.write(s.images(i).data().data(), static_cast<std::streamsize>(s.images(i).data().size()));
    if (!out) return absl::UnavailableError(absl::StrCat("cannot write ", file.string()));
  }
  return dir.string();
}

}  // namespace

absl::StatusOr<v1::Job> ResolveJobInputs(const v1::Job& job, const DaemonConfig& config,
                                         const std::string& scratch) {
  v1::Job out = job;
  v1::SubmitJobRequest* request = out.mutable_request();
  if (request->has_infer()) {
    v1::InferSpec* r = request->mutable_infer();
    ResolveModel(config, r->mutable_model());
    if (r->images_size() > 0) {
      ASSIGN_OR_RETURN(std::string dir, WriteInlineImages(*r, scratch));
      r->set_source(dir);
      r->clear_images();
    } else if (IsPlainName(r->source())) {
      r->set_source((fs::path(config.images_dir) / r->source()).string());
    }  // else empty (the sample image) or an allowed local path
  } else if (request->has_run()) {
    v1::ModelOptions* m = request->mutable_run()->mutable_model();
    ResolveModel(config, m);
    // The ranks of a data-parallel CPU run share the host's cores: each takes its share (all
    // cores each would oversubscribe them N times).
    if (m->threads() <= 0 && out.devices_size() > 1 && absl::StartsWith(out.device(), "cpu")) {
      const auto cores = static_cast<int32_t>(std::max(1u, std::thread::hardware_concurrency()));
      m->set_threads(std::max<int32_t>(1, cores / out.devices_size()));
    }
  }  // an attach job (issue 37) has no inputs: its processes run already
  return out;
}

}  // namespace libreyolo::daemon
