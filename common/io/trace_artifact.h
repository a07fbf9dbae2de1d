// Which Chrome trace goes with an artifact of a job: one rule for the daemon's `modules` reader
// (server/daemon/reads/store_reader.h, reading in the store) and the client's local reads of a
// fetched job (client/remote/remote_reader.cc, putting the trace beside the profile it
// downloaded, where ProfileTracePath finds it).
#ifndef LIBREYOLO_COMMON_IO_TRACE_ARTIFACT_H_
#define LIBREYOLO_COMMON_IO_TRACE_ARTIFACT_H_

#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/io/rank_artifacts.h"
#include "common/io/trial_artifacts.h"

namespace libreyolo {

// The trace artifact beside artifact `name`:
// - the job's profile (`name` empty, or a repeat file): profile_trace.json, the job's trace (a
//   --repeat job's final trial's);
// - a profile, "<prefix>profile.json": "<prefix>profile_trace.json" ("rank1.profile.json" ->
//   "rank1.profile_trace.json", "trial0.profile.json" -> "trial0.profile_trace.json");
// - any other name (a trace itself): `name`.
inline std::string TraceArtifactBeside(absl::string_view name) {
  if (name.empty() || IsRepeatFileName(name)) return kTraceFileName;
  constexpr absl::string_view kJson = ".json";
  if (absl::EndsWith(name, kProfileFileName)) {
    return absl::StrCat(name.substr(0, name.size() - kJson.size()), "_trace", kJson);
  }
  return std::string(name);
}

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_IO_TRACE_ARTIFACT_H_
