// libreyolo-engine: runs engine jobs directly (no daemon), for benchmarks and for checking the
// engine on a GPU host. `libreyolo-engine infer [<source>] [flags]` takes the flags of
// `libreyolo profile infer` (shared/spec/cli.md), writes <project>/infer/profile.json and
// profile_trace.json, and prints the summary. `libreyolo-engine run <data> [flags]` does the
// same for `libreyolo profile run` (a short training run) under <project>/prof/, with the
// profiler schedule knobs and switches; a dataset too small for the window exits 3.
// The job's flags, defaults and bounds are those of `libreyolo profile infer|run` (one flag
// table, client/cli/job_flags.h; one validator, wire/job_spec/job_spec.h, without a daemon's
// limits). --record-shapes/--profile-memory/--with-flops: given (--x or --no-x) they are obeyed,
// left out they take their fixed defaults (server/engine/job/overhead_budget.h).
// Started without OMP_WAIT_POLICY (and without GOMP_SPINCOUNT), the tool re-executes itself with
// OMP_WAIT_POLICY=PASSIVE before doing anything, so that LibTorch's idle OpenMP threads sleep
// instead of spinning on the cores the job needs (server/engine/runtime/cpu_threads.h); set either
// variable to choose otherwise. SIGPIPE is ignored, as in libreyolod and its workers: a rank whose
// peer died gets EPIPE from Gloo's socket write and fails naming the rank, instead of dying by
// the signal (exit 141, no message) when its write came before its read noticed the loss.
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/cli/args.h"
#include "client/cli/exit_codes.h"
#include "client/cli/job_flags.h"
#include "common/readers/summary_view.h"
#include "common/render/terminal_text.h"
#include "common/status/status_macros.h"
#include "wire/job_spec/job_spec.h"
#include "server/engine/engine.h"
#include "server/engine/runtime/cpu_threads.h"
#include "server/worker/engine_spec.h"

namespace {

namespace v1 = ::libreyolo::profiler::v1;
using libreyolo::cli::CommandSpec;
using libreyolo::cli::FlagSpec;
using libreyolo::cli::ParsedArgs;

// The job's options are the shared flag table's (client/cli/job_flags.h, the same as `libreyolo
// profile infer|run`); these are the tool's own.
std::vector<FlagSpec> WithToolFlags(std::vector<FlagSpec> flags, bool infer) {
  const libreyolo::worker::RankPlacement dp;  // the defaults, stated once (job_defaults.h)
  // One rank, placed by its launcher: a daemon's rendezvous across hosts is not this tool's
  // (its --master-addr and --master-port, below, are the rank's own).
  std::erase_if(flags, [](const FlagSpec& f) {
    for (const char* host : {"nnodes", "node-rank", "master-addr", "master-port", "group-id"}) {
      if (f.name == host) return true;
    }
    return false;
  });
  if (infer) {
    flags.push_back({"profiled-runs", "N",
                     absl::StrCat(libreyolo::jobspec::defaults::kProfiledRuns),
                     "iterations recorded in the trace"});
    flags.push_back({"kineto-trace", "PATH", "",
                     "cross-check: record the profiled iterations again with LibTorch's own "
                     "profiler (CUDA activity through Kineto) and save LibTorch's trace to PATH"});
  }
  flags.push_back({"project", "DIR", libreyolo::jobspec::defaults::kProject, "output root"});
  flags.push_back({"json", "", "", "print the profile summary as JSON"});
  flags.push_back({"report", "LABEL", "",
                   "also draw report.html beside profile.json, labelled LABEL on the page (as "
                   "the daemon does for its jobs)"});
  if (!infer) {
    // One rank of a data-parallel run (issue 21), started by a launcher the way torchrun starts
    // a PyTorch script: unset flags come from torchrun's RANK, WORLD_SIZE, MASTER_ADDR and
    // MASTER_PORT.
    flags.push_back({"world-size", "N", absl::StrCat(dp.world_size, " ($WORLD_SIZE)"),
                     "ranks of the data-parallel run"});
    flags.push_back(
        {"rank", "R", absl::StrCat(dp.rank, " ($RANK)"), "this process's rank, 0..N-1"});
    flags.push_back({"master-addr", "HOST", absl::StrCat(dp.master_addr, " ($MASTER_ADDR)"),
                     "where rank 0 serves the c10d TCPStore rendezvous"});
    flags.push_back({"master-port", "PORT", absl::StrCat(dp.master_port, " ($MASTER_PORT)"),
                     "its port"});
  }
  if (!infer) {
    flags.push_back({"inject-dataload-delay", "MS", "0",
                     "sleep MS inside every step's data loading (a straggler made on purpose, "
                     "to check the cross-rank analysis; recorded in the profile), 0..60000"});
  }
  flags.push_back({"post-window", "memory|files", "memory",
                   "how the recorded window becomes the profile: analysed in memory as it is "
                   "written (memory), or written, then read back to analyse and draw the report "
                   "(files: the path before, the bench's peer)"});
  return flags;
}

// The job's output options from the tool's own flags.
absl::StatusOr<libreyolo::engine::JobOutputOptions> OutputOptions(const ParsedArgs& a) {
  libreyolo::engine::JobOutputOptions o;
  o.report_label = a.ValueOr("report", "");
  const std::string mode = a.ValueOr("post-window", "memory");
  if (mode != "memory" && mode != "files") {
    return absl::InvalidArgumentError(
        absl::StrCat("--post-window must be memory or files, not '", mode, "'"));
  }
  o.analyse_from_files = mode == "files";
  return o;
}

CommandSpec InferSpec() {
  return {"infer",
          "profile the inference path",
          "Runs the LibreYOLO9 inference path in this process: warmup, a measured window without\n"
          "the profiler, then a profiled window recorded to profile_trace.json and analysed.",
          {{"source", false, "image or directory (default: the project's sample image)"}},
          WithToolFlags(libreyolo::cli::InferSpecFlags(), /*infer=*/true)};
}

CommandSpec RunSpec() {
  return {"run",
          "profile a short training run",
          "Trains LibreYOLO9 in this process: measured windows without the profiler (warmup +\n"
          "steps), then the profiler schedule (skip-first, then cycles of wait, warmup and\n"
          "active steps), each cycle written as profile_trace.<step>.json, the last also as\n"
          "profile_trace.json, analysed into profile.json.",
          {{"data", true, "dataset YAML or name (coco128), or synthetic[:N]"}},
          WithToolFlags(libreyolo::cli::RunSpecFlags(), /*infer=*/false)};
}

// A value and where it came from ("--rank", or "$RANK" when torchrun's variable gave it), for
// the error that names it.
struct Given {
  std::string value;
  std::string source;
};

// The flag, else torchrun's variable, else `fallback`.
Given FlagOrEnv(const ParsedArgs& a, const std::string& flag, const char* env,
                const std::string& fallback) {
  if (auto v = a.Value(flag)) return {*v, "--" + flag};
  const char* e = std::getenv(env);
  if (e != nullptr && *e != '\0') return {std::string(e), absl::StrCat("$", env)};
  return {fallback, "--" + flag};
}

absl::StatusOr<int64_t> BoundedInt(const Given& g, int64_t lo, int64_t hi) {
  ASSIGN_OR_RETURN(const int64_t v, libreyolo::cli::ParseInteger(g.source, g.value));
  if (v < lo || v > hi) {
    return absl::InvalidArgumentError(absl::StrCat(g.source, " ", v, ": must be in ", lo, "..", hi));
  }
  return v;
}

// The rank's place in a data-parallel run, from the flags and torchrun's environment. The
// run's other data-parallel options (backend, buckets, timeout) are the shared table's.
absl::StatusOr<libreyolo::worker::RankPlacement> RankPlacementOf(const ParsedArgs& a,
                                                                const v1::RunSpec& spec) {
  namespace bounds = libreyolo::jobspec::bounds;
  if (spec.data_parallel().nproc() > 1 || spec.data_parallel().devices_size() > 0) {
    return absl::InvalidArgumentError(
        "--nproc and --devices are libreyolo profile run's (a daemon places the ranks); this "
        "tool is one rank: start N of them with torchrun, or with --world-size and --rank");
  }
  libreyolo::worker::RankPlacement d;  // its defaults are the fallbacks
  ASSIGN_OR_RETURN(d.world_size,
                   BoundedInt(FlagOrEnv(a, "world-size", "WORLD_SIZE", absl::StrCat(d.world_size)),
                              1, bounds::kMaxWorldSize));
  ASSIGN_OR_RETURN(d.rank, BoundedInt(FlagOrEnv(a, "rank", "RANK", absl::StrCat(d.rank)), 0,
                                      d.world_size - 1));
  const Given addr = FlagOrEnv(a, "master-addr", "MASTER_ADDR", d.master_addr);
  if (!libreyolo::jobspec::IsHostOrAddress(addr.value)) {
    return absl::InvalidArgumentError(
        absl::StrCat(addr.source, ": '", libreyolo::Excerpt(addr.value),
                     "' is not a host name or address (1..253 bytes of [A-Za-z0-9.:_-])"));
  }
  d.master_addr = addr.value;
  ASSIGN_OR_RETURN(d.master_port,
                   BoundedInt(FlagOrEnv(a, "master-port", "MASTER_PORT", absl::StrCat(d.master_port)),
                              1, 65535));
  return d;
}

int UsageError(const std::string& command, const absl::Status& s) {
  std::cerr << "libreyolo-engine " << command << ": error: " << s.message() << "\n";
  return libreyolo::cli::kExitUsage;
}

// Prints the summary of a finished job, or its error with the exit code it maps to.
int Finish(const std::string& command, const absl::StatusOr<libreyolo::engine::JobResult>& result,
           bool json) {
  if (!result.ok()) {
    std::cerr << "libreyolo-engine " << command << ": error: " << result.status().message() << "\n";
    return libreyolo::ExitCodeForStatus(result.status());
  }
  // A --repeat job's profile is its repeat file (the trials' means); the trials' own files are in
  // <project>/<kind>_<T>/ (common/io/trial_artifacts.h).
  const std::string& profile = result->repeat_path.value_or(result->profile_path);
  const auto view = libreyolo::BuildSummary(result->profile, profile);
  std::cout << (json ? libreyolo::RenderSummaryJson(view) : libreyolo::RenderSummaryText(view));
  std::cerr << "wrote " << profile
            << (result->trace_path.empty() ? "" : " and " + result->trace_path)
            << (result->report_path.empty() ? "" : " and " + result->report_path) << "\n";
  // bench/engine_bench.py --post-window reads this line.
  const libreyolo::engine::PostWindowTimes& t = result->post_window;
  std::cerr << absl::StrFormat("post-window: %.1f ms (trace written and analysed %.1f ms, "
                               "outputs %.1f ms)\n",
                               t.total_ms(), t.trace_ms, t.outputs_ms);
  return libreyolo::cli::kExitOk;
}

void PrintProgress(const libreyolo::JobProgress& p) {
  std::cerr << "[" << p.stage << "] " << p.done << "/" << p.total
            << (p.message.empty() ? "" : ": " + p.message) << "\n";
}

// The flags into the job spec, checked by the spec's validator (the daemon's, without a
// daemon's limits: only the contract's bounds), mapped into the engine's options.
int RunInfer(const ParsedArgs& a) {
  v1::InferSpec spec;
  if (auto st = libreyolo::cli::ReadInferSpec(a, &spec); !st.ok()) return UsageError("infer", st);
  const std::string device = spec.model().device();
  if (auto st = libreyolo::jobspec::ValidateInferSpec(spec, {}, device == "cpu"); !st.ok()) {
    return UsageError("infer", st);
  }
  libreyolo::engine::InferJobSpec s = libreyolo::worker::ToEngineInferSpec(
      spec, device, a.ValueOr("project", libreyolo::jobspec::defaults::kProject));
  if (auto n = a.Value("profiled-runs")) {
    auto v = libreyolo::cli::ParseIntFlag("profiled-runs", *n);
    if (!v.ok()) return UsageError("infer", v.status());
    s.profiled_runs = *v;
  }
  s.kineto_trace_path = a.ValueOr("kineto-trace", "");
  auto output = OutputOptions(a);
  if (!output.ok()) return UsageError("infer", output.status());
  s.output = *output;
  return Finish("infer", libreyolo::engine::RunInferJob(s, PrintProgress, nullptr),
                a.Switch("json"));
}

int RunTrain(const ParsedArgs& a) {
  v1::RunSpec spec;
  if (auto st = libreyolo::cli::ReadRunSpec(a, &spec); !st.ok()) return UsageError("run", st);
  spec.mutable_data_parallel()->clear_rendezvous();  // RankPlacementOf reads the rank's flags
  const std::string device = spec.model().device();
  if (auto st = libreyolo::jobspec::ValidateRunSpec(spec, {}, device == "cpu"); !st.ok()) {
    return UsageError("run", st);
  }
  auto placement = RankPlacementOf(a, spec);
  if (!placement.ok()) return UsageError("run", placement.status());
  libreyolo::engine::TrainJobSpec s = libreyolo::worker::ToEngineTrainSpec(
      spec, device, a.ValueOr("project", libreyolo::jobspec::defaults::kProject), *placement);
  auto output = OutputOptions(a);
  if (!output.ok()) return UsageError("run", output.status());
  s.output = *output;
  auto delay = BoundedInt({a.ValueOr("inject-dataload-delay", "0"), "--inject-dataload-delay"}, 0,
                          60000);
  if (!delay.ok()) return UsageError("run", delay.status());
  s.inject_dataload_delay_ms = *delay;
  return Finish("run", libreyolo::engine::RunTrainJob(s, PrintProgress, nullptr), a.Switch("json"));
}

}  // namespace

int main(int argc, char** argv) {
  libreyolo::engine::ReexecWithPassiveOmpWaitPolicy(argv);  // returns unless it re-executes
  std::signal(SIGPIPE, SIG_IGN);  // a closed peer is an error return (the header comment)
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
