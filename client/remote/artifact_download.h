// Downloads a job's artifact with ReadArtifact: resumes from the bytes already received after
// a broken stream, verifies the SHA-256 the daemon sends with the last chunk, and publishes the
// file atomically (temp + rename), so a partial download never looks like a profile.
#ifndef LIBREYOLO_CLIENT_REMOTE_ARTIFACT_DOWNLOAD_H_
#define LIBREYOLO_CLIENT_REMOTE_ARTIFACT_DOWNLOAD_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "client/remote/daemon_connection.h"

namespace libreyolo::cli {

// Returns the bytes written. DATA_LOSS when the checksum does not match.
absl::StatusOr<int64_t> DownloadArtifact(DaemonConnection& c, const std::string& job_id,
                                         const std::string& name, const std::string& dest);

// Told before each attempt at an artifact (`received`: the offset it starts from) and after each
// chunk written (`received`: the bytes so far). None by default; a test binary sets one to break
// a download at a known point (tests/daemon/download_gate_main.cc).
using DownloadObserver = void (*)(const std::string& name, int64_t received);
void SetDownloadObserver(DownloadObserver observer);

// Where `libreyolo profile run|infer` puts a job's artifact under --project, as the engine
// lays it out locally: infer -> <project>/infer/<name>; run -> <project>/prof/<name>;
// profile_repeat.json -> <project>/profile_repeat.json; a data-parallel job's (job.devices) ->
// <project>/prof/rank<R>/<name> (common/io/rank_artifacts.h), every file of a rank together.
std::string ArtifactDestination(const std::string& project, const v1::Job& job,
                                const std::string& name);

}  // namespace libreyolo::cli

#endif  // LIBREYOLO_CLIENT_REMOTE_ARTIFACT_DOWNLOAD_H_
