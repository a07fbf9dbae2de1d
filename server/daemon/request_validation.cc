#include "server/daemon/request_validation.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/daemon/job_manager.h"

namespace libreyolo::daemon {
namespace {

// The CLI flag a request field comes from, for messages a CLI user reads ("--half
// (infer.half)"); a gRPC client still finds the field name. "" for fields with no flag.
std::string FlagOf(const std::string& field) {
  static const std::vector<std::pair<std::string, std::string>> kPositional = {
      {"run.data", "DATA (the dataset argument)"}, {"infer.source", "SOURCE (the image argument)"}};
  for (const auto& [f, name] : kPositional) {
    if (field == f) return name;
  }
  std::string rest = field;
  for (const char* prefix : {"infer.profiler.", "run.profiler.", "infer.", "run.", "model."}) {
    if (absl::StartsWith(rest, prefix)) {
      rest = rest.substr(std::string(prefix).size());
      break;
    }
  }
  if (rest.empty() || rest == field || absl::StrContains(rest, ' ') ||
      absl::StrContains(rest, '[') || absl::StrContains(rest, '/')) {
    return "";
  }
  if (rest == "overhead_budget_pct") rest = "overhead_budget";
  std::replace(rest.begin(), rest.end(), '_', '-');
  return absl::StrCat("--", rest);
}

std::string Named(const std::string& field) {
  const std::string flag = FlagOf(field);
  return flag.empty() ? field : absl::StrCat(flag, " (", field, ")");
}

absl::Status Bad(const std::string& field, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(Named(field), ": ", what));
}

absl::Status Limit(const std::string& field, int64_t value, int64_t limit, const char* key) {
  return absl::ResourceExhaustedError(
      absl::StrCat(Named(field), ": ", value, " exceeds this daemon's ", key, " (", limit, ")"));
}

bool IsLabelKey(const std::string& k) {
  if (k.empty() || k.size() > 63) return false;
  return std::all_of(k.begin(), k.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-' ||
           c == '/';
  });
}

// A name in a daemon directory, or (when allowed) an absolute local path.
absl::Status CheckNameOrPath(const std::string& field, const std::string& value, bool local_ok,
                             const char* dir_key) {
  if (value.empty() || IsPlainName(value)) return absl::OkStatus();
  if (!absl::StrContains(value, '/')) {
    return Bad(field, absl::StrCat("'", value, "' is not a valid name (letters, digits, . _ -)"));
  }
  if (!local_ok) {
    return Bad(field, absl::StrCat("'", value,
                                   "' is a path; this daemon accepts only names in its ", dir_key,
                                   " (GetDaemonInfo lists them), so that no request "
                                   "names a path on the server"));
  }
  if (value[0] != '/') return Bad(field, "local paths must be absolute");
  return absl::OkStatus();
}

absl::Status CheckModel(const v1::ModelOptions& m, const DaemonConfig& config, bool local_ok,
                        std::string* device) {
  if (!m.size().empty() && m.size() != "t" && m.size() != "s" && m.size() != "m" &&
      m.size() != "c") {
    return Bad("model.size", absl::StrCat("'", m.size(), "' is not t, s, m or c"));
  }
  if (auto s = CheckNameOrPath("model.weights", m.weights(), local_ok, "models_dir"); !s.ok()) {
    return s;
  }
  if (m.threads() < 0 || m.threads() > 1024) return Bad("model.threads", "must be 0..1024");
  if (m.device().empty()) {
    *device = config.devices.empty() ? "cpu" : config.devices.front();
    auto d = NormaliseDevice(*device);
    if (d.ok()) *device = *d;
    return absl::OkStatus();
  }
  auto d = NormaliseDevice(m.device());
  if (!d.ok()) return d.status();
  *device = *d;
  return absl::OkStatus();
}

absl::Status CheckImgsz(const std::string& field, int64_t v, const Limits& limits) {
  if (v == 0) return absl::OkStatus();
  if (v < 32 || v % 32 != 0) return Bad(field, "must be a multiple of 32, at least 32");
  if (v > limits.max_imgsz) return Limit(field, v, limits.max_imgsz, "max_imgsz");
  return absl::OkStatus();
}

absl::Status CheckProfiler(const std::string& field, const v1::ProfilerOptions& p,
                           const std::string& device) {
  if (p.has_overhead_budget_pct() &&
      !(p.overhead_budget_pct() >= 0 && p.overhead_budget_pct() <= 1000)) {
    return Bad(field + ".overhead_budget_pct", "must be 0..1000");
  }
  for (const std::string& a : p.activities()) {
    if (a != "cpu" && a != "cuda") {
      return Bad(field + ".activities", absl::StrCat("'", a, "' is not cpu or cuda"));
    }
    // A CPU job has no CUDA activity to record: say so instead of quietly recording cpu only.
    if (a == "cuda" && device == "cpu") {
      return Bad(field + ".activities",
                 "cuda needs a CUDA device and this job runs on cpu; use --activities cpu, or "
                 "--device 0 for a GPU");
    }
  }
  return absl::OkStatus();
}

absl::Status CheckInfer(const v1::InferSpec& s, const DaemonConfig& config, bool local_ok,
                        const std::string& device) {
  const Limits& l = config.limits;
  if (s.batch() < 0) return Bad("infer.batch", "must be >= 1");
  if (s.batch() > l.max_batch) return Limit("infer.batch", s.batch(), l.max_batch, "max_batch");
  if (auto st = CheckImgsz("infer.imgsz", s.imgsz(), l); !st.ok()) return st;
  if (s.has_warmup() && s.warmup() < 0) return Bad("infer.warmup", "must be >= 0");
  if (s.has_runs() && s.runs() < 1) return Bad("infer.runs", "must be >= 1");
  const int64_t iters = (s.has_warmup() ? s.warmup() : 20) + (s.has_runs() ? s.runs() : 100);
  if (iters > l.max_runs) return Limit("infer.warmup + infer.runs", iters, l.max_runs, "max_runs");
  if (s.repeat() < 0) return Bad("infer.repeat", "must be >= 1");
  if (s.repeat() > l.max_repeat)
    return Limit("infer.repeat", s.repeat(), l.max_repeat, "max_repeat");
  if (s.has_conf() && (s.conf() < 0 || s.conf() > 1)) return Bad("infer.conf", "must be in [0, 1]");
  if (s.has_iou() && (s.iou() < 0 || s.iou() > 1)) return Bad("infer.iou", "must be in [0, 1]");
  if (s.max_det() < 0 || s.max_det() > 30000) return Bad("infer.max_det", "must be 1..30000");
  if (!s.amp_dtype().empty() && s.amp_dtype() != "float16" && s.amp_dtype() != "bfloat16") {
    return Bad("infer.amp_dtype", "must be float16 or bfloat16");
  }
  if (s.half() && device == "cpu") {
    return Bad("infer.half", "autocast runs on CUDA only; drop --half for a cpu job");
  }
  if (!s.source().empty() && s.images_size() > 0) {
    return Bad("infer.source", "give a source name or inline images, not both");
  }
  if (auto st = CheckNameOrPath("infer.source", s.source(), local_ok, "images_dir"); !st.ok()) {
    return st;
  }
  int64_t bytes = 0;
  for (int i = 0; i < s.images_size(); ++i) {
    const v1::InlineImage& im = s.images(i);
    if (im.data().empty()) return Bad(absl::StrCat("infer.images[", i, "].data"), "is empty");
    if (im.name().size() > 255) return Bad(absl::StrCat("infer.images[", i, "].name"), "too long");
    bytes += static_cast<int64_t>(im.data().size());
  }
  if (bytes > l.max_inline_image_bytes) {
    return Limit("infer.images (total bytes)", bytes, l.max_inline_image_bytes,
                 "max_inline_image_bytes");
  }
  return CheckProfiler("infer.profiler", s.profiler(), device);
}

absl::Status CheckRun(const v1::RunSpec& s, const DaemonConfig& config, bool local_ok,
                      const std::string& device) {
  const Limits& l = config.limits;
  if (s.data().empty()) return Bad("run.data", "required: a dataset name or synthetic[:N]");
  if (!absl::StartsWith(s.data(), "synthetic")) {
    if (auto st = CheckNameOrPath("run.data", s.data(), local_ok, "datasets_dir"); !st.ok()) {
      return st;
    }
  }
  if (s.batch() < -1) return Bad("run.batch", "must be >= 1, or -1 for auto");
  if (s.batch() > l.max_batch) return Limit("run.batch", s.batch(), l.max_batch, "max_batch");
  if (auto st = CheckImgsz("run.imgsz", s.imgsz(), l); !st.ok()) return st;
  if (s.has_workers() && (s.workers() < 0 || s.workers() > 64)) {
    return Bad("run.workers", "must be 0..64");
  }
  if (s.steps() < 0) return Bad("run.steps", "must be >= 1");
  if (s.has_warmup() && s.warmup() < 0) return Bad("run.warmup", "must be >= 0");
  if (s.repeat() < 0) return Bad("run.repeat", "must be >= 1");
  if (s.repeat() > l.max_repeat) return Limit("run.repeat", s.repeat(), l.max_repeat, "max_repeat");
  if (s.skip_first() < 0 || s.wait() < 0) return Bad("run.skip_first/wait", "must be >= 0");
  if (s.cycles() < 0 || s.cycles() > 100) return Bad("run.cycles", "must be 1..100");
  const int64_t steps = s.steps() == 0 ? 20 : s.steps();
  const int64_t warmup = s.has_warmup() ? s.warmup() : 5;
  const int64_t cycles = s.cycles() == 0 ? 1 : s.cycles();
  const int64_t repeat = s.repeat() == 0 ? 1 : s.repeat();
  const int64_t total =
      repeat * (warmup + steps) + s.skip_first() + cycles * (s.wait() + warmup + steps);
  if (total > l.max_steps) return Limit("run (total steps)", total, l.max_steps, "max_steps");
  return CheckProfiler("run.profiler", s.profiler(), device);
}

}  // namespace

bool IsPlainName(const std::string& name) {
  if (name.empty() || name.size() > 255 || name[0] == '.') return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
  });
}

bool MayNameLocalPaths(const DaemonConfig& config, const Identity& who) {
  return config.allow_local_paths && who.unix_peer && who.uid.has_value() && *who.uid == ::getuid();
}

absl::Status ValidateSubmit(const v1::SubmitJobRequest& r, const DaemonConfig& config,
                            const Identity& who, std::string* device) {
  if (r.spec_case() == v1::SubmitJobRequest::SPEC_NOT_SET) {
    return Bad("spec", "set infer or run");
  }
  if (r.labels_size() > 32) return Bad("labels", "at most 32 labels");
  for (const auto& [k, v] : r.labels()) {
    if (!IsLabelKey(k)) {
      return Bad("labels", absl::StrCat("key '", k, "' must match [a-z0-9_.-/]{1,63}"));
    }
    if (v.size() > 256) return Bad(absl::StrCat("labels[", k, "]"), "value over 256 bytes");
  }
  if (r.priority() < -10 || r.priority() > 10) return Bad("priority", "must be -10..10");
  if (r.request_id().size() > 128) return Bad("request_id", "at most 128 bytes");
  const bool local_ok = MayNameLocalPaths(config, who);
  if (r.has_infer()) {
    if (auto s = CheckModel(r.infer().model(), config, local_ok, device); !s.ok()) return s;
    return CheckInfer(r.infer(), config, local_ok, *device);
  }
  if (auto s = CheckModel(r.run().model(), config, local_ok, device); !s.ok()) return s;
  return CheckRun(r.run(), config, local_ok, *device);
}

absl::Status CheckInputsExist(const v1::SubmitJobRequest& r, const DaemonConfig& config) {
  namespace fs = std::filesystem;
  std::error_code ec;
  auto in_dir = [](const std::string& dir, const std::string& name) {
    return IsPlainName(name) ? (fs::path(dir) / name).string() : name;
  };
  const v1::ModelOptions& m = r.has_infer() ? r.infer().model() : r.run().model();
  if (!m.weights().empty() && m.weights() != "LibreYOLO9t.pt") {
    const std::string path = in_dir(config.models_dir, m.weights());
    if (!fs::is_regular_file(path, ec)) {
      return absl::NotFoundError(absl::StrCat("model.weights: ", m.weights(),
                                              " not found (looked at ", path,
                                              "; GetDaemonInfo lists the models)"));
    }
  }
  if (r.has_infer() && !r.infer().source().empty()) {
    const std::string path = in_dir(config.images_dir, r.infer().source());
    if (!fs::exists(path, ec)) {
      return absl::NotFoundError(
          absl::StrCat("infer.source: ", r.infer().source(), " not found (looked at ", path, ")"));
    }
  }
  if (r.has_run() && !absl::StartsWith(r.run().data(), "synthetic")) {
    const std::string& data = r.run().data();
    std::vector<std::string> candidates;
    if (IsPlainName(data)) {
      const fs::path dir(config.datasets_dir);
      candidates = {(dir / (data + ".yaml")).string(), (dir / data / (data + ".yaml")).string(),
                    (dir / data / "data.yaml").string(), (dir / data).string()};
      if (absl::EndsWith(data, ".yaml")) candidates.push_back((dir / data).string());
    } else {
      candidates = {data};
    }
    bool found = false;
    for (const std::string& c : candidates) found = found || fs::exists(c, ec);
    if (!found) {
      return absl::NotFoundError(absl::StrCat("run.data: dataset '", data,
                                              "' not found (looked at ",
                                              absl::StrJoin(candidates, ", "), ")"));
    }
  }
  return absl::OkStatus();
}

}  // namespace libreyolo::daemon
