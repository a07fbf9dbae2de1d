#include "client/commands/reader_commands.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "client/cli/exit_codes.h"
#include "common/analysis/compare.h"
#include "common/analysis/what_if.h"
#include "common/load/load_profile.h"
#include "common/readers/compare_view.h"
#include "common/readers/get_view.h"
#include "common/readers/kernels_view.h"
#include "common/readers/ops_view.h"
#include "common/readers/phases_view.h"
#include "common/readers/summary_view.h"
#include "common/readers/what_if_view.h"

namespace libreyolo::cli {
namespace {

const PositionalSpec kTraceArg{
    "trace", true,
    "profile.json, profile_repeat.json, profile_trace.json or any PyTorch/Kineto Chrome trace "
    "(.json or .json.gz)"};
const FlagSpec kJsonFlag{"json", "", "", "print JSON instead of text"};

int Fail(std::ostream& err, const std::string& cmd, int code, const std::string& msg) {
  err << "libreyolo profile " << cmd << ": error: " << msg << "\n";
  return code;
}

// Loads a reader's input; on failure prints the error and sets the exit code.
std::optional<Profile> Load(const std::string& cmd, const std::string& path, std::ostream& err,
                            int* code) {
  if (absl::StartsWith(path, "job:")) {
    *code = Fail(err, cmd, kExitUsage,
                 absl::StrCat("'", path, "' names a profile stored on a libreyolod daemon; this "
                              "build reads local files only. Download the job's profile.json and "
                              "pass its path."));
    return std::nullopt;
  }
  auto p = LoadProfile(path);
  if (!p.ok()) {
    const bool missing = absl::IsNotFound(p.status()) || absl::IsPermissionDenied(p.status());
    *code = Fail(err, cmd, missing ? kExitUsage : kExitAnalysisFailed,
                 std::string(p.status().message()));
    return std::nullopt;
  }
  return *std::move(p);
}

int Emit(std::ostream& out, const std::string& text) {
  out << text;
  out.flush();
  return kExitOk;
}

int RunSummary(const ParsedArgs& a, std::ostream& out, std::ostream& err) {
  int code = kExitOk;
  const std::string& path = a.positionals[0];
  auto p = Load("summary", path, err, &code);
  if (!p) return code;
  const SummaryView v = BuildSummary(*p, path);
  return Emit(out, a.Switch("json") ? RenderSummaryJson(v) : RenderSummaryText(v));
}

int RunGet(const ParsedArgs& a, std::ostream& out, std::ostream& err) {
  int code = kExitOk;
  const std::string& path = a.positionals[0];
  auto p = Load("get", path, err, &code);
  if (!p) return code;
  std::optional<std::string> field;
  if (a.positionals.size() > 1) field = a.positionals[1];
  auto v = BuildGet(*p, field, path);
  if (!v.ok()) return Fail(err, "get", kExitUsage, std::string(v.status().message()));
  return Emit(out, a.Switch("json") ? RenderGetJson(*v) : RenderGetText(*v));
}

int RunPhases(const ParsedArgs& a, std::ostream& out, std::ostream& err) {
  int code = kExitOk;
  const std::string& path = a.positionals[0];
  auto p = Load("phases", path, err, &code);
  if (!p) return code;
  const PhasesView v = BuildPhases(*p, path);
  return Emit(out, a.Switch("json") ? RenderPhasesJson(v) : RenderPhasesText(v));
}

int RunKernels(const ParsedArgs& a, std::ostream& out, std::ostream& err) {
  KernelsOptions o;
  if (auto top = a.Value("top")) {
    auto n = ParseIntFlag("top", *top);
    if (!n.ok()) return Fail(err, "kernels", kExitUsage, std::string(n.status().message()));
    o.top = *n;
  }
  o.category = a.Value("category");
  o.grep = a.Value("grep");
  o.tensorcore_only = a.Switch("tensorcore");
  o.sort = a.ValueOr("sort", "time");
  o.phase = a.Value("phase");
  int code = kExitOk;
  const std::string& path = a.positionals[0];
  auto p = Load("kernels", path, err, &code);
  if (!p) return code;
  auto v = BuildKernels(*p, o, path);
  if (!v.ok()) return Fail(err, "kernels", kExitUsage, std::string(v.status().message()));
  return Emit(out, a.Switch("json") ? RenderKernelsJson(*v) : RenderKernelsText(*v));
}

int RunOps(const ParsedArgs& a, std::ostream& out, std::ostream& err) {
  OpsOptions o;
  if (auto top = a.Value("top")) {
    auto n = ParseIntFlag("top", *top);
    if (!n.ok()) return Fail(err, "ops", kExitUsage, std::string(n.status().message()));
    o.top = *n;
  }
  o.phase = a.Value("phase");
  o.sort = a.ValueOr("sort", "cpu_time_total");
  o.group_by_input_shape = a.Switch("group-by-input-shape");
  int code = kExitOk;
  const std::string& path = a.positionals[0];
  auto p = Load("ops", path, err, &code);
  if (!p) return code;
  auto v = BuildOps(*p, o, path);
  if (!v.ok()) return Fail(err, "ops", kExitUsage, std::string(v.status().message()));
  return Emit(out, a.Switch("json") ? RenderOpsJson(*v) : RenderOpsText(*v));
}

int RunCompare(const ParsedArgs& a, std::ostream& out, std::ostream& err) {
  int code = kExitOk;
  auto before = Load("compare", a.positionals[0], err, &code);
  if (!before) return code;
  auto after = Load("compare", a.positionals[1], err, &code);
  if (!after) return code;
  const CompareResult r = Compare(*before, *after, a.positionals[0], a.positionals[1]);
  return Emit(out, a.Switch("json") ? RenderCompareJson(r) : RenderCompareText(r));
}

int RunWhatIf(const ParsedArgs& a, std::ostream& out, std::ostream& err) {
  WhatIfRequest req;
  req.remove_category = a.Value("remove-category");
  if (auto n = a.Value("remove-launches")) {
    auto v = ParseDoubleFlag("remove-launches", *n);
    if (!v.ok()) return Fail(err, "what-if", kExitUsage, std::string(v.status().message()));
    req.remove_launches = *v;
  }
  if (req.remove_category.has_value() == req.remove_launches.has_value()) {
    return Fail(err, "what-if", kExitUsage,
                "give exactly one of --remove-category C or --remove-launches N "
                "(e.g. --remove-category layout)");
  }
  int code = kExitOk;
  auto p = Load("what-if", a.positionals[0], err, &code);
  if (!p) return code;
  auto r = WhatIf(*p, req);
  if (!r.ok()) return Fail(err, "what-if", kExitUsage, std::string(r.status().message()));
  if (r->trace.empty()) r->trace = a.positionals[0];
  return Emit(out, a.Switch("json") ? RenderWhatIfJson(*r) : RenderWhatIfText(*r));
}

std::string SortKeysText() { return absl::StrJoin(OpSortKeys(), "|"); }

}  // namespace

const std::vector<ReaderCommand>& ReaderCommands() {
  static const auto* commands = new std::vector<ReaderCommand>{
      {{"summary",
        "step time, throughput, GPU utilisation, host overhead and the bottleneck verdict",
        "Shows the headline numbers of a profile, verdict first: step time, throughput, GPU\n"
        "utilisation, Tensor Core share, peak VRAM, host overhead, launches per step, kernel\n"
        "composition by category and the top kernels; for inference profiles also latency\n"
        "percentiles and stage shares. A profile taken under memory pressure is flagged.",
        {kTraceArg},
        {kJsonFlag}},
       RunSummary},
      {{"get", "one metric and nothing else (no field: list the metrics)",
        "Prints one metric's value and nothing else, for scripts. Without a field it lists\n"
        "every metric with its value. An unknown field exits 2.",
        {kTraceArg, {"field", false, "metric name, e.g. step_ms, gpu_util, forward_gpu_ms"}},
        {kJsonFlag}},
       RunGet},
      {{"phases", "GPU ms, wall ms, kernels and ops per phase (forward, backward, ...)",
        "Per phase (dataload, to_device, forward, backward, optimizer; preprocess and\n"
        "postprocess for inference): GPU ms, wall ms, kernel count and op count per step.\n"
        "Kernels are attributed through their launch's correlation id.",
        {kTraceArg},
        {kJsonFlag}},
       RunPhases},
      {{"kernels", "individual GPU kernels: share of GPU time, ms and calls per step",
        "Lists GPU kernels with their share of GPU time, ms per step, calls per step, Tensor\n"
        "Core use and category.",
        {kTraceArg},
        {{"top", "N", "20", "show the first N kernels (0 = all)"},
         {"category", "C", "", "keep categories containing C (gemm, layout, norm, elementwise, "
                               "communication, other)"},
         {"grep", "REGEX", "", "keep kernels whose name matches REGEX (case-insensitive)"},
         {"tensorcore", "", "", "keep only Tensor Core kernels"},
         {"sort", "KEY", "time", "order by time, count or name"},
         {"phase", "P", "", "only kernels launched in phase P (unknown P exits 2)"},
         kJsonFlag}},
       RunKernels},
      {{"ops", "framework ops ranked by CPU time (the key_averages table)",
        "The framework view: aten and autograd ops ranked by CPU time, with self CPU time,\n"
        "calls, memory and FLOPs columns where the profile has them, and the \"Self CPU time\n"
        "total\" footer. This is where host cost shows.",
        {kTraceArg},
        {{"top", "N", "20", "show the first N ops (0 = all)"},
         {"phase", "P", "", "only ops run in phase P (unknown P exits 2)"},
         {"sort", "KEY", "cpu_time_total", SortKeysText()},
         {"group-by-input-shape", "", "", "one row per (op, input shapes); needs shapes"},
         kJsonFlag}},
       RunOps},
      {{"compare", "deltas between two profiles, with a significance call",
        "Deltas in throughput, ms per image, GPU utilisation, host overhead, launches per step\n"
        "and the verdict. With n >= 2 trials on both sides (profile_repeat.json), a difference\n"
        "in img/s is significant when it exceeds twice the combined standard error.",
        {{"before", true, "the baseline profile or trace"},
         {"after", true, "the profile or trace after the change"}},
        {kJsonFlag}},
       RunCompare},
      {{"what-if", "estimate the gain of removing a kernel category or launches",
        "Estimates the step time after removing a kernel category's GPU time or some kernel\n"
        "launches, before writing the change. Below 80% GPU utilisation the saving is\n"
        "launches removed x measured host cost per launch; above it, the GPU work removed.\n"
        "Exactly one option is required.",
        {kTraceArg},
        {{"remove-category", "C", "", "remove the kernels of categories containing C"},
         {"remove-launches", "N", "", "remove N kernel launches per step"},
         kJsonFlag}},
       RunWhatIf},
  };
  return *commands;
}

}  // namespace libreyolo::cli
