// Issue 37 §1: Kineto's IPC datagrams as torch 2.x sends them (kineto_wire.h), byte for byte,
// and every malformed shape dropped with its reason.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "server/daemon/attach/kineto_wire.h"

namespace libreyolo::daemon::attach {
namespace {

DropReason Parse(const std::string& bytes, Message* m) {
  return ParseDatagram(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), m);
}

// A datagram with a header saying `size`, type `type` and `payload` (sizes may lie).
std::string Raw(uint64_t size, const std::string& type, const std::string& payload) {
  std::string out(kHeaderBytes, '\0');
  std::memcpy(out.data(), &size, sizeof(size));
  std::memcpy(out.data() + 8, type.data(), std::min<size_t>(type.size(), kTypeBytes));
  return out + payload;
}

std::string Ints(std::initializer_list<int32_t> values) {
  std::string out;
  for (int32_t v : values) out.append(reinterpret_cast<const char*>(&v), sizeof(v));
  return out;
}

std::string RequestPayload(int32_t type, int32_t n, int64_t job,
                           std::initializer_list<int32_t> pids) {
  std::string out = Ints({type, n});
  out.append(reinterpret_cast<const char*>(&job), sizeof(job));
  return out + Ints(pids);
}

TEST(KinetoWire, RequestIsTheLayoutKinetoSends) {
  const std::string bytes = EncodeRequest({kActivitiesBit, 42, {1234, 1000, 7}});
  ASSERT_EQ(bytes.size(), kHeaderBytes + 16 + 3 * 4);
  uint64_t size = 0;
  std::memcpy(&size, bytes.data(), 8);
  EXPECT_EQ(size, 28u);
  EXPECT_EQ(std::string(bytes.data() + 8, 4), std::string("req\0", 4));
  EXPECT_EQ(bytes.substr(12, 28), std::string(28, '\0'));  // the rest of type[32] is zero
  EXPECT_EQ(bytes.substr(kHeaderBytes), RequestPayload(2, 3, 42, {1234, 1000, 7}));
  Message m;
  ASSERT_EQ(Parse(bytes, &m), DropReason::kNone);
  EXPECT_EQ(m.kind, Message::Kind::kRequest);
  EXPECT_EQ(m.request.type, kActivitiesBit);
  EXPECT_EQ(m.request.job_id, 42);
  EXPECT_EQ(m.request.pids, (std::vector<int32_t>{1234, 1000, 7}));
}

TEST(KinetoWire, RepliesCarryNoNulAndContextRoundTrips) {
  const std::string reply = EncodeConfigReply("ACTIVITIES_DURATION_MSECS=500");
  uint64_t size = 0;
  std::memcpy(&size, reply.data(), 8);
  EXPECT_EQ(size, 29u);
  EXPECT_EQ(reply.size(), kHeaderBytes + 29);
  EXPECT_EQ(reply.substr(kHeaderBytes), "ACTIVITIES_DURATION_MSECS=500");
  EXPECT_EQ(EncodeConfigReply("").size(), kHeaderBytes);
  Message m;
  ASSERT_EQ(Parse(EncodeContext({3, 99, 7}), &m), DropReason::kNone);
  EXPECT_EQ(m.kind, Message::Kind::kContext);
  EXPECT_EQ(m.context.gpu, 3);
  EXPECT_EQ(m.context.pid, 99);
  EXPECT_EQ(m.context.job_id, 7);
  const std::string count = EncodeContextReply(5);
  EXPECT_EQ(std::string(count.data() + 8, 5), std::string("ctxt\0", 5));
  EXPECT_EQ(count.substr(kHeaderBytes), Ints({5}));
}

TEST(KinetoWire, MalformedDatagramsAreDroppedWithTheirReason) {
  const std::string ok_payload = RequestPayload(2, 1, 0, {100});
  struct Case {
    const char* what;
    std::string bytes;
    DropReason reason;
  };
  const Case cases[] = {
      {"empty", "", DropReason::kShort},
      {"short header", std::string(39, '\0'), DropReason::kShort},
      {"size says more", Raw(ok_payload.size() + 1, "req", ok_payload), DropReason::kSizeMismatch},
      {"size says less", Raw(ok_payload.size() - 1, "req", ok_payload), DropReason::kSizeMismatch},
      {"size huge", Raw(~uint64_t{0}, "req", ok_payload), DropReason::kSizeMismatch},
      {"type unterminated", Raw(ok_payload.size(), std::string(32, 'r'), ok_payload),
       DropReason::kTypeUnterminated},
      {"unknown type", Raw(ok_payload.size(), "reqx", ok_payload), DropReason::kUnknownType},
      {"prefix is not enough", Raw(ok_payload.size(), "re", ok_payload), DropReason::kUnknownType},
      {"req too short", Raw(8, "req", Ints({2, 1})), DropReason::kBadPayload},
      {"n zero", Raw(16, "req", RequestPayload(2, 0, 0, {})), DropReason::kBadPidCount},
      {"n negative", Raw(16, "req", RequestPayload(2, -1, 0, {})), DropReason::kBadPidCount},
      {"n beyond payload", Raw(20, "req", RequestPayload(2, 2, 0, {100})),
       DropReason::kBadPidCount},
      {"n huge", Raw(20, "req", RequestPayload(2, 1 << 30, 0, {100})), DropReason::kBadPidCount},
      {"n over the cap",
       Raw(16 + 4 * 33, "req", RequestPayload(2, 33, 0, {}) + std::string(4 * 33, '\1')),
       DropReason::kBadPidCount},
      {"payload past n", Raw(24, "req", RequestPayload(2, 1, 0, {100, 200})),
       DropReason::kBadPidCount},
      {"pid zero", Raw(20, "req", RequestPayload(2, 1, 0, {0})), DropReason::kBadPid},
      {"pid negative", Raw(24, "req", RequestPayload(2, 2, 0, {100, -5})), DropReason::kBadPid},
      {"ctxt short", Raw(8, "ctxt", Ints({1, 2})), DropReason::kBadPayload},
  };
  for (const Case& c : cases) {
    Message m;
    EXPECT_EQ(Parse(c.bytes, &m), c.reason)
        << c.what << ": got " << DropReasonName(Parse(c.bytes, &m));
  }
  Message m;
  EXPECT_EQ(Parse(Raw(ok_payload.size(), "req", ok_payload), &m), DropReason::kNone);
  EXPECT_EQ(ParseDatagram(nullptr, 0, &m), DropReason::kShort);
}

}  // namespace
}  // namespace libreyolo::daemon::attach
