// How a data-parallel job's files are named among a job's artifacts (docs/rpc.md,
// "Data-parallel jobs"): rank 0's under their own names (profile.json, profile_trace.json, ...:
// the job's profile, what `summary job:<id>` reads), rank R's as "rank<R>.<name>". Artifact
// names are plain file names (no '/'), so the rank goes into the name; a client puts each
// file back into <project>/prof/rank<R>/<name>, the layout the engine writes and the folder
// reader reads. The daemon (publishing) and the client (fetching) share this one definition.
// The rank in a name is the daemon's own (its first rank's files have the plain names): on one
// host it is the run's rank; across hosts, the run's rank is Job.world.first_rank plus it, so
// that `summary job:<id>` reads each host's first rank as it reads rank 0 on one host.
#ifndef LIBREYOLO_COMMON_IO_RANK_ARTIFACTS_H_
#define LIBREYOLO_COMMON_IO_RANK_ARTIFACTS_H_

#include <cstdint>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace libreyolo {

// A job's profile and its trace, as the engine writes them into its job folder and as they are
// published.
inline constexpr char kProfileFileName[] = "profile.json";
inline constexpr char kTraceFileName[] = "profile_trace.json";

inline std::string RankArtifactName(int64_t rank, absl::string_view file) {
  return rank == 0 ? std::string(file) : absl::StrCat("rank", rank, ".", file);
}

struct RankArtifact {
  int64_t rank = 0;
  std::string file;
};

// The inverse of RankArtifactName: "rank3.profile.json" -> {3, "profile.json"}; a name
// without the prefix is rank 0's.
inline RankArtifact SplitRankArtifact(absl::string_view name) {
  if (name.substr(0, 4) == "rank") {
    const size_t dot = name.find('.');
    int64_t rank = 0;
    if (dot != absl::string_view::npos && dot > 4 && dot + 1 < name.size() &&
        absl::SimpleAtoi(name.substr(4, dot - 4), &rank) && rank > 0) {
      return {rank, std::string(name.substr(dot + 1))};
    }
  }
  return {0, std::string(name)};
}

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_IO_RANK_ARTIFACTS_H_
