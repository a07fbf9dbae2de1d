#include "server/daemon/attach/kineto_wire.h"

#include <algorithm>
#include <cstring>

namespace libreyolo::daemon::attach {
namespace {

template <typename T>
T Load(const uint8_t* p) {
  T value;
  std::memcpy(&value, p, sizeof(T));
  return value;
}

template <typename T>
void Append(std::string* out, T value) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  out->append(bytes, sizeof(T));
}

DropReason ParseRequest(const uint8_t* p, size_t size, KinetoRequest* out) {
  if (size < kRequestFixedBytes) return DropReason::kBadPayload;
  const int32_t n = Load<int32_t>(p + 4);
  if (n < 1 || n > kMaxPids) return DropReason::kBadPidCount;
  if (size != kRequestFixedBytes + sizeof(int32_t) * static_cast<size_t>(n)) {
    return DropReason::kBadPidCount;
  }
  out->type = Load<int32_t>(p);
  out->job_id = Load<int64_t>(p + 8);
  out->pids.clear();
  out->pids.reserve(static_cast<size_t>(n));
  for (size_t i = 0; i < static_cast<size_t>(n); ++i) {
    const int32_t pid = Load<int32_t>(p + kRequestFixedBytes + sizeof(int32_t) * i);
    if (pid <= 0) return DropReason::kBadPid;
    out->pids.push_back(pid);
  }
  return DropReason::kNone;
}

}  // namespace

const char* DropReasonName(DropReason reason) {
  switch (reason) {
    case DropReason::kNone:
      return "none";
    case DropReason::kShort:
      return "short";
    case DropReason::kSizeMismatch:
      return "size_mismatch";
    case DropReason::kTypeUnterminated:
      return "type_unterminated";
    case DropReason::kUnknownType:
      return "unknown_type";
    case DropReason::kBadPayload:
      return "bad_payload";
    case DropReason::kBadPidCount:
      return "bad_pid_count";
    case DropReason::kBadPid:
      return "bad_pid";
    case DropReason::kOversized:
      return "oversized";
  }
  return "unknown";
}

DropReason ParseDatagram(const uint8_t* data, size_t size, Message* out) {
  if (data == nullptr || size < kHeaderBytes) return DropReason::kShort;
  const uint64_t payload_size = Load<uint64_t>(data);
  if (payload_size != size - kHeaderBytes) return DropReason::kSizeMismatch;
  const char* type = reinterpret_cast<const char*>(data + sizeof(uint64_t));
  const void* nul = std::memchr(type, '\0', kTypeBytes);
  if (nul == nullptr) return DropReason::kTypeUnterminated;
  const absl::string_view name(type, static_cast<size_t>(static_cast<const char*>(nul) - type));
  const uint8_t* payload = data + kHeaderBytes;
  if (name == kTypeRequest) {
    out->kind = Message::Kind::kRequest;
    return ParseRequest(payload, payload_size, &out->request);
  }
  if (name == kTypeContext) {
    if (payload_size != kContextBytes) return DropReason::kBadPayload;
    out->kind = Message::Kind::kContext;
    out->context.gpu = Load<int32_t>(payload);
    out->context.pid = Load<int32_t>(payload + 4);
    out->context.job_id = Load<int64_t>(payload + 8);
    return DropReason::kNone;
  }
  return DropReason::kUnknownType;
}

std::string EncodeMessage(absl::string_view type, absl::string_view payload) {
  std::string out;
  out.reserve(kHeaderBytes + payload.size());
  Append<uint64_t>(&out, payload.size());
  char name[kTypeBytes] = {};
  std::memcpy(name, type.data(), std::min(type.size(), kTypeBytes - 1));
  out.append(name, kTypeBytes);
  out.append(payload.data(), payload.size());
  return out;
}

std::string EncodeRequest(const KinetoRequest& request) {
  std::string payload;
  Append<int32_t>(&payload, request.type);
  Append<int32_t>(&payload, static_cast<int32_t>(request.pids.size()));
  Append<int64_t>(&payload, request.job_id);
  for (const int32_t pid : request.pids) Append<int32_t>(&payload, pid);
  return EncodeMessage(kTypeRequest, payload);
}

std::string EncodeContext(const KinetoContext& context) {
  std::string payload;
  Append<int32_t>(&payload, context.gpu);
  Append<int32_t>(&payload, context.pid);
  Append<int64_t>(&payload, context.job_id);
  return EncodeMessage(kTypeContext, payload);
}

std::string EncodeConfigReply(absl::string_view config) {
  return EncodeMessage(kTypeRequest, config);
}

std::string EncodeContextReply(int32_t count) {
  std::string payload;
  Append<int32_t>(&payload, count);
  return EncodeMessage(kTypeContext, payload);
}

}  // namespace libreyolo::daemon::attach
