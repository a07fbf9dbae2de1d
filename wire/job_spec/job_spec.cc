#include "wire/job_spec/job_spec.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/render/terminal_text.h"
#include "common/status/status_macros.h"

namespace libreyolo::jobspec {
namespace {

// The CLI flag a request field comes from ("infer.half" -> "--half"); "" for fields with no
// flag. The positionals are named by their argument.
std::string FlagOf(const std::string& field) {
  static const std::vector<std::pair<std::string, std::string>> kPositional = {
      {"run.data", "DATA (the dataset argument)"}, {"infer.source", "SOURCE (the image argument)"}};
  for (const auto& [f, name] : kPositional) {
    if (field == f) return name;
  }
  // Fields whose flag is not their name.
  static const std::vector<std::pair<std::string, std::string>> kRenamed = {
      {"run.data_parallel.backend", "--dist-backend"},
      {"run.data_parallel.timeout_s", "--dist-timeout"},
      {"attach.pids", "--pid"},
      {"attach.slurm_job_id", "--slurm-job"}};
  // The rendezvous's fields are torchrun's flags: --nnodes, --node-rank, --master-addr, ...
  for (const auto& [f, flag] : kRenamed) {
    if (field == f) return flag;
  }
  std::string rest = field;
  for (const char* prefix : {"infer.profiler.", "run.profiler.", "attach.profiler.",
                             "run.data_parallel.rendezvous.", "run.data_parallel.", "infer.",
                             "run.", "attach.", "model."}) {
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

// A count with a fixed range in the contract: INVALID_ARGUMENT naming the range.
absl::Status Range(const std::string& field, int64_t v, int64_t lo, int64_t hi) {
  if (v >= lo && v <= hi) return absl::OkStatus();
  return FieldError(field, absl::StrCat(v, " is outside ", lo, "..", hi));
}

// A count whose upper bound is a limit: below `lo` is INVALID_ARGUMENT, above the limit
// RESOURCE_EXHAUSTED naming it.
absl::Status Count(const std::string& field, int64_t v, int64_t lo, int64_t limit,
                   const JobLimits& l, const char* key) {
  if (v < lo) return FieldError(field, absl::StrCat(v, " is below ", lo));
  if (v > limit) return LimitError(field, v, limit, l.limit_owner, key);
  return absl::OkStatus();
}

// Saturating arithmetic for sums and products of counts: a result past int64 is nullopt.
std::optional<int64_t> Add(std::optional<int64_t> a, std::optional<int64_t> b) {
  int64_t r = 0;
  if (!a || !b || __builtin_add_overflow(*a, *b, &r)) return std::nullopt;
  return r;
}
std::optional<int64_t> Mul(std::optional<int64_t> a, std::optional<int64_t> b) {
  int64_t r = 0;
  if (!a || !b || __builtin_mul_overflow(*a, *b, &r)) return std::nullopt;
  return r;
}

// A sum or product of counts against a limit; one past int64 is over any limit.
absl::Status Total(const std::string& what, std::optional<int64_t> total, int64_t limit,
                   const JobLimits& l, const char* key) {
  if (!total) {
    return absl::ResourceExhaustedError(absl::StrCat(what, ": more than 2^63 exceeds ",
                                                     l.limit_owner, " ", key, " (", limit, ")"));
  }
  if (*total > limit) return LimitError(what, *total, limit, l.limit_owner, key);
  return absl::OkStatus();
}

absl::Status Finite(const std::string& field, double v, double lo, double hi) {
  if (std::isfinite(v) && v >= lo && v <= hi) return absl::OkStatus();
  return FieldError(field, absl::StrCat(v, " is not a number in [", lo, ", ", hi, "]"));
}

// Off the grid 32, 64, ..., 4096 (the engine's bound, whatever a daemon's limit says):
// INVALID_ARGUMENT, checked first so that 8192 is refused as out of bound on every daemon
// (rpc.md, "Limits"); on the grid but over a limit set below 4096: RESOURCE_EXHAUSTED naming it.
absl::Status Imgsz(const std::string& field, int64_t v, const JobLimits& l) {
  if (v < bounds::kImgszMin || v > bounds::kImgszMax) {
    return FieldError(field, absl::StrCat(v, " is outside ", bounds::kImgszMin, "..",
                                          bounds::kImgszMax, " (a multiple of ",
                                          bounds::kImgszStep, " in that range, e.g. 640)"));
  }
  if (v % bounds::kImgszStep != 0) {
    const int64_t below = v - v % bounds::kImgszStep;
    const int64_t above = below + bounds::kImgszStep;
    return FieldError(
        field, absl::StrCat(v, " is not a multiple of ", bounds::kImgszStep, " (in ",
                            bounds::kImgszMin, "..", bounds::kImgszMax, "): ",
                            below >= bounds::kImgszMin ? absl::StrCat(below, " or ") : "",
                            above <= bounds::kImgszMax ? absl::StrCat(above) : ""));
  }
  if (v > l.max_imgsz) return LimitError(field, v, l.max_imgsz, l.limit_owner, "max_imgsz");
  return absl::OkStatus();
}

absl::Status Model(const v1::ModelOptions& m) {
  if (m.size() != "t" && m.size() != "s" && m.size() != "m" && m.size() != "c") {
    return FieldError("model.size", absl::StrCat("'", Excerpt(m.size()), "' is not t, s, m or c"));
  }
  return Range("model.threads", m.threads(), 0, bounds::kMaxThreads);
}

absl::Status Profiler(const std::string& field, const v1::ProfilerOptions& p, bool cpu) {
  RETURN_IF_ERROR(Finite(field + ".overhead_budget_pct", p.overhead_budget_pct(), 0,
                         bounds::kMaxOverheadBudgetPct));
  if (p.collector() != "native" && p.collector() != "libtorch") {
    return FieldError(field + ".collector",
                      absl::StrCat("'", Excerpt(p.collector()), "' is not native or libtorch"));
  }
  if (p.activities_size() > bounds::kMaxActivities) {
    return FieldError(field + ".activities",
                      absl::StrCat("at most ", bounds::kMaxActivities, " entries"));
  }
  for (const std::string& a : p.activities()) {
    if (a != "cpu" && a != "cuda") {
      return FieldError(field + ".activities",
                        absl::StrCat("'", Excerpt(a), "' is not cpu or cuda"));
    }
    // A CPU job has no CUDA activity to record: say so instead of quietly recording cpu only.
    if (a == "cuda" && cpu) {
      return FieldError(field + ".activities",
                        "cuda needs a CUDA device and this job runs on cpu; use --activities "
                        "cpu, or --device 0 for a GPU");
    }
  }
  return absl::OkStatus();
}

bool AllOf(const std::string& s, absl::string_view extra) {
  return std::all_of(s.begin(), s.end(), [&](char c) {
    return absl::ascii_isalnum(static_cast<unsigned char>(c)) || extra.find(c) != extra.npos;
  });
}

// Across hosts (Rendezvous): the scheduler's values, checked before any rank starts.
absl::Status CheckRendezvous(const v1::DataParallelOptions& d) {
  const v1::Rendezvous& r = d.rendezvous();
  const std::string f = "run.data_parallel.rendezvous.";
  RETURN_IF_ERROR(Range(f + "nnodes", r.nnodes(), 0, bounds::kMaxWorldSize));
  if (r.nnodes() <= 1) {
    if (r.node_rank() != 0 || !r.master_addr().empty() || r.master_port() != 0 ||
        !r.group_id().empty()) {
      return FieldError(f + "nnodes", absl::StrCat(r.nnodes(),
                                                   " hosts, but a rendezvous across hosts was "
                                                   "given; give the run's host count (2 or "
                                                   "more), or leave the rendezvous out"));
    }
    return absl::OkStatus();
  }
  RETURN_IF_ERROR(Range(f + "node_rank", r.node_rank(), 0, r.nnodes() - 1));
  if (r.master_addr().empty()) {
    return FieldError(f + "master_addr",
                      "required across hosts: node 0's host name or address (MASTER_ADDR)");
  }
  if (!IsHostOrAddress(r.master_addr())) {
    return FieldError(f + "master_addr", absl::StrCat("'", Excerpt(r.master_addr()),
                                                      "' is not a host name or address"));
  }
  if (r.master_port() == 0) {
    return FieldError(f + "master_port",
                      "required across hosts: the port node 0 serves the rendezvous on "
                      "(MASTER_PORT)");
  }
  RETURN_IF_ERROR(Range(f + "master_port", r.master_port(), 1, 65535));
  if (r.group_id().size() > 128 || !AllOf(r.group_id(), "_.:@-")) {
    return FieldError(f + "group_id",
                      absl::StrCat("'", Excerpt(r.group_id()), "' is not [A-Za-z0-9_.:@-]{1,128}"));
  }
  const int64_t world = WorldSize(d);
  if (world > bounds::kMaxWorldSize) {
    return FieldError(f + "nnodes", absl::StrCat(r.nnodes(), " hosts of ", Ranks(d), " ranks are ",
                                                 world, " ranks; at most ", bounds::kMaxWorldSize));
  }
  return absl::OkStatus();
}

absl::Status DataParallel(const v1::DataParallelOptions& d, bool cpu) {
  RETURN_IF_ERROR(Range("run.data_parallel.nproc", d.nproc(), 0, bounds::kMaxRanks));
  if (d.devices_size() > bounds::kMaxRanks) {
    return FieldError("run.data_parallel.devices",
                      absl::StrCat(d.devices_size(), " slots; at most ", bounds::kMaxRanks));
  }
  if (d.nproc() > 0 && d.devices_size() > 0 && d.nproc() != d.devices_size()) {
    return FieldError("run.data_parallel.nproc",
                      absl::StrCat(d.nproc(), " ranks but --devices names ", d.devices_size(),
                                   " slots; give one of the two"));
  }
  for (const std::string& device : d.devices()) {
    if (device.empty() || device.size() > 64) {
      return FieldError("run.data_parallel.devices",
                        absl::StrCat("'", Excerpt(device), "' is not a device slot"));
    }
  }
  if (d.backend() != "" && d.backend() != "gloo" && d.backend() != "nccl") {
    return FieldError("run.data_parallel.backend",
                      absl::StrCat("'", Excerpt(d.backend()), "' is not gloo or nccl"));
  }
  if (d.backend() == "nccl" && cpu) {
    return FieldError("run.data_parallel.backend",
                      "nccl needs CUDA devices and this job runs on the CPU; use gloo (the "
                      "default there)");
  }
  if (!(d.bucket_cap_mb() > 0)) {
    return FieldError("run.data_parallel.bucket_cap_mb",
                      absl::StrCat(d.bucket_cap_mb(), " is not above 0"));
  }
  RETURN_IF_ERROR(
      Finite("run.data_parallel.bucket_cap_mb", d.bucket_cap_mb(), 0, bounds::kMaxBucketCapMb));
  RETURN_IF_ERROR(CheckRendezvous(d));
  return Range("run.data_parallel.timeout_s", d.timeout_s(), 1, bounds::kMaxDistTimeoutS);
}

}  // namespace

int64_t Ranks(const v1::DataParallelOptions& d) {
  return std::max<int64_t>({1, d.nproc(), d.devices_size()});
}

bool AcrossHosts(const v1::DataParallelOptions& d) { return d.rendezvous().nnodes() > 1; }

int64_t WorldSize(const v1::DataParallelOptions& d) {
  return Ranks(d) * std::max<int64_t>(1, d.rendezvous().nnodes());
}

bool IsHostOrAddress(const std::string& addr) {
  return !addr.empty() && addr.size() <= 253 && AllOf(addr, ".-:_");
}

std::string GroupId(const v1::Rendezvous& r) {
  if (!r.group_id().empty()) return r.group_id();
  return absl::StrCat(r.master_addr(), ":", r.master_port());
}

bool DataParallelJob(const v1::Job& job) {
  // A gang (its slots placed: --nproc N > 1 or an explicit --devices list, even of one slot)
  // or a part of a run across hosts. `--devices 0` alone is a world of one that still runs
  // c10d (NCCL on CUDA), as torchrun --nproc-per-node 1 does.
  return job.devices_size() > 0 || job.world().world_size() > 1;
}

int64_t JobWorldSize(const v1::Job& job) {
  return job.world().world_size() > 0 ? job.world().world_size() : job.devices_size();
}

int64_t JobTrials(const v1::Job& job) {
  if (DataParallelJob(job)) return 1;
  int64_t n = 1;
  if (job.kind() == v1::JOB_KIND_RUN) n = job.request().run().repeat();
  if (job.kind() == v1::JOB_KIND_INFER) n = job.request().infer().repeat();
  return std::max<int64_t>(1, n);
}

std::string NamedField(const std::string& field) {
  const std::string flag = FlagOf(field);
  return flag.empty() ? field : absl::StrCat(flag, " (", field, ")");
}

absl::Status FieldError(const std::string& field, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(NamedField(field), ": ", what));
}

absl::Status LimitError(const std::string& field, int64_t value, int64_t limit,
                        const std::string& limit_owner, const char* key) {
  return absl::ResourceExhaustedError(absl::StrCat(NamedField(field), ": ", value, " exceeds ",
                                                   limit_owner, " ", key, " (", limit, ")"));
}

void ApplyDefaults(v1::ModelOptions* m) {
  if (m->weights().empty()) m->set_weights(defaults::kWeights);
  if (m->size().empty()) m->set_size(defaults::kSize);
}

void ApplyDefaults(v1::ProfilerOptions* p) {
  if (!p->has_overhead_budget_pct()) p->set_overhead_budget_pct(defaults::kOverheadBudgetPct);
  if (p->collector().empty()) p->set_collector(defaults::kCollector);
  // with_stack is the deprecated alias of with_modules = true, read only when it is unset.
  if (!p->has_with_modules()) p->set_with_modules(p->with_stack() || defaults::kWithModules);
  if (!p->has_probe_overhead()) p->set_probe_overhead(defaults::kProbeOverhead);
}

void ApplyDefaults(v1::InferSpec* s) {
  ApplyDefaults(s->mutable_model());
  if (!s->has_batch()) s->set_batch(defaults::kInferBatch);
  if (!s->has_imgsz()) s->set_imgsz(defaults::kImgsz);
  if (s->amp_dtype().empty()) s->set_amp_dtype(defaults::kAmpDtype);
  if (!s->has_warmup()) s->set_warmup(defaults::kInferWarmup);
  if (!s->has_runs()) s->set_runs(defaults::kRuns);
  if (!s->has_repeat()) s->set_repeat(defaults::kRepeat);
  if (!s->has_conf()) s->set_conf(defaults::kConf);
  if (!s->has_iou()) s->set_iou(defaults::kIou);
  if (!s->has_max_det()) s->set_max_det(defaults::kMaxDet);
  if (s->postprocess().empty()) s->set_postprocess(defaults::kPostprocess);
  if (!s->has_trace()) s->set_trace(defaults::kTrace);
  ApplyDefaults(s->mutable_profiler());
}

void ApplyDefaults(v1::RunSpec* s) {
  ApplyDefaults(s->mutable_model());
  if (!s->has_batch()) s->set_batch(defaults::kRunBatch);
  if (!s->has_imgsz()) s->set_imgsz(defaults::kImgsz);
  if (!s->has_workers()) s->set_workers(defaults::kWorkers);
  if (!s->has_amp()) s->set_amp(defaults::kAmp);
  if (!s->has_steps()) s->set_steps(defaults::kSteps);
  if (!s->has_warmup()) s->set_warmup(defaults::kRunWarmup);
  if (!s->has_repeat()) s->set_repeat(defaults::kRepeat);
  if (!s->has_cycles()) s->set_cycles(defaults::kCycles);
  if (!s->has_aux_weight()) s->set_aux_weight(defaults::kAuxWeight);
  ApplyDefaults(s->mutable_profiler());
  ApplyDefaults(s->mutable_data_parallel());
}

void ApplyDefaults(v1::DataParallelOptions* d) {
  if (!d->has_bucket_cap_mb()) d->set_bucket_cap_mb(defaults::kBucketCapMb);
  if (!d->has_broadcast_buffers()) d->set_broadcast_buffers(defaults::kBroadcastBuffers);
  if (!d->has_timeout_s()) d->set_timeout_s(defaults::kDistTimeoutS);
  if (AcrossHosts(*d) && d->rendezvous().group_id().empty()) {
    d->mutable_rendezvous()->set_group_id(GroupId(d->rendezvous()));
  }
}

absl::Status ValidateInferSpec(const v1::InferSpec& spec, const JobLimits& l, bool cpu) {
  v1::InferSpec s = spec;
  s.clear_images();  // not needed here, and possibly megabytes
  ApplyDefaults(&s);
  RETURN_IF_ERROR(Model(s.model()));
  RETURN_IF_ERROR(Count("infer.batch", s.batch(), 1, l.max_batch, l, "max_batch"));
  RETURN_IF_ERROR(Imgsz("infer.imgsz", s.imgsz(), l));
  RETURN_IF_ERROR(Count("infer.warmup", s.warmup(), 0, l.max_runs, l, "max_runs"));
  RETURN_IF_ERROR(Count("infer.runs", s.runs(), 1, l.max_runs, l, "max_runs"));
  RETURN_IF_ERROR(
      Total("infer.warmup + infer.runs", Add(s.warmup(), s.runs()), l.max_runs, l, "max_runs"));
  RETURN_IF_ERROR(Count("infer.repeat", s.repeat(), 1, l.max_repeat, l, "max_repeat"));
  RETURN_IF_ERROR(Finite("infer.conf", s.conf(), 0, 1));
  RETURN_IF_ERROR(Finite("infer.iou", s.iou(), 0, 1));
  RETURN_IF_ERROR(Range("infer.max_det", s.max_det(), 1, bounds::kMaxDet));
  if (s.postprocess() != "auto" && s.postprocess() != "none") {
    return FieldError("infer.postprocess",
                      absl::StrCat("'", Excerpt(s.postprocess()),
                                   "' is not auto (the model's decode) or none (the forward only)"));
  }
  if (s.amp_dtype() != "float16" && s.amp_dtype() != "bfloat16") {
    return FieldError("infer.amp_dtype", absl::StrCat("'", Excerpt(s.amp_dtype()),
                                                      "' is not float16 or bfloat16"));
  }
  if (s.half() && cpu) {
    return FieldError("infer.half", "autocast runs on CUDA only; drop --half for a cpu job");
  }
  return Profiler("infer.profiler", s.profiler(), cpu);
}

absl::Status ValidateRunSpec(const v1::RunSpec& spec, const JobLimits& l, bool cpu) {
  v1::RunSpec s = spec;
  ApplyDefaults(&s);
  RETURN_IF_ERROR(Model(s.model()));
  if (s.batch() < -1 || s.batch() == 0) {
    return FieldError("run.batch", absl::StrCat(s.batch(), " is below 1; -1 is auto"));
  }
  if (s.batch() > l.max_batch) {
    return LimitError("run.batch", s.batch(), l.max_batch, l.limit_owner, "max_batch");
  }
  RETURN_IF_ERROR(Imgsz("run.imgsz", s.imgsz(), l));
  RETURN_IF_ERROR(Range("run.workers", s.workers(), 0, bounds::kMaxWorkers));
  RETURN_IF_ERROR(Count("run.steps", s.steps(), 1, l.max_steps, l, "max_steps"));
  for (const auto& [field, v] : {std::pair<const char*, int64_t>{"run.warmup", s.warmup()},
                                 {"run.skip_first", s.skip_first()},
                                 {"run.wait", s.wait()}}) {
    RETURN_IF_ERROR(Count(field, v, 0, l.max_steps, l, "max_steps"));
  }
  RETURN_IF_ERROR(Count("run.repeat", s.repeat(), 1, l.max_repeat, l, "max_repeat"));
  RETURN_IF_ERROR(Range("run.cycles", s.cycles(), 1, bounds::kMaxCycles));
  RETURN_IF_ERROR(Finite("run.aux_weight", s.aux_weight(), 0, bounds::kMaxAuxWeight));
  // repeat x (warmup + steps) + skip_first + cycles x (wait + warmup + steps), without wrapping.
  const std::optional<int64_t> total =
      Add(Add(Mul(s.repeat(), Add(s.warmup(), s.steps())), s.skip_first()),
          Mul(s.cycles(), Add(Add(s.wait(), s.warmup()), s.steps())));
  RETURN_IF_ERROR(
      Total("run (total steps: repeat x (warmup + steps) + skip_first + cycles x "
            "(wait + warmup + steps))",
            total, l.max_steps, l, "max_steps"));
  RETURN_IF_ERROR(DataParallel(s.data_parallel(), cpu));
  return Profiler("run.profiler", s.profiler(), cpu);
}

}  // namespace libreyolo::jobspec
