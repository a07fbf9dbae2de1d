// Where a job writes, and how: <project>/<kind>/profile.json, profile_trace.json, and
// <project>/profile_repeat.json (the Python tool's layout); every file written atomically
// (temp file, fsync, rename) so a crash never leaves a partial artifact.
#ifndef LIBREYOLO_SERVER_ENGINE_JOB_FILES_H_
#define LIBREYOLO_SERVER_ENGINE_JOB_FILES_H_

#include <string>

#include "absl/status/status.h"
#include "common/io/atomic_file.h"  // WriteFileAtomically, for the jobs
#include "server/engine/collect/collected_trace.h"
#include "server/engine/collect/trace_export.h"

namespace libreyolo::engine {

struct JobFiles {
  std::string dir, profile, trace, repeat;
};

JobFiles JobFilesFor(const std::string& project, const std::string& kind);
absl::Status CreateJobDir(const JobFiles& files);
absl::Status WriteTraceAtomically(const CollectedTrace& trace, const std::string& path,
                                  const TraceExportOptions& options);

}  // namespace libreyolo::engine

#endif  // LIBREYOLO_SERVER_ENGINE_JOB_FILES_H_
