// Where a job writes, and how: <project>/<kind>/profile.json, profile_trace.json; with --repeat
// N >= 2 the Python tool's layout instead (common/io/trial_artifacts.h): <project>/<kind>_<T>/
// for each trial and the aggregate at the project root (infer_repeat.json, profile_repeat.json).
// Every file written atomically (temp file, fsync, rename) so a crash never leaves a partial
// artifact.
//
// After the recorded window a job runs the same stages, infer and run alike:
//   collect  the collectors' events in memory (CollectedTrace);
//   analyse  WriteAndAnalyseTrace: one export pass writes profile_trace.json and builds the
//            analyser's in-memory events (trace_data_builder.h), which the common analyser reads;
//            the report's timeline and layer table are drawn from the same events;
//   apply    the job's own measurements (repeat_trials.h ApplyMeasuredTrials, the config);
//   write    WriteJobOutputs: profile.json with the paths it records relative as asked, the
//            repeat file, report.html; each written once, atomically.
#ifndef LIBREYOLO_SERVER_ENGINE_JOB_JOB_FILES_H_
#define LIBREYOLO_SERVER_ENGINE_JOB_JOB_FILES_H_

#include <optional>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/analysis/module_table.h"
#include "common/io/atomic_file.h"  // WriteFileAtomically, for the jobs
#include "common/profile/profile.h"
#include "common/report/trace_timeline.h"
#include "server/engine/collect/collected_trace.h"
#include "server/engine/collect/trace_export.h"
#include "server/engine/engine.h"

namespace libreyolo::engine {

struct JobFiles {
  // metrics: a training job's per-step lines (train/step_log.h), beside profile.json.
  // With the trial layout (--repeat N >= 2, not a rank): `dir` is the final trial's folder
  // (<project>/<kind>_<N-1>/: its profile.json, the recorded window's trace, the report) and
  // `trial_profiles` the earlier trials' profile.json (<project>/<kind>_<T>/profile.json).
  std::string project, dir, profile, trace, repeat, report, metrics;
  std::vector<std::string> trial_profiles;
  bool relative = false;  // JobOutputOptions::paths_relative_to_project
  // How profile.json names a path: relative to the project folder when asked and the path is
  // inside it (the job's files, the daemon's inline images), else as given.
  std::string Recorded(const std::string& path) const;
  // How a file in a trial folder (one level under the project) names `path`: Recorded, with a
  // relative path made relative to that folder ("../infer_2/profile_trace.json"), so that a
  // reader finds it from the file's own folder.
  std::string RecordedFromTrial(const std::string& path) const;
  bool trial_layout() const { return !repeat.empty() && !trial_profiles.empty(); }
};

// <project>/<kind>/profile.json, ...; with `repeat` >= 2, <project>/<kind>_<T>/ for each trial
// and the repeat file at the project root (trial_artifacts.h). A rank of a data-parallel run
// (`rank` >= 0) keeps all of its files in <project>/<kind>/rank<R>/ (its profile_repeat.json
// too), so that ranks sharing a project (torchrun's, one working directory) never overwrite each
// other, and `libreyolo profile summary <project>/<kind>/` reads the ranks as one run.
JobFiles JobFilesFor(const std::string& project, const std::string& kind,
                     const JobOutputOptions& output = {}, int64_t rank = -1, int64_t repeat = 1);
absl::Status CreateJobDir(const JobFiles& files);

// Writes the trace atomically; with `in_memory`, the same export pass also builds the events the
// analyser reads (what ReadTraceFile of the written file returns).
absl::Status WriteTraceAtomically(const CollectedTrace& trace, const std::string& path,
                                  const TraceExportOptions& options,
                                  TraceData* in_memory = nullptr);

// A recorded window's trace, analysed, with what the report draws from it.
struct AnalysedTrace {
  Profile profile;  // AnalyseTrace's metrics; the job applies its own measurements after
  std::optional<TraceTimeline> timeline;
  std::vector<ModuleRow> layers;
};

// Writes `trace` to `path` and analyses it: in memory (one export pass), or, with
// `analyse_from_files`, by reading the written file back (the path before, the bench's peer).
// Adds the time taken to times->trace_ms.
absl::StatusOr<AnalysedTrace> WriteAndAnalyseTrace(const CollectedTrace& trace,
                                                   const std::string& path,
                                                   const TraceExportOptions& options,
                                                   const JobOutputOptions& output,
                                                   PostWindowTimes* times);

// Writes profile.json (and the repeat file when `repeat`), then report.html when the output
// options ask for one: from `window` in memory, or from the written files with
// analyse_from_files. A report that cannot be drawn does not fail the job (result->report_path
// stays empty; `libreyolo profile report` can retry). Fills result's paths and
// post_window.outputs_ms.
//
// `p` is the job's profile: with --repeat, the aggregate (the trials' means). With the trial
// layout, `trials` holds each trial's own profile (the same recorded window, that trial's
// measurements): trial T's goes to its folder's profile.json, `p` to the repeat file alone, and
// the report (beside the final trial's profile) is drawn from `p`. Otherwise profile.json is `p`
// (and so is a rank's profile_repeat.json).
absl::Status WriteJobOutputs(const Profile& p, const JobFiles& files,
                             const JobOutputOptions& output, const AnalysedTrace* window,
                             bool repeat, JobResult* result,
                             const std::vector<Profile>& trials = {});

}  // namespace libreyolo::engine

#endif  // LIBREYOLO_SERVER_ENGINE_JOB_JOB_FILES_H_
