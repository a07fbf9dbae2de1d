// Framing of the daemon <-> engine worker messages (proto/libreyolo/worker/v1/worker.proto):
// a 4-byte little-endian length, then the serialised message, on a stream socket; and the one
// conversion of a job's progress (common/job/progress.h) to and from its wire form. Torch-free:
// both the daemon and the worker link it.
#ifndef LIBREYOLO_SERVER_WORKER_WORKER_PROTOCOL_H_
#define LIBREYOLO_SERVER_WORKER_WORKER_PROTOCOL_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "common/job/progress.h"
#include "google/protobuf/message_lite.h"
#include "libreyolo/worker/v1/worker.pb.h"

namespace libreyolo::worker {

// Frames above this are refused (DATA_LOSS): the messages are small (a job without inline
// images, progress lines), so a bigger length means a corrupt stream.
inline constexpr uint32_t kMaxFrameBytes = 16u << 20;

// Writes one frame, whole (retrying short writes and EINTR; never raises SIGPIPE).
// UNAVAILABLE when the peer is gone.
absl::Status WriteFrame(int fd, const google::protobuf::MessageLite& message);

// Reads one frame into `message`: true, or false at a clean end of stream (the peer closed
// between frames). UNAVAILABLE for an end in the middle of a frame or a read error, DATA_LOSS
// for an oversized or unparsable frame.
absl::StatusOr<bool> ReadFrame(int fd, google::protobuf::MessageLite* message);

// A job's progress as the worker sends it (WorkerToDaemon.progress), and back as the daemon
// reads it: every field as it is, so ProgressFromWire(ProgressToWire(p)) == p.
::libreyolo::worker_wire::v1::Progress ProgressToWire(const JobProgress& progress);
JobProgress ProgressFromWire(const ::libreyolo::worker_wire::v1::Progress& wire);

}  // namespace libreyolo::worker

#endif  // LIBREYOLO_SERVER_WORKER_WORKER_PROTOCOL_H_
