#include "common/readers/run_reader.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/analysis/compare.h"
#include "common/load/load_profile.h"
#include "common/readers/compare_view.h"
#include "common/readers/get_view.h"
#include "common/readers/latency_view.h"
#include "common/readers/modules_view.h"
#include "common/readers/phases_view.h"
#include "common/readers/ranks_view.h"
#include "common/readers/summary_view.h"
#include "common/readers/what_if_view.h"
#include "common/status/status_macros.h"
#include "common/trace/trace_reader.h"

namespace libreyolo {
namespace {

template <typename View>
ReaderOutput Render(const View& v, std::string (*text)(const View&),
                    std::string (*json)(const View&)) {
  return ReaderOutput{text(v), json(v)};
}

template <typename View>
absl::StatusOr<ReaderOutput> Render(const absl::StatusOr<View>& v, std::string (*text)(const View&),
                                    std::string (*json)(const View&)) {
  if (!v.ok()) return v.status();
  return Render(*v, text, json);
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

// The readers' rows: each builds its view from the loaded profiles and renders it.
absl::StatusOr<ReaderOutput> ReadSummary(const ReaderCall& c) {
  return Render(BuildSummary(c.profiles[0], c.labels[0]), RenderSummaryText, RenderSummaryJson);
}

absl::StatusOr<ReaderOutput> ReadGet(const ReaderCall& c) {
  return Render(BuildGet(c.profiles[0], c.invocation.field, c.labels[0]), RenderGetText,
                RenderGetJson);
}

absl::StatusOr<ReaderOutput> ReadPhases(const ReaderCall& c) {
  return Render(BuildPhases(c.profiles[0], c.labels[0]), RenderPhasesText, RenderPhasesJson);
}

absl::StatusOr<ReaderOutput> ReadKernels(const ReaderCall& c) {
  return Render(BuildKernels(c.profiles[0], c.invocation.kernels, c.labels[0]), RenderKernelsText,
                RenderKernelsJson);
}

absl::StatusOr<ReaderOutput> ReadOps(const ReaderCall& c) {
  return Render(BuildOps(c.profiles[0], c.invocation.ops, c.labels[0]), RenderOpsText,
                RenderOpsJson);
}

absl::StatusOr<ReaderOutput> ReadModules(const ReaderCall& c) {
  const std::string& input = c.invocation.inputs[0];
  ASSIGN_OR_RETURN(auto trace,
                   c.locate ? c.locate(input, c.profiles[0]) : LocalTrace(input, c.profiles[0]));
  auto data = ReadTraceFile(trace.path);
  if (!data.ok()) {
    return absl::DataLossError(
        absl::StrCat("cannot read the trace ", trace.label, ": ", data.status().message()));
  }
  return Render(BuildModules(*data, c.invocation.modules, c.labels[0], trace.label),
                RenderModulesText, RenderModulesJson);
}

absl::StatusOr<ReaderOutput> ReadCompare(const ReaderCall& c) {
  return Render(Compare(c.profiles[0], c.profiles[1], c.labels[0], c.labels[1]), RenderCompareText,
                RenderCompareJson);
}

absl::Status CheckWhatIf(const ReaderInvocation& in) {
  if (in.what_if.remove_category.has_value() != in.what_if.remove_launches.has_value()) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      "give exactly one of --remove-category C or --remove-launches N "
      "(e.g. --remove-category layout)");
}

absl::StatusOr<ReaderOutput> ReadWhatIf(const ReaderCall& c) {
  ASSIGN_OR_RETURN(auto r, WhatIf(c.profiles[0], c.invocation.what_if));
  if (r.trace.empty()) r.trace = c.labels[0];
  return Render(r, RenderWhatIfText, RenderWhatIfJson);
}

absl::Status CheckLatency(const ReaderInvocation& in) { return CheckLatencyOptions(in.latency); }

absl::StatusOr<ReaderOutput> ReadLatency(const ReaderCall& c) {
  return Render(BuildLatency(c.profiles[0], c.invocation.latency, c.labels[0]), RenderLatencyText,
                RenderLatencyJson);
}

// Folders of per-rank traces: `summary DIR` is the cross-rank view, `compare DIR DIR` compares
// two runs' views; with `--rank k`, any reader reads rank k's trace of each folder through the
// ordinary single-trace path.
absl::StatusOr<ReaderOutput> RunFolderReader(ReaderInvocation in, const ProfileLoader& load) {
  const ReaderDef& def = Reader(in.reader);
  for (const std::string& input : in.inputs) {
    if (IsDirectory(input)) continue;
    return absl::InvalidArgumentError(
        in.rank ? absl::StrCat("--rank reads a folder of per-rank traces, and ", input,
                               " is not a folder")
                : absl::StrCat(def.name,
                               " reads two folders of per-rank traces or two "
                               "profiles, and ",
                               input, " is not a folder"));
  }
  if (in.rank) {
    const bool named = !in.labels.empty();
    for (size_t i = 0; i < in.inputs.size(); ++i) {
      ASSIGN_OR_RETURN(auto path, RankTracePath(in.inputs[i], *in.rank));
      if (!named) in.labels.push_back(absl::StrCat(path, " (rank ", *in.rank, ")"));
      in.inputs[i] = path;
    }
    in.rank.reset();
    in.read_folders = false;
    return RunReader(in, load);
  }
  if (in.reader == ReaderId::kCompare) {
    ASSIGN_OR_RETURN(auto before, BuildRanksView(in.inputs[0]));
    ASSIGN_OR_RETURN(auto after, BuildRanksView(in.inputs[1]));
    return Render(CompareRanks(before, after), RenderCompareText, RenderCompareJson);
  }
  if (in.reader != ReaderId::kSummary) {
    return absl::InvalidArgumentError(absl::StrCat(
        def.name, " reads one rank's trace: add --rank K to read rank K of ", in.inputs[0],
        " (summary DIR gives the cross-rank view, compare DIR DIR compares two runs)"));
  }
  ASSIGN_OR_RETURN(auto v, BuildRanksView(in.inputs[0]));
  return ReaderOutput{RenderRanksText(v), RenderRanksJson(v)};
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

const std::vector<ReaderDef>& Readers() {
  static const auto* readers = new std::vector<ReaderDef>{
      {ReaderId::kSummary, "summary", 1, nullptr, ReadSummary},
      {ReaderId::kGet, "get", 1, nullptr, ReadGet},
      {ReaderId::kPhases, "phases", 1, nullptr, ReadPhases},
      {ReaderId::kKernels, "kernels", 1, nullptr, ReadKernels},
      {ReaderId::kOps, "ops", 1, nullptr, ReadOps},
      {ReaderId::kModules, "modules", 1, nullptr, ReadModules},
      {ReaderId::kCompare, "compare", 2, nullptr, ReadCompare},
      {ReaderId::kWhatIf, "what-if", 1, CheckWhatIf, ReadWhatIf},
      {ReaderId::kLatency, "latency", 1, CheckLatency, ReadLatency},
  };
  return *readers;
}

const ReaderDef& Reader(ReaderId id) { return Readers()[static_cast<size_t>(id)]; }

const ReaderDef* FindReader(std::string_view name) {
  for (const ReaderDef& d : Readers()) {
    if (name == d.name) return &d;
  }
  return nullptr;
}

absl::StatusOr<ReaderOutput> RunReader(const ReaderInvocation& in, const ProfileLoader& load,
                                       const TraceLocator& locate) {
  const ReaderDef& def = Reader(in.reader);
  if (in.inputs.size() != def.inputs) {
    return absl::InvalidArgumentError(absl::StrCat(def.name, " reads ", def.inputs, " profile",
                                                   def.inputs == 1 ? "" : "s", ", got ",
                                                   in.inputs.size()));
  }
  if (def.check != nullptr) {
    RETURN_IF_ERROR(def.check(in));
  }
  if (in.read_folders &&
      (in.rank || std::any_of(in.inputs.begin(), in.inputs.end(), IsDirectory))) {
    return RunFolderReader(in, load);
  }
  if (in.rank) return absl::InvalidArgumentError("--rank reads a folder of per-rank traces");
  std::vector<Profile> profiles;
  std::vector<std::string> labels;
  for (size_t i = 0; i < in.inputs.size(); ++i) {
    ASSIGN_OR_RETURN(auto p, LoadReaderInput(load, in.inputs[i]));
    profiles.push_back(std::move(p));
    labels.push_back(i < in.labels.size() ? in.labels[i] : in.inputs[i]);
  }
  return def.read(ReaderCall{in, profiles, labels, locate});
}

}  // namespace libreyolo
