// libFuzzer target: bytes -> ParseDatagram (server/daemon/attach/kineto_wire.h), the datagrams
// libreyolod's attach endpoint takes from any local process. Any input may be dropped, but
// nothing may crash, hang or trip a sanitizer; an accepted one must re-encode to the very same
// bytes (so the parser took every byte it was given, and nothing else), and a dropped one must
// say why.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "server/daemon/attach/kineto_wire.h"

namespace attach = ::libreyolo::daemon::attach;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  attach::Message m;
  const attach::DropReason reason = attach::ParseDatagram(data, size, &m);
  if (reason != attach::DropReason::kNone) {
    if (std::string(attach::DropReasonName(reason)) == "unknown") std::abort();
    return 0;
  }
  const std::string again = m.kind == attach::Message::Kind::kRequest
                                ? attach::EncodeRequest(m.request)
                                : attach::EncodeContext(m.context);
  // The type bytes after the NUL are not part of the message: compare the rest.
  const std::string input(reinterpret_cast<const char*>(data), size);
  const size_t type_end = 8 + again.substr(8, attach::kTypeBytes).find('\0');
  if (again.size() != input.size() || again.compare(0, type_end, input, 0, type_end) != 0 ||
      again.compare(40, std::string::npos, input, 40, std::string::npos) != 0) {
    std::fprintf(stderr, "round trip failed: %zu bytes in, %zu out\n", size, again.size());
    std::abort();
  }
  if (m.kind == attach::Message::Kind::kRequest &&
      (m.request.pids.empty() || m.request.pids.size() > static_cast<size_t>(attach::kMaxPids))) {
    std::abort();
  }
  return 0;
}
