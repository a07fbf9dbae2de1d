#include "client/cli/job_flags.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "common/render/terminal_text.h"
#include "common/status/status_macros.h"
#include "wire/job_spec/job_defaults.h"

namespace libreyolo::cli {
namespace {

namespace v1 = ::libreyolo::profiler::v1;
namespace def = ::libreyolo::jobspec::defaults;

std::string Num(int64_t v) { return absl::StrCat(v); }
std::string Num(double v) { return absl::StrFormat("%g", v); }
std::string OnOff(bool v) { return v ? "on" : "off"; }

std::vector<FlagSpec> ModelFlags() {
  return {
      {"weights", "FILE", def::kWeights,
       "weights file or name (the default name, when absent: seeded random init)"},
      {"size", "S", def::kSize, "model size: t, s, m, c"},
      {"device", "D", def::kDevice, "device: 0, 1, ... or cpu"},
      {"threads", "N", Num(int64_t{def::kThreads}), "CPU threads (0 = all cores)"},
  };
}

std::vector<FlagSpec> ProfilerFlags() {
  return {
      {"activities", "LIST", "cpu,<device>", "what to record: cpu, cuda (comma-separated)"},
      {"record-shapes", "", OnOff(def::kRecordShapes),
       "record operator input shapes (a fixed default; its measured cost is in the profile)",
       true},
      {"profile-memory", "", OnOff(def::kProfileMemory),
       "record allocations (a fixed default; its measured cost is in the profile)", true},
      {"with-flops", "", OnOff(def::kWithFlops),
       "estimate FLOPs of convolutions and matmuls (needs the shapes; off by default: it costs "
       "more than the default budget)",
       true},
      {"with-modules", "", OnOff(def::kWithModules),
       "name every LibreYOLO9 module's range in the trace (profile modules reads them)", true},
      {"with-stack", "", "", "alias of --with-modules (C++ records no Python stacks)"},
      {"collector", "C", def::kCollector,
       "who records the CPU side: native (our RecordFunction collector) or libtorch "
       "(LibTorch's profiler, the cross-check)"},
      {"overhead-budget", "PCT", Num(def::kOverheadBudgetPct),
       "the summary names a switch whose measured cost (its 95 % interval) lies wholly above "
       "PCT % of a step, with the flag that turns it off; nothing is turned off by itself"},
      {"probe-overhead", "", OnOff(def::kProbeOverhead),
       "probe the profiler's overhead and each switch's cost before the profiled window (off: "
       "the same switches, overhead_pct null)",
       true},
  };
}

// A data-parallel run (DataParallelOptions): the ranks and DistributedDataParallel's knobs.
std::vector<FlagSpec> DataParallelFlags() {
  return {
      {"nproc", "N", "1",
       "data-parallel ranks, one per device slot: the first N slots of --device's kind "
       "(cuda:0..N-1, or cpu, cpu:1, ...)"},
      {"devices", "LIST", "",
       "the ranks' device slots instead, in rank order: 0,1,2,3 or cpu,cpu:1"},
      {"dist-backend", "gloo|nccl", "nccl on CUDA, gloo on the CPU", "c10d backend"},
      {"bucket-cap-mb", "MB", Num(def::kBucketCapMb), "DDP's gradient bucket size"},
      {"gradient-as-bucket-view", "", OnOff(def::kGradientAsBucketView),
       "gradients as views into the all-reduce buckets (DDP's option)", true},
      {"broadcast-buffers", "", OnOff(def::kBroadcastBuffers),
       "broadcast rank 0's buffers before every forward (DDP's default)", true},
      {"dist-timeout", "S", Num(def::kDistTimeoutS),
       "seconds the rendezvous and each collective may take"},
      {"nnodes", "N", "1",
       "hosts in the run, one daemon each running --nproc ranks (torchrun's --nnodes); the "
       "rest of the rendezvous comes from the flags below or the scheduler's environment"},
      {"node-rank", "K", "$NODE_RANK, $SLURM_NODEID or $JOB_COMPLETION_INDEX",
       "this host's index 0..N-1 (its ranks are K*nproc ..)"},
      {"master-addr", "HOST", "$MASTER_ADDR", "node 0's host; its rank 0 serves the rendezvous"},
      {"master-port", "PORT", "$MASTER_PORT", "the rendezvous port on --master-addr"},
      {"group-id", "ID", "slurm-$SLURM_JOB_ID, else HOST:PORT",
       "ties the hosts' jobs together (jobs show names it)"},
  };
}

absl::Status ReadDataParallel(const ParsedArgs& a, v1::DataParallelOptions* d,
                              v1::ModelOptions* m);

std::vector<FlagSpec> Concat(std::vector<std::vector<FlagSpec>> parts) {
  std::vector<FlagSpec> out;
  for (auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

absl::Status ReadInt(const ParsedArgs& a, const std::string& name, int64_t* into, bool* given) {
  auto v = a.Value(name);
  if (given != nullptr) *given = v.has_value();
  if (!v) return absl::OkStatus();
  ASSIGN_OR_RETURN(*into, ParseIntFlag(name, *v));
  return absl::OkStatus();
}

// Calls `set` with the flag's integer value when the flag was given.
template <typename Set>
absl::Status MaybeInt(const ParsedArgs& a, const std::string& name, Set set) {
  int64_t v = 0;
  bool given = false;
  RETURN_IF_ERROR(ReadInt(a, name, &v, &given));
  if (given) set(v);
  return absl::OkStatus();
}

template <typename Set>
absl::Status MaybeDouble(const ParsedArgs& a, const std::string& name, Set set) {
  auto v = a.Value(name);
  if (!v) return absl::OkStatus();
  ASSIGN_OR_RETURN(auto d, ParseDoubleFlag(name, *v));
  set(d);
  return absl::OkStatus();
}

absl::Status ReadModel(const ParsedArgs& a, v1::ModelOptions* m) {
  if (auto w = a.Value("weights")) m->set_weights(*w);
  if (auto s = a.Value("size")) m->set_size(*s);
  m->set_device(a.ValueOr("device", def::kDevice));
  return MaybeInt(a, "threads", [&](int64_t v) {
    // Out of int32 range: a value the validator refuses (0..1024), not a wrapped one.
    m->set_threads(static_cast<int32_t>(std::clamp<int64_t>(v, INT32_MIN, INT32_MAX)));
  });
}

absl::Status ReadProfiler(const ParsedArgs& a, v1::ProfilerOptions* p) {
  if (auto act = a.Value("activities")) {
    for (auto part : absl::StrSplit(*act, ',', absl::SkipEmpty())) {
      const std::string s = absl::AsciiStrToLower(absl::StripAsciiWhitespace(part));
      if (s != "cpu" && s != "cuda") {
        return absl::InvalidArgumentError(
            absl::StrCat("--activities: '", Excerpt(s), "' is not cpu or cuda"));
      }
      p->add_activities(s);
    }
  }
  if (a.switches.count("record-shapes")) p->set_record_shapes(a.Switch("record-shapes"));
  if (a.switches.count("profile-memory")) p->set_profile_memory(a.Switch("profile-memory"));
  if (a.switches.count("with-flops")) p->set_with_flops(a.Switch("with-flops"));
  if (a.switches.count("with-modules")) p->set_with_modules(a.Switch("with-modules"));
  if (a.switches.count("probe-overhead")) p->set_probe_overhead(a.Switch("probe-overhead"));
  if (a.Switch("with-stack")) p->set_with_stack(true);  // the alias, read when unset above
  if (auto c = a.Value("collector")) p->set_collector(absl::AsciiStrToLower(*c));
  return MaybeDouble(a, "overhead-budget", [&](double v) { p->set_overhead_budget_pct(v); });
}

// The first error of several reads.
class FirstError {
 public:
  void operator()(absl::Status s) {
    if (status_.ok()) status_ = std::move(s);
  }
  const absl::Status& status() const { return status_; }

 private:
  absl::Status status_;
};

}  // namespace

std::vector<FlagSpec> InferSpecFlags() {
  return Concat({ModelFlags(),
                 {{"batch", "N", Num(def::kInferBatch), "images per forward"},
                  {"imgsz", "N", Num(def::kImgsz), "input size (a multiple of 32)"},
                  {"half", "", "off", "autocast the forward (CUDA only)", true},
                  {"amp-dtype", "T", def::kAmpDtype, "float16 or bfloat16"},
                  {"warmup", "N", Num(def::kInferWarmup), "iterations before measuring"},
                  {"runs", "N", Num(def::kRuns), "measured iterations"},
                  {"repeat", "N", Num(def::kRepeat), "trials for mean and standard deviation"},
                  {"conf", "X", Num(def::kConf), "confidence threshold (changes NMS work)"},
                  {"iou", "X", Num(def::kIou), "NMS IoU threshold"},
                  {"max-det", "N", Num(def::kMaxDet), "max detections per image"},
                  {"postprocess", "MODE", def::kPostprocess,
                   "auto: the model's decode (and NMS); none: the forward only, no decode (an "
                   "export whose outputs no decoder knows)"},
                  {"trace", "", OnOff(def::kTrace), "export the Chrome trace", true}},
                 ProfilerFlags()});
}

std::vector<FlagSpec> RunSpecFlags() {
  return Concat(
      {ModelFlags(),
       {{"batch", "N", Num(def::kRunBatch), "micro-batch; -1 picks the largest under ~70% of VRAM"},
        {"imgsz", "N", Num(def::kImgsz), "training image size (a multiple of 32)"},
        {"workers", "N", Num(def::kWorkers), "data-loader workers"},
        {"amp", "", OnOff(def::kAmp), "AMP (float16 autocast + loss scaling on CUDA)", true},
        {"steps", "N", Num(def::kSteps), "measured (profiled) steps"},
        {"active", "N", Num(def::kSteps), "alias of --steps (torch.profiler.schedule)"},
        {"warmup", "N", Num(def::kRunWarmup), "steps before measuring"},
        {"skip-first", "N", Num(def::kSkipFirst), "steps skipped once before the first cycle"},
        {"wait", "N", Num(def::kWait), "steps without the profiler at the start of each cycle"},
        {"cycles", "N", Num(def::kCycles), "profiler cycles; each writes profile_trace.<step>.json"},
        {"aux-weight", "W", absl::StrCat(def::kAuxWeight),
         "LibreYOLO9's PGI auxiliary-branch loss weight, as the Python LibreYOLO's `libreyolo "
         "train --aux-weight` (0 trains the main head only)"},
        {"repeat", "N", Num(def::kRepeat), "trials for mean and standard deviation"}},
       DataParallelFlags(), ProfilerFlags()});
}

absl::Status ReadInferSpec(const ParsedArgs& a, v1::InferSpec* s) {
  FirstError err;
  err(ReadModel(a, s->mutable_model()));
  if (!a.positionals.empty()) s->set_source(a.positionals[0]);
  err(MaybeInt(a, "batch", [&](int64_t v) { s->set_batch(v); }));
  err(MaybeInt(a, "imgsz", [&](int64_t v) { s->set_imgsz(v); }));
  err(MaybeInt(a, "warmup", [&](int64_t v) { s->set_warmup(v); }));
  err(MaybeInt(a, "runs", [&](int64_t v) { s->set_runs(v); }));
  err(MaybeInt(a, "repeat", [&](int64_t v) { s->set_repeat(v); }));
  err(MaybeInt(a, "max-det", [&](int64_t v) { s->set_max_det(v); }));
  err(MaybeDouble(a, "conf", [&](double v) { s->set_conf(v); }));
  err(MaybeDouble(a, "iou", [&](double v) { s->set_iou(v); }));
  // auto | none, checked with the rest of the spec (job_spec.cc names --postprocess).
  if (auto p = a.Value("postprocess")) s->set_postprocess(*p);
  if (a.switches.count("half")) s->set_half(a.Switch("half"));
  if (auto t = a.Value("amp-dtype")) s->set_amp_dtype(*t);
  if (a.switches.count("trace")) s->set_trace(a.Switch("trace"));
  err(ReadProfiler(a, s->mutable_profiler()));
  return err.status();
}

absl::Status ReadRunSpec(const ParsedArgs& a, v1::RunSpec* s) {
  FirstError err;
  err(ReadModel(a, s->mutable_model()));
  if (!a.positionals.empty()) s->set_data(a.positionals[0]);
  if (a.Value("steps") && a.Value("active") && *a.Value("steps") != *a.Value("active")) {
    err(absl::InvalidArgumentError("--active is an alias of --steps: give one"));
  }
  err(MaybeInt(a, "batch", [&](int64_t v) { s->set_batch(v); }));
  err(MaybeInt(a, "imgsz", [&](int64_t v) { s->set_imgsz(v); }));
  err(MaybeInt(a, "workers", [&](int64_t v) { s->set_workers(v); }));
  err(MaybeInt(a, "steps", [&](int64_t v) { s->set_steps(v); }));
  err(MaybeInt(a, "active", [&](int64_t v) { s->set_steps(v); }));
  err(MaybeInt(a, "warmup", [&](int64_t v) { s->set_warmup(v); }));
  err(MaybeInt(a, "repeat", [&](int64_t v) { s->set_repeat(v); }));
  err(MaybeInt(a, "skip-first", [&](int64_t v) { s->set_skip_first(v); }));
  err(MaybeInt(a, "wait", [&](int64_t v) { s->set_wait(v); }));
  err(MaybeInt(a, "cycles", [&](int64_t v) { s->set_cycles(v); }));
  if (const auto aux = a.Value("aux-weight"); aux) {
    double w = 0;
    if (!absl::SimpleAtod(*aux, &w)) {
      err(absl::InvalidArgumentError(
          absl::StrCat("--aux-weight must be a number >= 0, not '", Excerpt(*aux), "'")));
    } else {
      s->set_aux_weight(w);
    }
  }
  if (a.switches.count("amp")) s->set_amp(a.Switch("amp"));
  err(ReadDataParallel(a, s->mutable_data_parallel(), s->mutable_model()));
  err(ReadProfiler(a, s->mutable_profiler()));
  return err.status();
}

namespace {

int32_t Clamp32(int64_t v) {
  return static_cast<int32_t>(std::clamp<int64_t>(v, INT32_MIN, INT32_MAX));
}

absl::Status ReadDataParallel(const ParsedArgs& a, v1::DataParallelOptions* d,
                              v1::ModelOptions* m) {
  FirstError err;
  err(MaybeInt(a, "nproc", [&](int64_t v) { d->set_nproc(Clamp32(v)); }));
  if (auto list = a.Value("devices")) {
    for (auto part : absl::StrSplit(*list, ',', absl::SkipEmpty())) {
      d->add_devices(std::string(absl::StripAsciiWhitespace(part)));
    }
    if (d->devices().empty()) {
      err(absl::InvalidArgumentError("--devices: give the slots, e.g. 0,1 or cpu,cpu:1"));
    }
    // The ranks' slots say the device: --device then need not be given as well.
    if (!d->devices().empty() && !a.Value("device")) m->set_device(d->devices(0));
  }
  if (auto b = a.Value("dist-backend")) d->set_backend(absl::AsciiStrToLower(*b));
  err(MaybeDouble(a, "bucket-cap-mb", [&](double v) { d->set_bucket_cap_mb(v); }));
  if (a.switches.count("gradient-as-bucket-view")) {
    d->set_gradient_as_bucket_view(a.Switch("gradient-as-bucket-view"));
  }
  if (a.switches.count("broadcast-buffers")) {
    d->set_broadcast_buffers(a.Switch("broadcast-buffers"));
  }
  err(MaybeInt(a, "dist-timeout", [&](int64_t v) { d->set_timeout_s(v); }));
  err(ReadRendezvous(
      a, [](const char* name) { return std::getenv(name); }, d->mutable_rendezvous()));
  if (d->rendezvous().ByteSizeLong() == 0) d->clear_rendezvous();
  return err.status();
}

// A rendezvous value: the flag, else the first of `vars` set in the environment.
struct FromEnv {
  std::optional<std::string> value;
  std::string source;  // "--node-rank" or "$SLURM_NODEID"
};

FromEnv Lookup(const ParsedArgs& a, const std::string& flag,
               const std::function<const char*(const char*)>& env,
               std::initializer_list<const char*> vars) {
  if (auto v = a.Value(flag)) return {*v, "--" + flag};
  for (const char* var : vars) {
    const char* v = env(var);
    if (v != nullptr && *v != '\0') return {std::string(v), absl::StrCat("$", var)};
  }
  return {};
}

absl::Status IntFrom(const FromEnv& v, int64_t* out) {
  ASSIGN_OR_RETURN(*out, ParseInteger(v.source, *v.value));
  return absl::OkStatus();
}

}  // namespace

absl::Status ReadRendezvous(const ParsedArgs& a, const std::function<const char*(const char*)>& env,
                            v1::Rendezvous* r) {
  int64_t nnodes = 0;
  bool given = false;
  RETURN_IF_ERROR(ReadInt(a, "nnodes", &nnodes, &given));
  // Without --nnodes > 1 only the flags given are read: the spec's validator refuses them
  // there, naming --nnodes.
  const std::function<const char*(const char*)> from =
      given && nnodes > 1 ? env : [](const char*) -> const char* { return nullptr; };
  if (given) r->set_nnodes(Clamp32(nnodes));
  const FromEnv node =
      Lookup(a, "node-rank", from, {"NODE_RANK", "SLURM_NODEID", "JOB_COMPLETION_INDEX"});
  if (!node.value && nnodes > 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--node-rank: required with --nnodes ", nnodes, " (this host's index 0..", nnodes - 1,
        "; a scheduler gives it as NODE_RANK, SLURM_NODEID or "
        "JOB_COMPLETION_INDEX)"));
  }
  int64_t v = 0;
  if (node.value) {
    RETURN_IF_ERROR(IntFrom(node, &v));
    r->set_node_rank(Clamp32(v));
  }
  if (const FromEnv addr = Lookup(a, "master-addr", from, {"MASTER_ADDR"}); addr.value) {
    r->set_master_addr(*addr.value);
  }
  if (const FromEnv port = Lookup(a, "master-port", from, {"MASTER_PORT"}); port.value) {
    RETURN_IF_ERROR(IntFrom(port, &v));
    r->set_master_port(Clamp32(v));
  }
  if (auto g = a.Value("group-id")) {
    r->set_group_id(*g);
  } else if (const char* job = from("SLURM_JOB_ID"); job != nullptr && *job != '\0') {
    r->set_group_id(absl::StrCat("slurm-", job));
  }
  return absl::OkStatus();
}

}  // namespace libreyolo::cli
