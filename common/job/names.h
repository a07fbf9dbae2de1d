// The names a job hands across processes, one rule each, shared by the client, the daemon and
// the engine (docs/rpc.md, "Conventions"): a job id, and an artifact's name. A daemon publishes
// only names that pass these; a client writes a file under a name from a daemon only if it
// passes them too, because the daemon may be hostile or not the one meant (a plaintext
// --insecure path, a wrong LIBREYOLO_REMOTE), and a name is the last part of a path it writes.
#ifndef LIBREYOLO_COMMON_JOB_NAMES_H_
#define LIBREYOLO_COMMON_JOB_NAMES_H_

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace libreyolo {

inline constexpr size_t kMaxJobIdBytes = 64;  // ids are "YYYYMMDD-<16 hex>" (25 bytes)
inline constexpr size_t kMaxArtifactNameBytes = 128;

// The folder under a job's project directory (--project, default "runs/profile") that its
// output lands in, as the Python LibreYOLO names them: `profile run` writes <project>/prof,
// `profile infer` <project>/infer; a downloaded attach job's files go to <project>/attach.
// The engine writes there, the daemon collects from there, the client fetches into there.
inline constexpr char kRunOutputFolder[] = "prof";
inline constexpr char kInferOutputFolder[] = "infer";
inline constexpr char kAttachOutputFolder[] = "attach";

// 1-64 bytes of [A-Za-z0-9_-].
bool IsJobId(absl::string_view id);

// The one message for a string that is no job id, whoever checks it (the client, the daemon's
// request validation, its store): "'<id>' is not a job id (at most 64 bytes of letters,
// digits, - and _; `libreyolo jobs list` shows yours)". `id` is echoed as an Excerpt
// (common/render/terminal_text.h), so a hostile one prints safely.
std::string NotAJobIdMessage(absl::string_view id);

// OK when `id` passes IsJobId; else INVALID_ARGUMENT with NotAJobIdMessage, after "<field>: "
// when `field` is not empty.
absl::Status CheckJobId(absl::string_view id, absl::string_view field = {});

// A plain file name: 1-128 bytes of [A-Za-z0-9._-], not starting with '.', without "..". No
// '/', so it cannot name another directory; no leading '.', so no hidden or temp file; no
// control bytes, so it prints as it is.
bool IsPlainArtifactName(absl::string_view name);

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_JOB_NAMES_H_
