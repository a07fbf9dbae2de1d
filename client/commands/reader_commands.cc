#include "client/commands/reader_commands.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "client/cli/exit_codes.h"
#include "client/commands/compare_gate_command.h"
#include "client/commands/report_command.h"
#include "client/remote/daemon_connection.h"
#include "client/remote/remote_reader.h"
#include "common/analysis/what_if.h"
#include "common/load/load_profile.h"
#include "common/readers/latency_view.h"
#include "common/readers/modules_view.h"
#include "common/readers/ops_view.h"
#include "common/readers/run_reader.h"
#include "common/readers/top_rows.h"
#include "common/render/terminal_text.h"
#include "common/status/status_macros.h"

namespace libreyolo::cli {
namespace {

const PositionalSpec kTraceArg{
    "trace", true,
    "profile.json, profile_repeat.json, profile_trace.json or any PyTorch/Kineto Chrome trace "
    "(.json or .json.gz); or job:<id> for a profile stored on a libreyolod"};
const FlagSpec kJsonFlag{"json", "", "", "print JSON instead of text"};
const FlagSpec kRankFlag{"rank", "K", "",
                         "with a folder of per-rank traces: read rank K's trace (docs/cli.md)"};

// Messages and views may carry names from a profile or a daemon (kernel and op names, labels):
// printed through TerminalSafe. --json output is JSON, whose strings escape control characters.
int Fail(std::ostream& err, const std::string& cmd, int code, const std::string& msg) {
  err << "libreyolo profile " << cmd << ": error: " << TerminalSafe(msg, /*multiline=*/true)
      << "\n";
  return code;
}

int Emit(std::ostream& out, const std::string& text) {
  out << text;
  out.flush();
  return kExitOk;
}

// A reader's command line: its subcommand's text and flags, and how the flags fill the
// invocation. Its name and the number of profiles it reads are the reader's own row
// (common/readers/run_reader.h, Readers()); its bounds are the ones the daemon checks.
struct ReaderFlags {
  ReaderId id;
  std::string summary;
  std::string description;
  std::vector<PositionalSpec> positionals;
  std::vector<FlagSpec> flags;
  absl::Status (*parse)(const ParsedArgs& a, ReaderInvocation& inv);  // nullptr: no options
  // A command that takes the reader's place when its flag is given (nullptr: none): compare's
  // --fail-if-slower is the CI gate (compare_gate_command.h).
  const char* instead_flag = nullptr;
  int (*instead)(const ParsedArgs& a, std::ostream& out, std::ostream& err) = nullptr;
};

absl::StatusOr<int64_t> IntFlag(const ParsedArgs& a, const std::string& flag) {
  return ParseIntFlag(flag, *a.Value(flag));
}

absl::Status ParseGet(const ParsedArgs& a, ReaderInvocation& inv) {
  if (a.positionals.size() > 1) inv.field = a.positionals[1];
  return absl::OkStatus();
}

// Plain compare (no --fail-if-slower: the gate takes the command otherwise).
absl::Status ParseCompare(const ParsedArgs& a, ReaderInvocation&) {
  if (a.Value("job-drift-pct")) {
    return absl::InvalidArgumentError(
        "--job-drift-pct is the CI gate's drift between jobs: give it with --fail-if-slower PCT");
  }
  return absl::OkStatus();
}

absl::Status ParseTop(const ParsedArgs& a, int* top) {
  if (!a.Value("top")) return absl::OkStatus();
  ASSIGN_OR_RETURN(const int64_t n, IntFlag(a, "top"));
  RETURN_IF_ERROR(CheckTop(n));
  *top = static_cast<int>(n);  // within CheckTop's bounds
  return absl::OkStatus();
}

absl::Status ParseKernels(const ParsedArgs& a, ReaderInvocation& inv) {
  KernelsOptions& o = inv.kernels;
  RETURN_IF_ERROR(ParseTop(a, &o.top));
  o.category = a.Value("category");
  o.grep = a.Value("grep");
  o.tensorcore_only = a.Switch("tensorcore");
  o.sort = a.ValueOr("sort", KernelsOptions{}.sort);
  o.phase = a.Value("phase");
  return absl::OkStatus();
}

absl::Status ParseOps(const ParsedArgs& a, ReaderInvocation& inv) {
  OpsOptions& o = inv.ops;
  RETURN_IF_ERROR(ParseTop(a, &o.top));
  o.phase = a.Value("phase");
  o.sort = a.ValueOr("sort", OpsOptions{}.sort);
  o.group_by_input_shape = a.Switch("group-by-input-shape");
  return absl::OkStatus();
}

absl::Status ParseModules(const ParsedArgs& a, ReaderInvocation& inv) {
  ModulesOptions& o = inv.modules;
  if (a.Value("depth")) {
    ASSIGN_OR_RETURN(const int64_t n, IntFlag(a, "depth"));
    RETURN_IF_ERROR(CheckModuleDepth(n));
    o.depth = static_cast<int>(n);  // within CheckModuleDepth's bounds
  }
  o.sort = a.ValueOr("sort", "order");
  o.format = a.ValueOr("format", "table");
  if (o.format == "folded" && a.Switch("json")) {
    return absl::InvalidArgumentError(
        "--format folded is plain text for flame-graph tools; drop --json");
  }
  return absl::OkStatus();
}

absl::Status ParseWhatIf(const ParsedArgs& a, ReaderInvocation& inv) {
  inv.what_if.remove_category = a.Value("remove-category");
  if (auto n = a.Value("remove-launches")) {
    ASSIGN_OR_RETURN(auto v, ParseDoubleFlag("remove-launches", *n));
    RETURN_IF_ERROR(CheckRemoveLaunches(v));
    inv.what_if.remove_launches = v;
  }
  return absl::OkStatus();
}

// The bounds are the view's (CheckLatencyOptions), the same the daemon checks.
absl::Status ParseLatency(const ParsedArgs& a, ReaderInvocation& inv) {
  LatencyOptions& o = inv.latency;
  if (a.Value("buckets")) {
    ASSIGN_OR_RETURN(const int64_t n, IntFlag(a, "buckets"));
    RETURN_IF_ERROR(CheckLatencyBuckets(n));
    o.buckets = static_cast<int32_t>(n);
  }
  if (a.Value("slowest")) {
    ASSIGN_OR_RETURN(const int64_t n, IntFlag(a, "slowest"));
    RETURN_IF_ERROR(CheckLatencySlowest(n));
    o.slowest = static_cast<int32_t>(n);
  }
  return absl::OkStatus();
}

// Builds the view through the one reader path shared with the daemon (common/readers/
// run_reader.h): local files are loaded here; `job:<id>` inputs are answered by a daemon.
int Execute(const ReaderFlags& r, const ParsedArgs& a, std::ostream& out, std::ostream& err) {
  const ReaderDef& def = Reader(r.id);
  const std::string cmd = def.name;
  ReaderInvocation inv;
  inv.reader = r.id;
  const size_t n = std::min(def.inputs, a.positionals.size());
  inv.inputs.assign(a.positionals.begin(), a.positionals.begin() + static_cast<long>(n));
  if (r.parse != nullptr) {
    if (absl::Status s = r.parse(a, inv); !s.ok()) {
      return Fail(err, cmd, kExitUsage, std::string(s.message()));
    }
  }
  if (auto rank = a.Value("rank")) {
    auto k = ParseIntFlag("rank", *rank);
    if (!k.ok()) return Fail(err, cmd, kExitUsage, std::string(k.status().message()));
    inv.rank = *k;
  }
  absl::StatusOr<ReaderOutput> result;
  if (UsesDaemon(inv.inputs, a)) {
    if (inv.rank) {
      return Fail(err, cmd, kExitUsage,
                  "--rank reads a local folder of per-rank traces, not a job on a daemon");
    }
    result = RunRemoteReader(inv, a);
  } else {
    inv.read_folders = true;
    result = RunReader(inv, [](const std::string& path) { return LoadProfile(path); });
  }
  if (!result.ok()) {
    return Fail(err, cmd, ExitCodeForStatus(result.status()),
                std::string(result.status().message()));
  }
  return Emit(out,
              a.Switch("json") ? result->json : TerminalSafe(result->text, /*multiline=*/true));
}

std::string SortKeysText() { return absl::StrJoin(OpSortKeys(), "|"); }

// In ReaderId order (Readers()).
const std::vector<ReaderFlags>& ReaderFlagTable() {
  static const auto* table = new std::vector<ReaderFlags>{
      {ReaderId::kSummary,
       "step time, throughput, GPU utilisation, host overhead and the bottleneck verdict",
       "Shows the headline numbers of a profile, verdict first: step time, throughput, GPU\n"
       "utilisation, Tensor Core share, peak VRAM, host overhead, launches per step, kernel\n"
       "composition by category and the top kernels; for inference profiles also latency\n"
       "percentiles and stage shares. A profile taken under memory pressure is flagged.\n"
       "A folder of per-rank traces (DDP under torch.profiler) gives the cross-rank view:\n"
       "per-rank steps, the straggler, exposed communication, all-reduce bandwidth.",
       {kTraceArg},
       {kRankFlag, kJsonFlag},
       nullptr},
      {ReaderId::kGet,
       "one metric and nothing else (no field: list the metrics)",
       "Prints one metric's value and nothing else, for scripts. Without a field it lists\n"
       "every metric with its value. An unknown field exits 2.",
       {kTraceArg, {"field", false, "metric name, e.g. step_ms, gpu_util, forward_gpu_ms"}},
       {kJsonFlag},
       ParseGet},
      {ReaderId::kPhases,
       "GPU ms, wall ms, kernels and ops per phase (forward, backward, ...)",
       "Per phase (dataload, to_device, forward, backward, optimizer; preprocess and\n"
       "postprocess for inference): GPU ms, wall ms, kernel count and op count per step.\n"
       "Kernels are attributed through their launch's correlation id.",
       {kTraceArg},
       {kRankFlag, kJsonFlag},
       nullptr},
      {ReaderId::kKernels,
       "individual GPU kernels: share of GPU time, ms and calls per step",
       "Lists GPU kernels with their share of GPU time, ms per step, calls per step, Tensor\n"
       "Core use and category.",
       {kTraceArg},
       {{"top", "N", absl::StrCat(kDefaultTop), "show the first N kernels (0 = all)"},
        {"category", "C", "",
         "keep categories containing C (gemm, layout, norm, elementwise, "
         "communication, other)"},
        {"grep", "REGEX", "", "keep kernels whose name matches REGEX (case-insensitive)"},
        {"tensorcore", "", "", "keep only Tensor Core kernels"},
        {"sort", "KEY", KernelsOptions{}.sort, "order by time, count or name"},
        {"phase", "P", "", "only kernels launched in phase P (unknown P exits 2)"},
        kRankFlag,
        kJsonFlag},
       ParseKernels},
      {ReaderId::kOps,
       "framework ops ranked by CPU time (the key_averages table)",
       "The framework view: aten and autograd ops ranked by CPU time, with self CPU time,\n"
       "calls, memory and FLOPs columns where the profile has them, and the \"Self CPU time\n"
       "total\" footer. This is where host cost shows.",
       {kTraceArg},
       {{"top", "N", absl::StrCat(kDefaultTop), "show the first N ops (0 = all)"},
        {"phase", "P", "", "only ops run in phase P (unknown P exits 2)"},
        {"sort", "KEY", OpsOptions{}.sort, SortKeysText()},
        {"group-by-input-shape", "", "", "one row per (op, input shapes); needs shapes"},
        kRankFlag,
        kJsonFlag},
       ParseOps},
      {ReaderId::kModules,
       "per-layer table of the model's module scopes (self/total CPU, GPU, FLOPs)",
       "The per-layer view of a trace recorded with --with-modules (the default): one row\n"
       "per LibreYOLO9 module path (backbone.conv0, neck.elan_up1, head.cv2.0, ...) with\n"
       "calls, total and self CPU time, GPU time of the kernels launched inside (by launch\n"
       "correlation), FLOPs of the ops inside and share of the profiled step, per step.\n"
       "Self = total minus the module scopes directly inside. --format folded writes folded\n"
       "stacks (module;module;op <us>) for flamegraph.pl or speedscope. Reads the trace\n"
       "(a profile.json's profile_trace.json beside it).",
       {kTraceArg},
       {{"depth", "N", "all",
         "aggregate by the first N path components (1: backbone, neck, "
         "head)"},
        {"sort", "KEY", "order", absl::StrJoin(ModuleSortKeys(), "|")},
        {"format", "F", "table", "table, or folded (flame-graph stacks, weights in us)"},
        kJsonFlag},
       ParseModules},
      {ReaderId::kCompare,
       "deltas between two profiles, with a significance call",
       "Deltas in throughput, ms per image, GPU utilisation, host overhead, launches per step\n"
       "and the verdict. With n >= 2 trials on both sides (profile_repeat.json), a difference\n"
       "in img/s is significant when it exceeds twice the combined standard error.\n"
       "--fail-if-slower PCT answers PASS (exit 0), FAIL (exit 4) or INCONCLUSIVE (exit 5)\n"
       "for CI: FAIL when the whole interval of the img/s difference (+/- 2*SE, the trials'\n"
       "spread and --job-drift-pct of drift between jobs) is slower than PCT % of the before\n"
       "img/s, PASS when all of it is within, INCONCLUSIVE when it straddles the threshold or\n"
       "either side is a single run. Like-for-like profiles only (mode, model, size, imgsz,\n"
       "device: exit 2 otherwise); a different batch is a lever, compared per image.\n"
       "Two folders of per-rank traces compare the runs' cross-rank figures and each rank's\n"
       "step (docs/cli.md); with --rank K, rank K's traces.",
       {{"before", true, "the baseline profile or trace"},
        {"after", true, "the profile or trace after the change"}},
       {FailIfSlowerFlagSpec(), JobDriftFlagSpec(), kRankFlag, kJsonFlag},
       ParseCompare,
       "fail-if-slower",
       RunCompareGate},
      {ReaderId::kWhatIf,
       "estimate the gain of removing a kernel category or launches",
       "Estimates the step time after removing a kernel category's GPU time or some kernel\n"
       "launches, before writing the change. Below 80% GPU utilisation the saving is\n"
       "launches removed x measured host cost per launch; above it, the GPU work removed.\n"
       "Exactly one option is required.",
       {kTraceArg},
       {{"remove-category", "C", "", "remove the kernels of categories containing C"},
        {"remove-launches", "N", "", "remove N kernel launches per step"},
        kJsonFlag},
       ParseWhatIf},
      {ReaderId::kLatency,
       "an inference profile's per-iteration latency: percentiles, histogram, slowest",
       "The distribution of an inference profile's per-iteration latency: the recorded n,\n"
       "p50/p90/p99, mean, min and max (as stored: the numbers summary and get print), and\n"
       "from the per-iteration samples (latency.samples_ms; a repeat profile holds every\n"
       "trial's) their standard deviation, a histogram of equal-width buckets between the\n"
       "fastest and the slowest sample, and the slowest iterations with their index. A\n"
       "profile with percentiles only (the Python LibreYOLO's) shows the percentiles; a\n"
       "training profile or a trace has no latency (exit 2).",
       {kTraceArg},
       {{"buckets", "N", absl::StrCat(kDefaultLatencyBuckets),
         absl::StrCat("the histogram's buckets (1..", kMaxLatencyBuckets, ")")},
        {"slowest", "K", absl::StrCat(kDefaultLatencySlowest),
         absl::StrCat("list the K slowest samples (0..", kMaxLatencySlowest, "; 0 = none)")},
        kJsonFlag},
       ParseLatency},
  };
  return *table;
}

}  // namespace

const std::vector<ReaderCommand>& ReaderCommands() {
  static const auto* commands = [] {
    auto* c = new std::vector<ReaderCommand>;
    for (const ReaderFlags& r : ReaderFlagTable()) {
      CommandSpec spec{Reader(r.id).name, r.summary, r.description, r.positionals, r.flags};
      // Every reader can read `job:<id>` from a daemon, so each takes the connection flags.
      for (const FlagSpec& f : RemoteFlagSpecs()) spec.flags.push_back(f);
      c->push_back({std::move(spec), [&r](const ParsedArgs& a, std::ostream& o, std::ostream& e) {
                      if (r.instead != nullptr && a.Value(r.instead_flag))
                        return r.instead(a, o, e);
                      return Execute(r, a, o, e);
                    }});
    }
    c->push_back({ReportCommandSpec(), RunReport});
    return c;
  }();
  return *commands;
}

}  // namespace libreyolo::cli
