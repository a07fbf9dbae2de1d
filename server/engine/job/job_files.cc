#include "server/engine/job/job_files.h"

#include <chrono>
#include <cstdio>
#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/analysis/profile_json_write.h"
#include "common/analysis/trace_analyser.h"
#include "common/io/atomic_file.h"
#include "common/io/rank_artifacts.h"
#include "common/io/trial_artifacts.h"
#include "common/load/load_profile.h"
#include "common/profile/profile_json.h"
#include "common/report/report_html.h"
#include "common/report/report_input.h"
#include "common/status/status_macros.h"

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

std::string JobFiles::RecordedFromTrial(const std::string& path) const {
  const std::string recorded = Recorded(path);
  return fs::path(recorded).is_relative() ? (fs::path("..") / recorded).string() : recorded;
}

JobFiles JobFilesFor(const std::string& project, const std::string& kind,
                     const JobOutputOptions& output, int64_t rank, int64_t repeat) {
  const bool trials = rank < 0 && repeat >= 2;
  fs::path dir = fs::path(project) / kind;
  if (rank >= 0) dir /= absl::StrCat("rank", rank);
  if (trials) dir = fs::path(project) / TrialFolderName(kind, repeat - 1);
  JobFiles f;
  f.project = project;
  f.dir = dir.string();
  f.profile = (dir / kProfileFileName).string();
  f.trace = (dir / kTraceFileName).string();
  if (trials) {
    f.repeat = (fs::path(project) / RepeatFileName(kind)).string();
    for (int64_t t = 0; t + 1 < repeat; ++t) {
      f.trial_profiles.push_back(
          (fs::path(project) / TrialFolderName(kind, t) / kProfileFileName).string());
    }
  } else if (rank >= 0) {
    f.repeat = (dir / kRunRepeatFileName).string();
  } else {
    f.repeat = (dir.parent_path() / RepeatFileName(kind)).string();
  }
  f.report = (dir / "report.html").string();
  f.metrics = (dir / "metrics.jsonl").string();
  f.relative = output.paths_relative_to_project;
  return f;
}

absl::Status CreateJobDir(const JobFiles& files) {
  std::vector<std::string> dirs = {files.dir};
  for (const std::string& t : files.trial_profiles) dirs.push_back(fs::path(t).parent_path());
  for (const std::string& d : dirs) {
    std::error_code ec;
    fs::create_directories(d, ec);
    if (ec) {
      return absl::UnavailableError(
          absl::StrCat("cannot create ", d, ": ", ec.message(), " (check --project)"));
    }
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
    RETURN_IF_ERROR(WriteTraceAtomically(trace, path, options));
    ASSIGN_OR_RETURN(auto analysed, AnalyseTraceFile(path));
    out.profile = std::move(analysed);
  } else {
    TraceData data;
    RETURN_IF_ERROR(WriteTraceAtomically(trace, path, options, &data));
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

namespace {

// The Python tool's trial files: each earlier trial's profile.json in its own folder (its trace
// named from there), the final trial's as the job's profile.json.
absl::Status WriteTrialProfiles(const JobFiles& files, const std::vector<Profile>& trials) {
  if (trials.size() != files.trial_profiles.size() + 1) {
    return absl::InternalError(absl::StrCat("the job measured ", trials.size(),
                                            " trials for a layout of ",
                                            files.trial_profiles.size() + 1));
  }
  for (size_t t = 0; t < trials.size(); ++t) {
    const bool last = t + 1 == trials.size();
    Profile recorded = trials[t];
    if (recorded.trace && !recorded.trace->empty()) {
      recorded.trace = last ? files.Recorded(*recorded.trace)
                            : files.RecordedFromTrial(*recorded.trace);
    }
    const std::string& path = last ? files.profile : files.trial_profiles[t];
    RETURN_IF_ERROR(WriteFileAtomically(path, WriteProfileJson(recorded)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status WriteJobOutputs(const Profile& p, const JobFiles& files,
                             const JobOutputOptions& output, const AnalysedTrace* window,
                             bool repeat, JobResult* result, const std::vector<Profile>& trials) {
  const auto t0 = Clock::now();
  const bool trial_layout = repeat && files.trial_layout();
  Profile recorded = p;
  if (recorded.trace && !recorded.trace->empty()) recorded.trace = files.Recorded(*recorded.trace);
  if (trial_layout) {
    // The aggregate names its trials as the Python tool's does (aggregation.profiles).
    for (const std::string& t : files.trial_profiles) {
      recorded.repeat.profiles.push_back(files.Recorded(t));
    }
    recorded.repeat.profiles.push_back(files.Recorded(files.profile));
  }
  const std::string json = WriteProfileJson(recorded);
  if (trial_layout) {
    RETURN_IF_ERROR(WriteTrialProfiles(files, trials));
  } else {
    RETURN_IF_ERROR(WriteFileAtomically(files.profile, json));
  }
  result->profile_path = files.profile;
  if (repeat) {
    RETURN_IF_ERROR(WriteFileAtomically(files.repeat, json));
    result->repeat_path = files.repeat;
  }
  // The report shows the job's profile: with trials, the aggregate's numbers.
  const std::string& report_source = trial_layout ? files.repeat : files.profile;
  if (!output.report_label.empty()) {
    absl::StatusOr<std::string> html;
    if (output.analyse_from_files || window == nullptr) {
      html = RenderReportFiles({report_source}, {output.report_label});
    } else {
      // The profile as the readers load it (the same numbers as `summary --json`), from the
      // JSON just written; the trace's charts from the events in memory.
      auto loaded = ReadProfileJson(json, report_source);
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
          (void)ProfileTracePath(report_source, in.profile, &in.timeline_note);
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
