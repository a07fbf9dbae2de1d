#include "common/readers/run_reader.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/analysis/compare.h"
#include "common/load/load_profile.h"
#include "common/readers/compare_view.h"
#include "common/readers/get_view.h"
#include "common/readers/modules_view.h"
#include "common/readers/phases_view.h"
#include "common/readers/ranks_view.h"
#include "common/readers/summary_view.h"
#include "common/readers/what_if_view.h"
#include "common/render/terminal_text.h"
#include "common/trace/trace_reader.h"

namespace libreyolo {
namespace {

template <typename View>
ReaderOutput Render(const View& v, std::string (*text)(const View&),
                    std::string (*json)(const View&)) {
  return ReaderOutput{text(v), json(v)};
}

// A folder of per-rank traces: `summary DIR` is the cross-rank view; `--rank k` reads rank k's
// trace through the ordinary single-trace path.
absl::StatusOr<ReaderOutput> RunFolderReader(ReaderInvocation in, const ProfileLoader& load) {
  const std::string dir = in.inputs[0];
  if (!IsDirectory(dir)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--rank reads a folder of per-rank traces, and ", dir, " is not a folder"));
  }
  if (in.reader == "compare") {
    return absl::InvalidArgumentError("compare reads two profiles, not a folder of rank traces");
  }
  if (in.rank) {
    auto path = RankTracePath(dir, *in.rank);
    if (!path.ok()) return path.status();
    if (in.labels.empty()) in.labels = {absl::StrCat(*path, " (rank ", *in.rank, ")")};
    in.inputs[0] = *path;
    in.rank.reset();
    in.read_folders = false;
    return RunReader(in, load);
  }
  if (in.reader != "summary") {
    return absl::InvalidArgumentError(absl::StrCat(
        in.reader, " reads one rank's trace: add --rank K to read rank K of ", dir,
        " (summary DIR gives the cross-rank view)"));
  }
  auto v = BuildRanksView(dir);
  if (!v.ok()) return v.status();
  return ReaderOutput{RenderRanksText(*v), RenderRanksJson(*v)};
}

absl::StatusOr<TraceInput> LocalTrace(const std::string& input, const Profile& p) {
  std::string why_not;
  const std::optional<std::string> trace = ProfileTracePath(input, p, &why_not);
  if (!trace) {
    return absl::FailedPreconditionError(
        absl::StrCat("modules reads the Chrome trace, and ", why_not));
  }
  return TraceInput{*trace, *trace};
}

}  // namespace

absl::StatusOr<Profile> LoadReaderInput(const ProfileLoader& load, const std::string& input) {
  auto p = load(input);
  if (p.ok()) return p;
  switch (p.status().code()) {
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kPermissionDenied:
    case absl::StatusCode::kUnauthenticated:
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
      return p.status();
    default:
      return absl::DataLossError(p.status().message());
  }
}

const std::vector<std::string>& ReaderNames() {
  static const auto* names = new std::vector<std::string>{
      "summary", "get", "phases", "kernels", "ops", "modules", "compare", "what-if"};
  return *names;
}

absl::StatusOr<ReaderOutput> RunReader(const ReaderInvocation& in, const ProfileLoader& load,
                                       const TraceLocator& locate) {
  const size_t want = in.reader == "compare" ? 2 : 1;
  if (in.inputs.size() != want) {
    return absl::InvalidArgumentError(
        absl::StrCat(in.reader, " reads ", want, " profile", want == 1 ? "" : "s", ", got ",
                     in.inputs.size()));
  }
  auto label = [&](size_t i) -> const std::string& {
    return i < in.labels.size() ? in.labels[i] : in.inputs[i];
  };
  if (in.reader == "what-if" &&
      in.what_if.remove_category.has_value() == in.what_if.remove_launches.has_value()) {
    return absl::InvalidArgumentError(
        "give exactly one of --remove-category C or --remove-launches N "
        "(e.g. --remove-category layout)");
  }
  if (in.read_folders && (in.rank || IsDirectory(in.inputs[0]))) return RunFolderReader(in, load);
  if (in.rank) return absl::InvalidArgumentError("--rank reads a folder of per-rank traces");
  auto p = LoadReaderInput(load, in.inputs[0]);
  if (!p.ok()) return p.status();

  if (in.reader == "summary") {
    return Render(BuildSummary(*p, label(0)), RenderSummaryText, RenderSummaryJson);
  }
  if (in.reader == "get") {
    auto v = BuildGet(*p, in.field, label(0));
    if (!v.ok()) return v.status();
    return Render(*v, RenderGetText, RenderGetJson);
  }
  if (in.reader == "phases") {
    return Render(BuildPhases(*p, label(0)), RenderPhasesText, RenderPhasesJson);
  }
  if (in.reader == "kernels") {
    auto v = BuildKernels(*p, in.kernels, label(0));
    if (!v.ok()) return v.status();
    return Render(*v, RenderKernelsText, RenderKernelsJson);
  }
  if (in.reader == "ops") {
    auto v = BuildOps(*p, in.ops, label(0));
    if (!v.ok()) return v.status();
    return Render(*v, RenderOpsText, RenderOpsJson);
  }
  if (in.reader == "modules") {
    auto trace = locate ? locate(in.inputs[0], *p) : LocalTrace(in.inputs[0], *p);
    if (!trace.ok()) return trace.status();
    auto data = ReadTraceFile(trace->path);
    if (!data.ok()) {
      return absl::DataLossError(
          absl::StrCat("cannot read the trace ", trace->label, ": ", data.status().message()));
    }
    auto v = BuildModules(*data, in.modules, label(0), trace->label);
    if (!v.ok()) return v.status();
    return Render(*v, RenderModulesText, RenderModulesJson);
  }
  if (in.reader == "compare") {
    auto after = LoadReaderInput(load, in.inputs[1]);
    if (!after.ok()) return after.status();
    const CompareResult r = Compare(*p, *after, label(0), label(1));
    return Render(r, RenderCompareText, RenderCompareJson);
  }
  if (in.reader == "what-if") {
    auto r = WhatIf(*p, in.what_if);
    if (!r.ok()) return r.status();
    if (r->trace.empty()) r->trace = label(0);
    return Render(*r, RenderWhatIfText, RenderWhatIfJson);
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown reader '", Excerpt(in.reader), "'"));
}

}  // namespace libreyolo
