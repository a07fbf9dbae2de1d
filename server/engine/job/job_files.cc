#include "server/engine/job/job_files.h"

#include <chrono>
#include <cstdio>
#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/io/atomic_file.h"
#include "common/load/load_profile.h"
#include "common/profile/profile_json.h"
#include "common/report/report_html.h"
#include "common/report/report_input.h"
#include "common/trace/trace_analyser.h"

namespace libreyolo::engine {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

}  // namespace

std::string JobFiles::Recorded(const std::string& path) const {
  if (!relative || project.empty()) return path;
  const std::string prefix = project.back() == '/' ? project : project + "/";
  return absl::StartsWith(path, prefix) ? path.substr(prefix.size()) : path;
}

JobFiles JobFilesFor(const std::string& project, const std::string& kind,
                     const JobOutputOptions& output, int64_t rank) {
  const fs::path dir =
      rank >= 0 ? fs::path(project) / kind / absl::StrCat("rank", rank) : fs::path(project) / kind;
  JobFiles f;
  f.project = project;
  f.dir = dir.string();
  f.profile = (dir / "profile.json").string();
  f.trace = (dir / "profile_trace.json").string();
  f.repeat = ((rank >= 0 ? dir : fs::path(project)) / "profile_repeat.json").string();
  f.report = (dir / "report.html").string();
  f.metrics = (dir / "metrics.jsonl").string();
  f.relative = output.paths_relative_to_project;
  return f;
}

absl::Status CreateJobDir(const JobFiles& files) {
  std::error_code ec;
  fs::create_directories(files.dir, ec);
  if (ec) {
    return absl::UnavailableError(
        absl::StrCat("cannot create ", files.dir, ": ", ec.message(), " (check --project)"));
  }
  return absl::OkStatus();
}

absl::Status WriteTraceAtomically(const CollectedTrace& trace, const std::string& path,
                                  const TraceExportOptions& options, TraceData* in_memory) {
  const std::string tmp = TempPathBeside(path);
  TraceExportOptions named = options;
  if (named.trace_name.empty()) named.trace_name = fs::path(path).filename().string();
  absl::Status exported;
  if (in_memory != nullptr) {
    auto data = ExportChromeTraceAndData(trace, tmp, named);
    if (data.ok()) *in_memory = *std::move(data);
    exported = data.status();
  } else {
    exported = ExportChromeTrace(trace, tmp, named);
  }
  if (!exported.ok()) {
    std::remove(tmp.c_str());
    return exported;
  }
  return PublishTempFile(tmp, path);
}

absl::StatusOr<AnalysedTrace> WriteAndAnalyseTrace(const CollectedTrace& trace,
                                                   const std::string& path,
                                                   const TraceExportOptions& options,
                                                   const JobOutputOptions& output,
                                                   PostWindowTimes* times) {
  const auto t0 = Clock::now();
  AnalysedTrace out;
  if (output.analyse_from_files) {
    if (auto s = WriteTraceAtomically(trace, path, options); !s.ok()) return s;
    auto analysed = AnalyseTraceFile(path);
    if (!analysed.ok()) return analysed.status();
    out.profile = *std::move(analysed);
  } else {
    TraceData data;
    if (auto s = WriteTraceAtomically(trace, path, options, &data); !s.ok()) return s;
    if (!output.report_label.empty()) {
      // The report's timeline and layers are drawn before the analyser drops the events
      // outside the window (it takes them by value).
      out.timeline = BuildTimeline(data);
      out.layers = BuildModuleTable(data).rows;
    }
    out.profile = AnalyseTrace(std::move(data));
  }
  times->trace_ms += MsSince(t0);
  return out;
}

absl::Status WriteJobOutputs(const Profile& p, const JobFiles& files,
                             const JobOutputOptions& output, const AnalysedTrace* window,
                             bool repeat, JobResult* result) {
  const auto t0 = Clock::now();
  Profile recorded = p;
  if (recorded.trace && !recorded.trace->empty()) recorded.trace = files.Recorded(*recorded.trace);
  const std::string json = WriteProfileJson(recorded);
  if (auto s = WriteFileAtomically(files.profile, json); !s.ok()) return s;
  result->profile_path = files.profile;
  if (repeat) {
    if (auto s = WriteFileAtomically(files.repeat, json); !s.ok()) return s;
    result->repeat_path = files.repeat;
  }
  if (!output.report_label.empty()) {
    absl::StatusOr<std::string> html;
    if (output.analyse_from_files || window == nullptr) {
      html = RenderReportFiles({files.profile}, {output.report_label});
    } else {
      // The profile as the readers load it (the same numbers as `summary --json`), from the
      // JSON just written; the trace's charts from the events in memory.
      auto loaded = ReadProfileJson(json, files.profile);
      if (loaded.ok()) {
        ReportInput in;
        in.label = output.report_label;
        in.profile = *std::move(loaded);
        in.timeline = window->timeline;
        in.layers = window->layers;
        if (in.timeline) {
          in.trace_path = files.Recorded(files.trace);
        } else {
          // Why there is no timeline, in the readers' words.
          (void)ProfileTracePath(files.profile, in.profile, &in.timeline_note);
        }
        html = RenderReportHtml(in);
      } else {
        html = loaded.status();
      }
    }
    if (html.ok() && WriteFileAtomically(files.report, *html).ok()) {
      result->report_path = files.report;
    }
  }
  result->post_window.outputs_ms += MsSince(t0);
  return absl::OkStatus();
}

}  // namespace libreyolo::engine
