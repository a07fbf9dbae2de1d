// The reader's call on the wire (wire/reader_spec): every reader the command line knows has a
// request, and a request carries every option back unchanged, so a reader read through the
// daemon is the reader read here (issue 22 §2).
#include "wire/reader_spec/reader_request.h"

#include <algorithm>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "server/daemon/rpc/request_validation.h"

namespace libreyolo::readerspec {
namespace {

v1::ProfileRef Ref(const std::string& job, const std::string& artifact = "") {
  v1::ProfileRef r;
  r.set_job_id(job);
  r.set_artifact(artifact);
  return r;
}

TEST(ReaderRequest, EveryReaderRoundTripsWithEveryOption) {
  for (const ReaderDef& def : Readers()) {
    const std::string name = def.name;
    SCOPED_TRACE(name);
    ReaderInvocation inv;
    inv.reader = def.id;
    inv.field = "step_ms";
    inv.kernels = {.top = 7, .category = "gemm", .grep = "sm9.", .tensorcore_only = true,
                   .sort = "count", .phase = "forward"};
    inv.ops.top = 0;
    inv.ops.phase = "backward";
    inv.ops.sort = "flops";
    inv.ops.group_by_input_shape = true;
    inv.modules = {.depth = 2, .sort = "self_cpu", .format = "folded"};
    inv.what_if.remove_launches = 12.5;
    inv.latency = {.buckets = 37, .slowest = 0};
    std::vector<v1::ProfileRef> refs = {Ref("20261202-0123456789abcdef", "rank1.profile.json")};
    if (def.inputs == 2) refs.push_back(Ref("20261202-fedcba9876543210"));
    auto req = ToReadRequest(inv, refs);
    ASSERT_TRUE(req.ok()) << req.status();
    EXPECT_TRUE(daemon::ValidateRequest(*req).ok()) << daemon::ValidateRequest(*req);
    auto back = FromReadRequest(*req);
    ASSERT_TRUE(back.ok()) << back.status();
    const ReaderInvocation& got = back->invocation;
    EXPECT_EQ(got.reader, def.id);
    ASSERT_EQ(back->refs.size(), refs.size());
    for (size_t i = 0; i < refs.size(); ++i) {
      EXPECT_EQ(back->refs[i].job_id(), refs[i].job_id());
      EXPECT_EQ(back->refs[i].artifact(), refs[i].artifact());
    }
    // Each reader carries its own options, and only those.
    if (name == "get") {
      EXPECT_EQ(got.field, inv.field);
    } else {
      EXPECT_FALSE(got.field.has_value());
    }
    if (name == "kernels") {
      EXPECT_EQ(got.kernels.top, 7);
      EXPECT_EQ(got.kernels.category, inv.kernels.category);
      EXPECT_EQ(got.kernels.grep, inv.kernels.grep);
      EXPECT_TRUE(got.kernels.tensorcore_only);
      EXPECT_EQ(got.kernels.sort, "count");
      EXPECT_EQ(got.kernels.phase, inv.kernels.phase);
    }
    if (name == "ops") {
      EXPECT_EQ(got.ops.top, 0);
      EXPECT_EQ(got.ops.phase, inv.ops.phase);
      EXPECT_EQ(got.ops.sort, "flops");
      EXPECT_TRUE(got.ops.group_by_input_shape);
    }
    if (name == "modules") {
      EXPECT_EQ(got.modules.depth, 2);
      EXPECT_EQ(got.modules.sort, "self_cpu");
      EXPECT_EQ(got.modules.format, "folded");
    }
    if (name == "what-if") {
      EXPECT_EQ(got.what_if.remove_launches, 12.5);
    }
    if (name == "latency") {
      EXPECT_EQ(got.latency.buckets, 37);
      EXPECT_EQ(got.latency.slowest, 0);
    } else {
      EXPECT_EQ(got.latency.buckets, LatencyOptions{}.buckets);
      EXPECT_EQ(got.latency.slowest, LatencyOptions{}.slowest);
    }
  }
}

// The wire mapping is rows (ReaderWires): every reader has exactly one, carried by the oneof
// field named as the reader ('-' -> '_'), and every field of the oneof is some reader's.
TEST(ReaderRequest, EveryReaderHasExactlyOneWireRowNamedAsItsField) {
  for (const ReaderDef& def : Readers()) {
    SCOPED_TRACE(def.name);
    EXPECT_EQ(&Reader(def.id), &def);
    size_t rows = 0;
    for (const ReaderWire& w : ReaderWires()) rows += w.id == def.id ? 1 : 0;
    EXPECT_EQ(rows, 1u);
    const ReaderWire* wire = FindReaderWire(def.id);
    ASSERT_NE(wire, nullptr);
    std::string field = def.name;
    std::replace(field.begin(), field.end(), '-', '_');
    EXPECT_EQ(WireFieldName(wire->wire_case), field);
    EXPECT_EQ(FindReaderWire(wire->wire_case), wire);
  }
  EXPECT_EQ(ReaderWires().size(), Readers().size());
  const auto* oneof = v1::ReadRequest::descriptor()->FindOneofByName("reader");
  ASSERT_NE(oneof, nullptr);
  EXPECT_EQ(static_cast<size_t>(oneof->field_count()), Readers().size());
  for (int i = 0; i < oneof->field_count(); ++i) {
    const auto wire_case = static_cast<v1::ReadRequest::ReaderCase>(oneof->field(i)->number());
    EXPECT_NE(FindReaderWire(wire_case), nullptr) << oneof->field(i)->name() << " has no row";
  }
  EXPECT_EQ(FindReaderWire(v1::ReadRequest::READER_NOT_SET), nullptr);
}

// The refusal of a request without a reader lists the rows' fields (it was typed by hand).
TEST(ReaderRequest, ReaderNotSetListsEveryReadersField) {
  const std::string msg = ReaderNotSetMessage();
  EXPECT_THAT(msg, ::testing::StartsWith("reader: set one of summary, get, phases, kernels, ops, "
                                         "modules, compare, what_if"));
  for (const ReaderWire& w : ReaderWires()) {
    EXPECT_THAT(msg, ::testing::HasSubstr(WireFieldName(w.wire_case)));
  }
  EXPECT_EQ(FromReadRequest(v1::ReadRequest()).status().message(), msg);
}

TEST(ReaderRequest, DefaultsStayDefaultsAndBadRequestsAreRefused) {
  ReaderInvocation inv;
  inv.reader = ReaderId::kModules;  // depth 0: every path; not sent
  auto req = ToReadRequest(inv, {Ref("j")});
  ASSERT_TRUE(req.ok());
  EXPECT_FALSE(req->modules().has_depth());
  EXPECT_EQ(FromReadRequest(*req)->invocation.modules.depth, 0);
  EXPECT_EQ(ToReadRequest(inv, {}).status().code(), absl::StatusCode::kInvalidArgument);
  inv.reader = ReaderId::kCompare;
  EXPECT_THAT(std::string(ToReadRequest(inv, {Ref("j")}).status().message()),
              ::testing::HasSubstr("compare reads 2 profiles, got 1"));
  EXPECT_EQ(FromReadRequest(v1::ReadRequest()).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(daemon::ValidateRequest(v1::ReadRequest()).code(), absl::StatusCode::kInvalidArgument);
  v1::ReadRequest deep;
  deep.mutable_modules()->mutable_profile()->set_job_id("20261202-0123456789abcdef");
  deep.mutable_modules()->set_depth(0);
  EXPECT_THAT(std::string(daemon::ValidateRequest(deep).message()),
              ::testing::HasSubstr("depth: 0 is outside 1..1024"));
  deep.mutable_modules()->set_depth(2147483647);
  EXPECT_EQ(daemon::ValidateRequest(deep).code(), absl::StatusCode::kInvalidArgument);
}

// latency's options: unset on the wire is the default; the bounds are the view's, refused at the
// daemon's edge with the local command's message.
TEST(ReaderRequest, LatencyOptionsDefaultsAndBounds) {
  v1::ReadRequest req;
  req.mutable_latency()->mutable_profile()->set_job_id("20261202-0123456789abcdef");
  auto call = FromReadRequest(req);
  ASSERT_TRUE(call.ok()) << call.status();
  EXPECT_EQ(call->invocation.reader, ReaderId::kLatency);
  EXPECT_EQ(call->invocation.latency.buckets, kDefaultLatencyBuckets);
  EXPECT_EQ(call->invocation.latency.slowest, kDefaultLatencySlowest);
  EXPECT_TRUE(daemon::ValidateRequest(req).ok());
  req.mutable_latency()->set_buckets(1000);
  req.mutable_latency()->set_slowest(100000);
  EXPECT_TRUE(daemon::ValidateRequest(req).ok());
  req.mutable_latency()->set_buckets(0);
  EXPECT_EQ(daemon::ValidateRequest(req).message(), CheckLatencyBuckets(0).message());
  req.mutable_latency()->set_buckets(1001);
  EXPECT_EQ(daemon::ValidateRequest(req).code(), absl::StatusCode::kInvalidArgument);
  req.mutable_latency()->set_buckets(10);
  req.mutable_latency()->set_slowest(-1);
  EXPECT_THAT(std::string(daemon::ValidateRequest(req).message()),
              ::testing::HasSubstr("slowest: -1 is outside 0..100000"));
  req.mutable_latency()->set_slowest(100001);
  EXPECT_EQ(daemon::ValidateRequest(req).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace libreyolo::readerspec
