#include "common/report/report_input.h"

#include <filesystem>
#include <system_error>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/trace/trace_reader.h"

namespace libreyolo {
namespace {

namespace fs = std::filesystem;

bool IsFile(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

std::optional<std::string> FindTrace(const std::string& input, const std::string& trace) {
  const fs::path t(trace);
  if (t.is_absolute()) return IsFile(t) ? std::optional<std::string>(trace) : std::nullopt;
  const fs::path dir = fs::path(input).parent_path();
  const std::vector<fs::path> candidates = {dir / t, dir / t.filename(), t};
  for (const fs::path& c : candidates) {
    if (!c.empty() && IsFile(c)) return c.string();
  }
  return std::nullopt;
}

}  // namespace

absl::StatusOr<ReportInput> LoadReportInput(const std::string& input, const std::string& label,
                                            const ProfileLoader& load) {
  auto p = LoadReaderInput(load, input);
  if (!p.ok()) return p.status();
  ReportInput r;
  r.label = label;
  r.profile = *std::move(p);
  std::optional<std::string> trace;
  if (r.profile.source_kind == "trace") {
    trace = input;
  } else if (!r.profile.trace.has_value() || r.profile.trace->empty()) {
    r.timeline_note = "the profile names no Chrome trace, so there is no time axis to draw";
  } else {
    trace = FindTrace(input, *r.profile.trace);
    if (!trace) {
      r.timeline_note = absl::StrCat("the profile's trace (", *r.profile.trace,
                                     ") is not next to it; keep profile_trace.json beside "
                                     "profile.json to get the timeline charts");
    }
  }
  if (trace) {
    auto data = ReadTraceFile(*trace);
    if (data.ok()) {
      r.timeline = BuildTimeline(*data);
      r.layers = BuildLayerTable(*data);
      r.trace_path = *trace;
    } else {
      r.timeline_note =
          absl::StrCat("the trace ", *trace, " cannot be read: ", data.status().message());
    }
  }
  return r;
}

}  // namespace libreyolo
