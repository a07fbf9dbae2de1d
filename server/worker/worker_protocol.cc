#include "server/worker/worker_protocol.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"

namespace libreyolo::worker {
namespace {

// 1 = filled, 0 = clean end before the first byte, -1 = error or end mid-way (errno kept).
int ReadFull(int fd, char* data, size_t size) {
  size_t got = 0;
  while (got < size) {
    const ssize_t n = ::read(fd, data + got, size - got);
    if (n > 0) {
      got += static_cast<size_t>(n);
    } else if (n == 0) {
      if (got == 0) return 0;
      errno = EPIPE;
      return -1;
    } else if (errno != EINTR) {
      return -1;
    }
  }
  return 1;
}

}  // namespace

absl::Status WriteFrame(int fd, const google::protobuf::MessageLite& message) {
  const size_t size = message.ByteSizeLong();
  if (size > kMaxFrameBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("worker message of ", size, " bytes is over the ", kMaxFrameBytes, " limit"));
  }
  std::string frame(4 + size, '\0');
  const auto n = static_cast<uint32_t>(size);
  for (int i = 0; i < 4; ++i) frame[static_cast<size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xff);
  if (!message.SerializeToArray(frame.data() + 4, static_cast<int>(size))) {
    return absl::InternalError("worker message: serialisation failed");
  }
  size_t sent = 0;
  while (sent < frame.size()) {
    const ssize_t w = ::send(fd, frame.data() + sent, frame.size() - sent, MSG_NOSIGNAL);
    if (w > 0) {
      sent += static_cast<size_t>(w);
    } else if (w < 0 && errno == EINTR) {
      continue;
    } else {
      return absl::UnavailableError(
          absl::StrCat("worker channel: write failed: ", std::strerror(errno)));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> ReadFrame(int fd, google::protobuf::MessageLite* message) {
  unsigned char header[4];
  const int h = ReadFull(fd, reinterpret_cast<char*>(header), sizeof(header));
  if (h == 0) return false;
  if (h < 0) {
    return absl::UnavailableError(
        absl::StrCat("worker channel: read failed: ", std::strerror(errno)));
  }
  const uint32_t size = static_cast<uint32_t>(header[0]) | (static_cast<uint32_t>(header[1]) << 8) |
                        (static_cast<uint32_t>(header[2]) << 16) |
                        (static_cast<uint32_t>(header[3]) << 24);
  if (size > kMaxFrameBytes) {
    return absl::DataLossError(
        absl::StrCat("worker channel: a frame of ", size, " bytes (over the limit): corrupt"));
  }
  std::string body(size, '\0');
  if (size > 0 && ReadFull(fd, body.data(), size) != 1) {
    return absl::UnavailableError(
        absl::StrCat("worker channel: the peer went away inside a frame: ", std::strerror(errno)));
  }
  if (!message->ParseFromString(body)) {
    return absl::DataLossError("worker channel: a frame that does not parse");
  }
  return true;
}

::libreyolo::worker_wire::v1::Progress ProgressToWire(const JobProgress& progress) {
  ::libreyolo::worker_wire::v1::Progress wire;
  wire.set_stage(progress.stage);
  wire.set_done(progress.done);
  wire.set_total(progress.total);
  wire.set_message(progress.message);
  return wire;
}

JobProgress ProgressFromWire(const ::libreyolo::worker_wire::v1::Progress& wire) {
  return JobProgress{wire.stage(), wire.done(), wire.total(), wire.message()};
}

}  // namespace libreyolo::worker
