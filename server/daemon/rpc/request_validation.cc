#include "server/daemon/rpc/request_validation.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/analysis/what_if.h"
#include "common/job/names.h"
#include "common/readers/latency_view.h"
#include "common/readers/modules_view.h"
#include "common/readers/top_rows.h"
#include "common/render/terminal_text.h"
#include "common/status/status_macros.h"
#include "wire/job_spec/job_spec.h"
#include "wire/reader_spec/reader_request.h"
#include "server/daemon/attach/attach_job.h"
#include "server/daemon/jobs/job_manager.h"

namespace libreyolo::daemon {
namespace {

absl::Status Bad(const std::string& field, const std::string& what) {
  return jobspec::FieldError(field, what);
}

absl::Status Limit(const std::string& field, int64_t value, int64_t limit, const char* key) {
  return jobspec::LimitError(field, value, limit, "this daemon's", key);
}

// A count with a fixed range in the contract: INVALID_ARGUMENT naming the range.
absl::Status Range(const std::string& field, int64_t v, int64_t lo, int64_t hi) {
  if (v >= lo && v <= hi) return absl::OkStatus();
  return Bad(field, absl::StrCat(v, " is outside ", lo, "..", hi));
}

absl::Status MaxBytes(const std::string& field, const std::string& v, size_t max) {
  if (v.size() <= max) return absl::OkStatus();
  return Bad(field, absl::StrCat("'", Excerpt(v), "' is longer than ", max, " bytes"));
}

// A name in a daemon directory, or (when allowed) an absolute local path.
absl::Status CheckNameOrPath(const std::string& field, const std::string& value, bool local_ok,
                             const char* dir_key) {
  if (value.empty() || IsPlainName(value)) return absl::OkStatus();
  RETURN_IF_ERROR(MaxBytes(field, value, local_ok ? kMaxLocalPathBytes : kMaxNameBytes));
  if (!absl::StrContains(value, '/')) {
    return Bad(field, absl::StrCat("'", Excerpt(value),
                                   "' is not a valid name (letters, digits, . _ -, not starting "
                                   "with '.', at most 255 bytes)"));
  }
  if (!local_ok) {
    return Bad(field, absl::StrCat("'", Excerpt(value),
                                   "' is a path; this daemon accepts only names in its ", dir_key,
                                   " (GetDaemonInfo lists them), so that no request "
                                   "names a path on the server"));
  }
  if (value[0] != '/') return Bad(field, "local paths must be absolute");
  if (value.find('\0') != std::string::npos) return Bad(field, "a path holds no NUL byte");
  return absl::OkStatus();
}

bool IsSyntheticData(const std::string& data) {
  return data == "synthetic" || absl::StartsWith(data, "synthetic:");
}

// "synthetic" or "synthetic:N", N decimal digits, 1..kMaxSyntheticImages.
absl::Status CheckSynthetic(const std::string& data) {
  if (data == "synthetic") return absl::OkStatus();
  const std::string count = data.substr(std::string_view("synthetic:").size());
  const bool digits = !count.empty() && count.size() <= 7 &&
                      std::all_of(count.begin(), count.end(), absl::ascii_isdigit);
  int64_t n = 0;
  if (digits) n = std::stoll(count);
  if (!digits || n < 1 || n > kMaxSyntheticImages) {
    return Bad("run.data", absl::StrCat("'", Excerpt(data),
                                        "': the synthetic image count must be an integer in 1..",
                                        kMaxSyntheticImages, " (e.g. synthetic:256)"));
  }
  return absl::OkStatus();
}

absl::Status CheckModel(const v1::ModelOptions& m, const DaemonConfig& config, bool local_ok,
                        std::string* device) {
  RETURN_IF_ERROR(CheckNameOrPath("model.weights", m.weights(), local_ok, "models_dir"));
  if (m.weights_searched_size() > kMaxWeightsSearched) {
    return Bad("model.weights_searched", absl::StrCat("at most ", kMaxWeightsSearched,
                                                      " places, got ", m.weights_searched_size()));
  }
  for (const std::string& place : m.weights_searched()) {
    if (place.size() > kMaxLocalPathBytes || !IsPrintableUtf8(place)) {
      return Bad("model.weights_searched",
                 absl::StrCat("'", Excerpt(place), "' is not a path (at most ", kMaxLocalPathBytes,
                              " bytes of printable UTF-8)"));
    }
  }
  if (m.device().empty()) {
    *device = config.devices.empty() ? "cpu" : config.devices.front();
    auto d = NormaliseDevice(*device);
    if (d.ok()) *device = *d;
    return absl::OkStatus();
  }
  if (m.device().size() > kMaxShortStringBytes || !IsPrintableUtf8(m.device())) {
    return Bad("model.device", absl::StrCat("'", Excerpt(m.device()),
                                            "' is not a device (use cpu, 0, 1, ... or cuda:N)"));
  }
  ASSIGN_OR_RETURN(auto d, NormaliseDevice(m.device()));
  *device = d;
  return absl::OkStatus();
}

// "cpu" and the further CPU slots ("cpu:1"): jobs that run on the host.
bool IsCpuSlot(const std::string& device) { return absl::StartsWith(device, "cpu"); }

absl::Status CheckInfer(const v1::InferSpec& s, const DaemonConfig& config, bool local_ok,
                        const std::string& device) {
  const Limits& l = config.limits;
  // The options' values (ranges, the imgsz grid, the limits): the job spec's one validator.
  RETURN_IF_ERROR(jobspec::ValidateInferSpec(s, l, IsCpuSlot(device)));
  if (!s.source().empty() && s.images_size() > 0) {
    return Bad("infer.source", "give a source name or inline images, not both");
  }
  RETURN_IF_ERROR(CheckNameOrPath("infer.source", s.source(), local_ok, "images_dir"));
  if (s.images_size() > kMaxInlineImages) {
    return Bad("infer.images", absl::StrCat(s.images_size(), " images; at most ",
                                            kMaxInlineImages));
  }
  int64_t bytes = 0;
  for (int i = 0; i < s.images_size(); ++i) {
    const v1::InlineImage& im = s.images(i);
    const std::string field = absl::StrCat("infer.images[", i, "]");
    if (im.data().empty()) return Bad(field + ".data", "is empty");
    RETURN_IF_ERROR(MaxBytes(field + ".name", im.name(), kMaxNameBytes));
    if (!IsPrintableUtf8(im.name())) {
      return Bad(field + ".name", absl::StrCat("'", Excerpt(im.name()),
                                               "' holds control characters"));
    }
    bytes += static_cast<int64_t>(im.data().size());  // each under the message size limit
  }
  if (bytes > l.max_inline_image_bytes) {
    return Limit("infer.images (total bytes)", bytes, l.max_inline_image_bytes,
                 "max_inline_image_bytes");
  }
  return absl::OkStatus();
}

absl::Status CheckRun(const v1::RunSpec& s, const DaemonConfig& config, bool local_ok,
                      const std::string& device) {
  const Limits& l = config.limits;
  if (s.data().empty()) return Bad("run.data", "required: a dataset name or synthetic[:N]");
  if (IsSyntheticData(s.data())) {
    RETURN_IF_ERROR(CheckSynthetic(s.data()));
  } else {
    RETURN_IF_ERROR(CheckNameOrPath("run.data", s.data(), local_ok, "datasets_dir"));
  }
  // The options' values (ranges, the imgsz grid, the schedule's total, the limits): the job
  // spec's one validator.
  return jobspec::ValidateRunSpec(s, l, IsCpuSlot(device));
}

absl::Status CheckLabels(const std::string& field,
                         const google::protobuf::Map<std::string, std::string>& labels) {
  if (labels.size() > static_cast<size_t>(kMaxLabels)) {
    return Bad(field, absl::StrCat(labels.size(), " labels; at most ", kMaxLabels));
  }
  for (const auto& [k, v] : labels) {
    if (!IsLabelKey(k)) {
      return Bad(field, absl::StrCat("key '", Excerpt(k), "' must match [a-z0-9_.-/]{1,63}"));
    }
    if (v.size() > kMaxTextBytes) {
      return Bad(absl::StrCat(field, "[", k, "]"),
                 absl::StrCat("value is ", v.size(), " bytes; at most ", kMaxTextBytes));
    }
    if (!IsLabelValue(v)) {
      return Bad(absl::StrCat(field, "[", k, "]"),
                 absl::StrCat("value '", Excerpt(v),
                              "' must be printable UTF-8 (no control characters, tab, CR or "
                              "newline)"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckProfileRef(const std::string& field, const v1::ProfileRef& ref) {
  RETURN_IF_ERROR(ValidateJobId(field + ".job_id", ref.job_id()));
  return MaxBytes(field + ".artifact", ref.artifact(), kMaxNameBytes);
}

absl::Status CheckTop(bool has, int32_t top) {
  if (!has) return absl::OkStatus();
  return libreyolo::CheckTop(top);
}

}  // namespace

bool IsLabelKey(const std::string& k) {
  if (k.empty() || k.size() > kMaxLabelKeyBytes) return false;
  return std::all_of(k.begin(), k.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-' ||
           c == '/';
  });
}

bool IsLabelValue(const std::string& v) { return v.size() <= kMaxTextBytes && IsPrintableUtf8(v); }

bool MayNameLocalPaths(const DaemonConfig& config, const Identity& who) {
  return config.allow_local_paths && who.unix_peer && who.uid.has_value() && *who.uid == ::getuid();
}

absl::Status ValidateJobId(const std::string& field, const std::string& id) {
  if (id.empty()) return Bad(field, "required");
  if (!IsJobId(id)) return Bad(field, NotAJobIdMessage(id));
  return absl::OkStatus();
}

// `profile attach` (issue 37 §3-4): exactly one target, the window's bounds, and only the
// profiler switches Kineto's on-demand configuration has.
absl::Status CheckAttachSpec(const v1::AttachSpec& a, const Limits& limits) {
  namespace bounds = jobspec::bounds;
  const int targets = (a.pids_size() > 0 ? 1 : 0) + (a.slurm_job_id().empty() ? 0 : 1) +
                      (a.all() ? 1 : 0);
  if (targets != 1) {
    return Bad("attach", "name exactly one target: pids (--pid), slurm_job_id (--slurm-job) or "
                         "all (--all)");
  }
  if (a.pids_size() > bounds::kMaxAttachPids) {
    return Bad("attach.pids", absl::StrCat("at most ", bounds::kMaxAttachPids, " entries"));
  }
  for (const int32_t pid : a.pids()) {
    if (pid <= 1) return Bad("attach.pids", absl::StrCat(pid, " is not a process to trace (> 1)"));
  }
  if (!a.slurm_job_id().empty()) {
    const std::string& j = a.slurm_job_id();
    const bool ok = j.size() <= 32 && std::all_of(j.begin(), j.end(), [](char c) {
                      return absl::ascii_isdigit(static_cast<unsigned char>(c)) || c == '_' ||
                             c == '.';
                    });
    if (!ok) {
      return Bad("attach.slurm_job_id",
                 absl::StrCat("'", Excerpt(j), "' is not a Slurm job id ([0-9_.], at most 32)"));
    }
  }
  if (a.has_duration_ms() && a.has_iterations()) {
    return Bad("attach", "give duration_ms (--duration-ms) or iterations (--iterations), not both");
  }
  if (a.has_duration_ms()) {
    RETURN_IF_ERROR(Range("attach.duration_ms", a.duration_ms(), 1, bounds::kMaxAttachDurationMs));
    if (a.duration_ms() > limits.max_attach_duration_ms) {
      return jobspec::LimitError("attach.duration_ms", a.duration_ms(),
                                 limits.max_attach_duration_ms, limits.limit_owner,
                                 "max_attach_duration_ms");
    }
  }
  if (a.has_iterations()) {
    RETURN_IF_ERROR(Range("attach.iterations", a.iterations(), 1, bounds::kMaxAttachIterations));
  }
  const v1::ProfilerOptions& p = a.profiler();
  const char* inapplicable = p.has_overhead_budget_pct() ? "overhead_budget_pct"
                             : !p.collector().empty()    ? "collector"
                             : p.has_probe_overhead()    ? "probe_overhead"
                                                         : nullptr;
  if (inapplicable != nullptr) {
    return Bad(absl::StrCat("attach.profiler.", inapplicable),
               "does not apply to attach: the traced process's own Kineto records, with no "
               "overhead probe or collector of ours");
  }
  if (p.activities_size() > bounds::kMaxActivities) {
    return Bad("attach.profiler.activities",
               absl::StrCat("at most ", bounds::kMaxActivities, " entries"));
  }
  for (const std::string& act : p.activities()) {
    if (act != "cpu" && act != "cuda") {
      return Bad("attach.profiler.activities", absl::StrCat("'", Excerpt(act), "' is not cpu or cuda"));
    }
  }
  return absl::OkStatus();
}

// Only a process's owner or an admin may attach (issue 37 §4). The attach runner traces the
// processes of the uid the daemon records at SubmitJob (Job.owner_uid), so the caller's uid is
// decided here: a Unix-socket peer's own under its own uid's name, or a token user's through the
// daemon's attach_unix_users (no entry: refused with that reason). A token naming another user
// on the socket is refused unless it maps to the peer's uid (the job would be that user's,
// tracing the peer's processes).
absl::StatusOr<Identity> AttachIdentity(const Identity& who, const DaemonConfig& config) {
  if (config.attach_dir.empty() && !config.attach_dynolog_compat) {
    return absl::FailedPreconditionError(
        "this daemon serves no attach endpoint (attach_dir is empty and attach_dynolog_compat "
        "off): set attach_dir in its config to attach to processes");
  }
  if (who.admin) return who;
  if (who.uid.has_value() && attach::IsUnixNameOf(who.user, *who.uid)) return who;
  absl::StatusOr<std::optional<uid_t>> mapped = MappedUnixUid(config.attach_unix_users, who.user);
  if (!mapped.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "token user ", Excerpt(who.user), " maps to a Unix user this host cannot use: ",
        mapped.status().message(), "; an admin fixes attach_unix_users (docs/deploy.md, \"Attach\")"));
  }
  if (!who.uid.has_value()) {
    if (!mapped->has_value()) {
      return absl::PermissionDeniedError(absl::StrCat(
          "token user ", Excerpt(who.user), " has no Unix user on this host (the daemon's "
          "attach_unix_users maps none for it): only a process's owner (or an admin) may attach "
          "to it; an admin adds '", Excerpt(who.user), "=<unix user>' to attach_unix_users, or "
          "run `libreyolo profile attach` over the daemon's Unix socket as the process's user"));
    }
    Identity out = who;
    out.uid = **mapped;
    return out;
  }
  if (mapped->has_value() && **mapped == *who.uid) return who;
  return absl::PermissionDeniedError(absl::StrCat(
      "you call as ", Excerpt(who.user), " (a token) from Unix uid ", *who.uid,
      ": attach as your own Unix user (unset LIBREYOLO_TOKEN / --token-file)"));
}

absl::Status ValidateSubmit(const v1::SubmitJobRequest& r, const DaemonConfig& config,
                            const Identity& who, std::string* device) {
  if (r.spec_case() == v1::SubmitJobRequest::SPEC_NOT_SET) {
    return Bad("spec", "set infer, run or attach");
  }
  RETURN_IF_ERROR(CheckLabels("labels", r.labels()));
  RETURN_IF_ERROR(Range("priority", r.priority(), -10, 10));
  RETURN_IF_ERROR(Range("max_wall_seconds", r.max_wall_seconds(), 0, kMaxJobSeconds));
  RETURN_IF_ERROR(MaxBytes("request_id", r.request_id(), kMaxRequestIdBytes));
  if (!IsPrintableUtf8(r.request_id())) {
    return Bad("request_id", "must be printable UTF-8 (no control characters)");
  }
  if (r.has_attach()) {
    RETURN_IF_ERROR(CheckAttachSpec(r.attach(), config.limits));
    RETURN_IF_ERROR(AttachIdentity(who, config).status());
    *device = kAttachLane;
    return absl::OkStatus();
  }
  const bool local_ok = MayNameLocalPaths(config, who);
  if (r.has_infer()) {
    RETURN_IF_ERROR(CheckModel(r.infer().model(), config, local_ok, device));
    return CheckInfer(r.infer(), config, local_ok, *device);
  }
  RETURN_IF_ERROR(CheckModel(r.run().model(), config, local_ok, device));
  // The ranks' slots say the device when the request does not (rpc.md, "Data-parallel jobs").
  const v1::DataParallelOptions& dp = r.run().data_parallel();
  if (r.run().model().device().empty() && !dp.devices().empty()) {
    if (auto d = NormaliseDevice(dp.devices(0)); d.ok()) *device = *d;
  }
  return CheckRun(r.run(), config, local_ok, *device);
}

absl::Status ValidateRequest(const v1::WatchJobRequest& r) {
  RETURN_IF_ERROR(ValidateJobId("job_id", r.job_id()));
  if (r.from_sequence() < 0) return Bad("from_sequence", "must be >= 0");
  return absl::OkStatus();
}

absl::Status ValidateRequest(const v1::GetJobRequest& r) {
  return ValidateJobId("job_id", r.job_id());
}

absl::Status ValidateRequest(const v1::CancelJobRequest& r) {
  return ValidateJobId("job_id", r.job_id());
}

absl::Status ValidateRequest(const v1::DeleteJobRequest& r) {
  return ValidateJobId("job_id", r.job_id());
}

absl::Status ValidateRequest(const v1::ListJobsRequest& r) {
  if (r.states_size() > kMaxStates) {
    return Bad("states", absl::StrCat("at most ", kMaxStates, " entries"));
  }
  for (const int state : r.states()) {
    if (!v1::JobState_IsValid(state)) return Bad("states", absl::StrCat(state, " is not a JobState"));
  }
  RETURN_IF_ERROR(MaxBytes("owner", r.owner(), kMaxTextBytes));
  RETURN_IF_ERROR(CheckLabels("labels", r.labels()));
  if (r.page_size() < 0) return Bad("page_size", "must be >= 0");
  return MaxBytes("page_token", r.page_token(), kMaxShortStringBytes);
}

absl::Status ValidateRequest(const v1::ReadArtifactRequest& r) {
  RETURN_IF_ERROR(ValidateJobId("job_id", r.job_id()));
  return MaxBytes("name", r.name(), kMaxNameBytes);
}

absl::Status ValidateRequest(const v1::SummaryRequest& r) {
  return CheckProfileRef("profile", r.profile());
}

absl::Status ValidateRequest(const v1::GetRequest& r) {
  RETURN_IF_ERROR(CheckProfileRef("profile", r.profile()));
  return MaxBytes("field", r.field(), kMaxTextBytes);
}

absl::Status ValidateRequest(const v1::PhasesRequest& r) {
  return CheckProfileRef("profile", r.profile());
}

absl::Status ValidateRequest(const v1::KernelsRequest& r) {
  RETURN_IF_ERROR(CheckProfileRef("profile", r.profile()));
  RETURN_IF_ERROR(CheckTop(r.has_top(), r.top()));
  RETURN_IF_ERROR(MaxBytes("category", r.category(), kMaxShortStringBytes));
  RETURN_IF_ERROR(MaxBytes("grep", r.grep(), kMaxTextBytes));
  RETURN_IF_ERROR(MaxBytes("sort", r.sort(), kMaxShortStringBytes));
  return MaxBytes("phase", r.phase(), kMaxShortStringBytes);
}

absl::Status ValidateRequest(const v1::OpsRequest& r) {
  RETURN_IF_ERROR(CheckProfileRef("profile", r.profile()));
  RETURN_IF_ERROR(CheckTop(r.has_top(), r.top()));
  RETURN_IF_ERROR(MaxBytes("phase", r.phase(), kMaxShortStringBytes));
  return MaxBytes("sort", r.sort(), kMaxShortStringBytes);
}

absl::Status ValidateRequest(const v1::CompareRequest& r) {
  RETURN_IF_ERROR(CheckProfileRef("before", r.before()));
  return CheckProfileRef("after", r.after());
}

absl::Status ValidateRequest(const v1::WhatIfRequest& r) {
  RETURN_IF_ERROR(CheckProfileRef("profile", r.profile()));
  RETURN_IF_ERROR(MaxBytes("remove_category", r.remove_category(), kMaxShortStringBytes));
  if (r.change_case() != v1::WhatIfRequest::kRemoveLaunches) return absl::OkStatus();
  return CheckRemoveLaunches(r.remove_launches());
}

absl::Status ValidateRequest(const v1::ModulesRequest& r) {
  RETURN_IF_ERROR(CheckProfileRef("profile", r.profile()));
  if (r.has_depth()) {
    RETURN_IF_ERROR(CheckModuleDepth(r.depth()));
  }
  RETURN_IF_ERROR(MaxBytes("sort", r.sort(), kMaxShortStringBytes));
  return MaxBytes("format", r.format(), kMaxShortStringBytes);
}

absl::Status ValidateRequest(const v1::LatencyRequest& r) {
  RETURN_IF_ERROR(CheckProfileRef("profile", r.profile()));
  if (r.has_buckets()) {
    RETURN_IF_ERROR(CheckLatencyBuckets(r.buckets()));
  }
  if (!r.has_slowest()) return absl::OkStatus();
  return CheckLatencySlowest(r.slowest());
}

absl::Status ValidateRequest(const v1::ReadRequest& r) {
  switch (r.reader_case()) {
    case v1::ReadRequest::kSummary:
      return ValidateRequest(r.summary());
    case v1::ReadRequest::kGet:
      return ValidateRequest(r.get());
    case v1::ReadRequest::kPhases:
      return ValidateRequest(r.phases());
    case v1::ReadRequest::kKernels:
      return ValidateRequest(r.kernels());
    case v1::ReadRequest::kOps:
      return ValidateRequest(r.ops());
    case v1::ReadRequest::kModules:
      return ValidateRequest(r.modules());
    case v1::ReadRequest::kCompare:
      return ValidateRequest(r.compare());
    case v1::ReadRequest::kWhatIf:
      return ValidateRequest(r.what_if());
    case v1::ReadRequest::kLatency:
      return ValidateRequest(r.latency());
    case v1::ReadRequest::READER_NOT_SET:
      break;
  }
  return absl::InvalidArgumentError(readerspec::ReaderNotSetMessage());
}

absl::Status CheckInputsExist(const v1::SubmitJobRequest& r, const DaemonConfig& config) {
  if (r.has_attach()) return absl::OkStatus();  // no model, images or dataset: running processes
  namespace fs = std::filesystem;
  std::error_code ec;
  // Where a name is looked for, and the same with the name as an error may echo it (Excerpt:
  // the daemon's directory whole, so that the path redactor still recognises it).
  auto in_dir = [](const std::string& dir, const std::string& name, bool shown) {
    const std::string n = shown ? Excerpt(name) : name;
    return IsPlainName(name) ? (fs::path(dir) / n).string() : n;
  };
  const v1::ModelOptions& m = r.has_infer() ? r.infer().model() : r.run().model();
  if (!m.weights().empty() && m.weights() != jobspec::defaults::kWeights &&
      !fs::is_regular_file(in_dir(config.models_dir, m.weights(), false), ec)) {
    std::vector<std::string> places;
    for (const std::string& p : m.weights_searched()) places.push_back(Excerpt(p));
    places.push_back(in_dir(config.models_dir, m.weights(), true));
    return absl::NotFoundError(absl::StrCat("model.weights: ", Excerpt(m.weights()),
                                            " not found (looked at ", absl::StrJoin(places, ", "),
                                            "; GetDaemonInfo lists the models)"));
  }
  const std::string& source = r.infer().source();
  if (r.has_infer() && !source.empty() &&
      !fs::exists(in_dir(config.images_dir, source, false), ec)) {
    return absl::NotFoundError(absl::StrCat("infer.source: ", Excerpt(source),
                                            " not found (looked at ",
                                            in_dir(config.images_dir, source, true), ")"));
  }
  if (!r.has_run() || IsSyntheticData(r.run().data())) return absl::OkStatus();
  const std::string& data = r.run().data();
  auto candidates = [&](const std::string& name) -> std::vector<std::string> {
    if (!IsPlainName(data)) return {name};
    const fs::path dir(config.datasets_dir);
    return {(dir / (name + ".yaml")).string(), (dir / name / (name + ".yaml")).string(),
            (dir / name / "data.yaml").string(), (dir / name).string()};
  };
  for (const std::string& c : candidates(data)) {
    if (fs::exists(c, ec)) return absl::OkStatus();
  }
  return absl::NotFoundError(absl::StrCat("run.data: dataset '", Excerpt(data),
                                          "' not found (looked at ",
                                          absl::StrJoin(candidates(Excerpt(data)), ", "), ")"));
}

}  // namespace libreyolo::daemon
