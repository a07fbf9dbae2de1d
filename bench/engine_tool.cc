// libreyolo-engine: runs engine jobs directly (no daemon), for benchmarks and for checking the
// engine on a GPU host. `libreyolo-engine infer [<source>] [flags]` takes the flags of
// `libreyolo profile infer` (shared/spec/cli.md), writes <project>/infer/profile.json and
// profile_trace.json, and prints the summary. `libreyolo-engine run <data> [flags]` does the
// same for `libreyolo profile run` (a short training run) under <project>/prof/, with the
// profiler schedule knobs and switches; a dataset too small for the window exits 3.
// --record-shapes/--profile-memory/--with-flops are tri-state: given (--x or --no-x) they are
// obeyed, left out they are on within --overhead-budget (server/engine/overhead_budget.h).
// Started without OMP_WAIT_POLICY (and without GOMP_SPINCOUNT), the tool re-executes itself with
// OMP_WAIT_POLICY=PASSIVE before doing anything, so that LibTorch's idle OpenMP threads sleep
// instead of spinning on the cores the job needs (server/engine/cpu_threads.h); set either
// variable to choose otherwise.
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "client/cli/args.h"
#include "client/cli/exit_codes.h"
#include "common/readers/summary_view.h"
#include "server/engine/cpu_threads.h"
#include "server/engine/engine.h"

namespace {

using libreyolo::cli::CommandSpec;
using libreyolo::cli::ParsedArgs;

CommandSpec InferSpec() {
  return {"infer",
          "profile the inference path",
          "Runs the LibreYOLO9 inference path in this process: warmup, a measured window without\n"
          "the profiler, then a profiled window recorded to profile_trace.json and analysed.",
          {{"source", false, "image or directory (default: the project's sample image)"}},
          {{"weights", "PATH", "LibreYOLO9t.pt",
            "weights file (the default name may be absent: "
            "seeded random init)"},
           {"size", "S", "t", "model size: t, s, m, c"},
           {"batch", "N", "1", "images per forward"},
           {"imgsz", "N", "640", "input size (multiple of 32)"},
           {"half", "", "off", "autocast forward (CUDA only)", true},
           {"amp-dtype", "T", "float16", "float16 or bfloat16"},
           {"warmup", "N", "20", "iterations before measuring"},
           {"runs", "N", "100", "measured iterations"},
           {"repeat", "N", "1", "trials for mean and standard deviation"},
           {"conf", "X", "0.25", "confidence threshold"},
           {"iou", "X", "0.45", "NMS IoU threshold"},
           {"max-det", "N", "300", "max detections per image"},
           {"device", "D", "0", "cpu or a CUDA index"},
           {"threads", "N", "all cores", "CPU threads"},
           {"trace", "", "on", "export the Chrome trace", true},
           {"profiled-runs", "N", "20", "iterations recorded in the trace"},
           {"record-shapes", "", "auto", "record op input shapes", true},
           {"profile-memory", "", "auto", "record allocations", true},
           {"with-flops", "", "auto", "record FLOPs", true},
           {"with-modules", "", "on", "module scopes in the trace (--with-stack: alias)", true},
           {"overhead-budget", "PCT", "3",
            "auto switches stay on while the profiler costs at most PCT % (probed)"},
           {"project", "DIR", "runs/profile", "output root"},
           {"kineto-trace", "PATH", "",
            "cross-check: record the profiled iterations again with LibTorch's own profiler "
            "(CUDA activity through Kineto) and save LibTorch's trace to PATH"},
           {"json", "", "", "print the profile summary as JSON"}}};
}

CommandSpec RunSpec() {
  return {"run",
          "profile a short training run",
          "Trains LibreYOLO9 in this process: measured windows without the profiler (warmup +\n"
          "steps), then the profiler schedule (skip-first, then cycles of wait, warmup and\n"
          "active steps), each cycle written as profile_trace.<step>.json, the last also as\n"
          "profile_trace.json, analysed into profile.json.",
          {{"data", true, "dataset YAML or name (coco128), or synthetic[:N]"}},
          {{"weights", "PATH", "LibreYOLO9t.pt",
            "weights file (the default name may be absent: "
            "seeded random init)"},
           {"size", "S", "t", "model size: t, s, m, c"},
           {"batch", "N", "16", "micro-batch; -1 fills ~70% of VRAM (16 on CPU)"},
           {"imgsz", "N", "640", "training image size (multiple of 32)"},
           {"workers", "N", "8", "data-loader workers"},
           {"amp", "", "on", "float16 autocast + loss scaling (CUDA only)", true},
           {"steps", "N", "20", "measured (profiled) steps"},
           {"active", "N", "20", "alias of --steps"},
           {"warmup", "N", "5", "steps before measuring (and the profiler's warmup)"},
           {"repeat", "N", "1", "trials for mean and standard deviation"},
           {"skip-first", "N", "0", "profiler schedule: steps skipped once"},
           {"wait", "N", "0", "profiler schedule: idle steps per cycle"},
           {"cycles", "N", "1", "profiler schedule: cycles (one trace each)"},
           {"device", "D", "0", "cpu or a CUDA index"},
           {"threads", "N", "all cores", "CPU threads"},
           {"activities", "LIST", "cpu + device", "cpu or cpu,cuda"},
           {"record-shapes", "", "auto", "record op input shapes", true},
           {"profile-memory", "", "auto", "record allocations", true},
           {"with-flops", "", "auto", "record FLOPs", true},
           {"with-modules", "", "on", "module scopes in the trace (--with-stack: alias)", true},
           {"overhead-budget", "PCT", "3",
            "auto switches stay on while the profiler costs at most PCT % (probed)"},
           {"project", "DIR", "runs/profile", "output root"},
           {"json", "", "", "print the profile summary as JSON"}}};
}

absl::StatusOr<int64_t> Int(const ParsedArgs& a, const std::string& flag, int64_t def) {
  auto v = a.Value(flag);
  if (!v) return def;
  auto n = libreyolo::cli::ParseIntFlag(flag, *v);
  if (!n.ok()) return n.status();
  return *n;
}

absl::StatusOr<double> Dbl(const ParsedArgs& a, const std::string& flag, double def) {
  auto v = a.Value(flag);
  if (!v) return def;
  return libreyolo::cli::ParseDoubleFlag(flag, *v);
}

// --x: true, --no-x: false, neither: nullopt (auto: on within the overhead budget).
std::optional<bool> TriState(const ParsedArgs& a, const std::string& name) {
  auto it = a.switches.find(name);
  if (it == a.switches.end()) return std::nullopt;
  return it->second;
}

// The profiler switches both commands share.
absl::Status ReadProfilerSwitches(const ParsedArgs& a, libreyolo::engine::ProfilerSwitches* p) {
  p->record_shapes = TriState(a, "record-shapes");
  p->profile_memory = TriState(a, "profile-memory");
  p->with_flops = TriState(a, "with-flops");
  p->with_modules = a.Switch("with-modules", true);
  auto budget = Dbl(a, "overhead-budget", p->overhead_budget_pct);
  if (!budget.ok()) return budget.status();
  p->overhead_budget_pct = *budget;
  return absl::OkStatus();
}

// Prints the summary of a finished job, or its error with the exit code it maps to.
int Finish(const std::string& command, const absl::StatusOr<libreyolo::engine::JobResult>& result,
           bool json) {
  if (!result.ok()) {
    std::cerr << "libreyolo-engine " << command << ": error: " << result.status().message() << "\n";
    return libreyolo::ExitCodeForStatus(result.status());
  }
  const auto view = libreyolo::BuildSummary(result->profile, result->profile_path);
  std::cout << (json ? libreyolo::RenderSummaryJson(view) : libreyolo::RenderSummaryText(view));
  std::cerr << "wrote " << result->profile_path
            << (result->trace_path.empty() ? "" : " and " + result->trace_path) << "\n";
  return libreyolo::cli::kExitOk;
}

void PrintProgress(const libreyolo::engine::JobProgress& p) {
  std::cerr << "[" << p.stage << "] " << p.done << "/" << p.total
            << (p.message.empty() ? "" : ": " + p.message) << "\n";
}

int RunInfer(const ParsedArgs& a) {
  libreyolo::engine::InferJobSpec s;
  s.model.weights = a.ValueOr("weights", s.model.weights);
  s.model.size = a.ValueOr("size", s.model.size);
  s.model.device = a.ValueOr("device", s.model.device);
  if (!a.positionals.empty()) s.source = a.positionals[0];
  s.half = a.Switch("half", false);
  s.amp_dtype = a.ValueOr("amp-dtype", s.amp_dtype);
  s.trace = a.Switch("trace", true);
  s.project = a.ValueOr("project", s.project);
  s.kineto_trace_path = a.ValueOr("kineto-trace", "");
  absl::Status bad = ReadProfilerSwitches(a, &s.profiler);
  auto take = [&](auto value, auto* into) {
    if (!value.ok()) {
      if (bad.ok()) bad = value.status();
      return;
    }
    *into = *value;
  };
  int64_t threads = 0;
  take(Int(a, "batch", s.batch), &s.batch);
  take(Int(a, "imgsz", s.imgsz), &s.imgsz);
  take(Int(a, "warmup", s.warmup), &s.warmup);
  take(Int(a, "runs", s.runs), &s.runs);
  take(Int(a, "repeat", s.repeat), &s.repeat);
  take(Int(a, "max-det", s.max_det), &s.max_det);
  take(Int(a, "profiled-runs", s.profiled_runs), &s.profiled_runs);
  take(Int(a, "threads", 0), &threads);
  take(Dbl(a, "conf", s.conf), &s.conf);
  take(Dbl(a, "iou", s.iou), &s.iou);
  s.model.threads = static_cast<int>(threads);
  if (!bad.ok()) {
    std::cerr << "libreyolo-engine infer: error: " << bad.message() << "\n";
    return libreyolo::cli::kExitUsage;
  }
  return Finish("infer", libreyolo::engine::RunInferJob(s, PrintProgress, nullptr),
                a.Switch("json"));
}

int RunTrain(const ParsedArgs& a) {
  libreyolo::engine::TrainJobSpec s;
  s.data = a.positionals.at(0);
  s.model.weights = a.ValueOr("weights", s.model.weights);
  s.model.size = a.ValueOr("size", s.model.size);
  s.model.device = a.ValueOr("device", s.model.device);
  s.amp = a.Switch("amp", true);
  s.project = a.ValueOr("project", s.project);
  absl::Status bad = ReadProfilerSwitches(a, &s.profiler);
  if (auto act = a.Value("activities")) {
    if (*act != "cpu" && *act != "cpu,cuda" && *act != "cuda,cpu" && bad.ok()) {
      bad = absl::InvalidArgumentError("--activities must be cpu or cpu,cuda");
    }
    s.profiler.cuda = absl::StrContains(*act, "cuda");
  }
  auto take = [&](auto value, auto* into) {
    if (!value.ok()) {
      if (bad.ok()) bad = value.status();
      return;
    }
    *into = *value;
  };
  int64_t threads = 0;
  take(Int(a, "batch", s.batch), &s.batch);
  take(Int(a, "imgsz", s.imgsz), &s.imgsz);
  take(Int(a, "workers", s.workers), &s.workers);
  take(Int(a, "steps", s.steps), &s.steps);
  take(Int(a, "active", s.steps), &s.steps);
  take(Int(a, "warmup", s.warmup), &s.warmup);
  take(Int(a, "repeat", s.repeat), &s.repeat);
  take(Int(a, "skip-first", s.skip_first), &s.skip_first);
  take(Int(a, "wait", s.wait), &s.wait);
  take(Int(a, "cycles", s.cycles), &s.cycles);
  take(Int(a, "threads", 0), &threads);
  s.model.threads = static_cast<int>(threads);
  if (a.Value("steps") && a.Value("active") && *a.Value("steps") != *a.Value("active")) {
    if (bad.ok()) bad = absl::InvalidArgumentError("--active is an alias of --steps: give one");
  }
  if (!bad.ok()) {
    std::cerr << "libreyolo-engine run: error: " << bad.message() << "\n";
    return libreyolo::cli::kExitUsage;
  }
  return Finish("run", libreyolo::engine::RunTrainJob(s, PrintProgress, nullptr), a.Switch("json"));
}

}  // namespace

int main(int argc, char** argv) {
  libreyolo::engine::ReexecWithPassiveOmpWaitPolicy(argv);  // returns unless it re-executes
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::cout << "usage: libreyolo-engine infer [<source>] [flags]   (see infer --help)\n"
                 "       libreyolo-engine run <data> [flags]         (see run --help)\n";
    return args.empty() ? libreyolo::cli::kExitUsage : libreyolo::cli::kExitOk;
  }
  if (args[0] != "infer" && args[0] != "run") {
    std::cerr << "libreyolo-engine: error: unknown command '" << args[0] << "' (infer, run)\n";
    return libreyolo::cli::kExitUsage;
  }
  const CommandSpec spec = args[0] == "infer" ? InferSpec() : RunSpec();
  auto parsed = libreyolo::cli::ParseArgs(spec, {args.begin() + 1, args.end()});
  if (!parsed.ok()) {
    std::cerr << "libreyolo-engine " << args[0] << ": error: " << parsed.status().message() << "\n";
    return libreyolo::cli::kExitUsage;
  }
  if (parsed->help) {
    std::cout << libreyolo::cli::HelpText("libreyolo-engine", spec);
    return libreyolo::cli::kExitOk;
  }
  return args[0] == "infer" ? RunInfer(*parsed) : RunTrain(*parsed);
}
