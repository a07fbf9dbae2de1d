// Kineto's IPC fabric as torch 2.x's Kineto speaks it (shared/spec/kineto-on-demand.md §1.3): one
// datagram per message on an AF_UNIX SOCK_DGRAM socket, a 40-byte header (u64 payload size,
// char[32] NUL-terminated type) then the payload. A traced process sends `req` {i32 activity
// bitmask, i32 n, i64 job id, i32 pids[n]} (its own pid, then its ancestors) and `ctxt`
// {i32 gpu, i32 pid, i64 job id}; the daemon answers `req` with the pending configuration text
// (no NUL; empty: nothing to do) and `ctxt` with an i32. Native byte order (the sender is on
// this host). Pure functions over bytes: no socket, no gRPC, fuzzed (tests/fuzz).
#ifndef LIBREYOLO_SERVER_DAEMON_ATTACH_KINETO_WIRE_H_
#define LIBREYOLO_SERVER_DAEMON_ATTACH_KINETO_WIRE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace libreyolo::daemon::attach {

inline constexpr size_t kHeaderBytes = 40;  // u64 size + char[32] type
inline constexpr size_t kTypeBytes = 32;
inline constexpr size_t kRequestFixedBytes = 16;  // i32 type, i32 n, i64 job id
inline constexpr size_t kContextBytes = 16;       // i32 gpu, i32 pid, i64 job id
// Kineto sends its own pid and at most 10 ancestors; anything past this is not Kineto.
inline constexpr int32_t kMaxPids = 32;
// The largest datagram the endpoint reads whole; a longer one is dropped as oversized.
inline constexpr size_t kMaxDatagramBytes = 4096;

inline constexpr char kTypeRequest[] = "req";
inline constexpr char kTypeContext[] = "ctxt";

// The `req` bitmask: 1 = event profiler (gone from Kineto), 2 = activity profiler idle, able to
// take an on-demand configuration (0 while the process runs its own torch.profiler).
inline constexpr int32_t kEventsBit = 1;
inline constexpr int32_t kActivitiesBit = 2;

struct KinetoRequest {
  int32_t type = 0;           // the bitmask above
  int64_t job_id = 0;         // SLURM_JOB_ID of the sender, or 0
  std::vector<int32_t> pids;  // own pid first, then ancestors (in the sender's pid namespace)
};

struct KinetoContext {
  int32_t gpu = 0;
  int32_t pid = 0;
  int64_t job_id = 0;
};

// Why a datagram was dropped; kNone when it parsed. Counted by name (DropReasonName).
enum class DropReason {
  kNone,
  kShort,             // shorter than the header
  kSizeMismatch,      // the header's size is not the bytes that follow
  kTypeUnterminated,  // no NUL within the 32 type bytes
  kUnknownType,       // neither "req" nor "ctxt"
  kBadPayload,        // a payload of the wrong length for its type
  kBadPidCount,       // n < 1, n > kMaxPids, or n disagrees with the payload's length
  kBadPid,            // a pid <= 0
  kOversized,         // longer than kMaxDatagramBytes (set by the reader, not the parser)
};
const char* DropReasonName(DropReason reason);

struct Message {
  enum class Kind { kRequest, kContext };
  Kind kind = Kind::kRequest;
  KinetoRequest request;  // kind == kRequest
  KinetoContext context;  // kind == kContext
};

// Parses one whole datagram. Never reads past `size`, never allocates more than kMaxPids pids.
DropReason ParseDatagram(const uint8_t* data, size_t size, Message* out);

// One datagram: the header for `type` (truncated to 31 bytes) and `payload`.
std::string EncodeMessage(absl::string_view type, absl::string_view payload);
// A process's `req` (the fake client of the tests and the fuzzer's round trip).
std::string EncodeRequest(const KinetoRequest& request);
std::string EncodeContext(const KinetoContext& context);
// The daemon's answers: `req` with the configuration text, `ctxt` with a count.
std::string EncodeConfigReply(absl::string_view config);
std::string EncodeContextReply(int32_t count);

}  // namespace libreyolo::daemon::attach

#endif  // LIBREYOLO_SERVER_DAEMON_ATTACH_KINETO_WIRE_H_
