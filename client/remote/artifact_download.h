// Downloads a job's artifact with ReadArtifact: resumes from the bytes already received after
// a broken stream, verifies the SHA-256 the daemon sends with the last chunk, and publishes the
// file atomically (temp + rename), so a partial download never looks like a profile.
#ifndef LIBREYOLO_CLIENT_REMOTE_ARTIFACT_DOWNLOAD_H_
#define LIBREYOLO_CLIENT_REMOTE_ARTIFACT_DOWNLOAD_H_

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "client/remote/daemon_connection.h"

namespace libreyolo::cli {

// Returns the bytes written. DATA_LOSS when the checksum does not match. `name` must be a plain
// artifact name (common/job/names.h): INVALID_ARGUMENT otherwise, before anything is asked.
absl::StatusOr<int64_t> DownloadArtifact(DaemonConnection& c, const std::string& job_id,
                                         const std::string& name, const std::string& dest);

// One of a job's artifacts into `dest`, as DownloadArtifact, except that an artifact whose size
// and SHA-256 equal one this job fetch already wrote (`fetched`: "<sha256>/<size>" -> its path;
// a run's last cycle trace is also its profile_trace.json) becomes a hard link to that file (a
// copy where links fail), not a second download of the same bytes. Records what it wrote.
absl::StatusOr<int64_t> FetchArtifact(DaemonConnection& c, const std::string& job_id,
                                      const v1::Artifact& artifact, const std::string& dest,
                                      std::map<std::string, std::string>* fetched);

// Told before each attempt at an artifact (`received`: the offset it starts from) and after each
// chunk written (`received`: the bytes so far). None by default; a test binary sets one to break
// a download at a known point (tests/daemon/download_gate_main.cc).
using DownloadObserver = void (*)(const std::string& name, int64_t received);
void SetDownloadObserver(DownloadObserver observer);

}  // namespace libreyolo::cli

#endif  // LIBREYOLO_CLIENT_REMOTE_ARTIFACT_DOWNLOAD_H_
