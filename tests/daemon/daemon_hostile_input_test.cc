// Hostile input through a real libreyolod (issue 9, "Limits and bad input"): counts at 2^63-1
// and products that overflow, megabyte strings, NaN, malformed `synthetic:N`, negative `top`,
// empty job ids, bytes that are not a request, label values with terminal control characters,
// and error messages that must not show the daemon's directories to a remote caller. Every
// refusal is INVALID_ARGUMENT (or RESOURCE_EXHAUSTED for a value over one of the daemon's
// limits) with a short message naming the field, and nothing is queued.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <grpcpp/generic/generic_stub.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "tests/daemon/daemon_process.h"

namespace libreyolo::daemon_test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kAlice[] = "alice-token-5b1e77c2";
constexpr size_t kShortMessage = 512;  // an error message is at most this long

// One daemon for the whole suite (TCP with tokens, and its Unix socket): every call here is
// refused, so nothing the tests do changes what the next one sees.
class DaemonHostileInput : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    dirs_ = new DaemonDirs(dir_->path());
    WriteFile(dir_->File("tokens"), std::string(kAlice) + " alice\n", 0600);
    std::vector<std::string> flags = dirs_->Flags({"unix:" + dirs_->socket, "tcp:127.0.0.1:0"});
    flags.insert(flags.end(), {"--tokens-file", dir_->File("tokens"), "--insecure-tcp"});
    // Below an ordinary image's size (issue 40 A.9: AnImageOverTheDaemonsPixelBound...).
    flags.insert(flags.end(), {"--max-decoded-pixels", "1024"});
    daemon_ = DaemonProcess::Start(flags, dir_->File("daemon.log")).release();
  }
  static void TearDownTestSuite() {
    delete daemon_;
    delete dirs_;
    delete dir_;
  }
  void SetUp() override {
    ASSERT_TRUE(daemon_->WaitServing()) << ReadFile(dir_->File("daemon.log"));
    channel_ = TcpChannel("127.0.0.1:" + std::to_string(daemon_->tcp_port()));
    stub_ = v1::ProfilerService::NewStub(channel_);
  }

  // A refused SubmitJob: the code, a short message naming `field`.
  void ExpectRefused(const v1::SubmitJobRequest& r, const std::string& field,
                     bool limit_ok = false) {
    v1::Job job;
    const grpc::Status s = Submit(*stub_, r, &job, kAlice);
    EXPECT_FALSE(s.ok()) << field << " accepted: job " << job.id();
    if (limit_ok && s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) {
      EXPECT_THAT(s.error_message(), HasSubstr("exceeds this daemon's")) << field;
    } else {
      EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
          << field << ": " << s.error_message().substr(0, 300);
    }
    EXPECT_THAT(s.error_message(), HasSubstr(field));
    EXPECT_LE(s.error_message().size(), kShortMessage) << field;
  }

  // No job was queued by anything refused.
  void ExpectNoJobs() {
    auto ctx = Ctx(kAlice);
    v1::ListJobsResponse resp;
    ASSERT_TRUE(stub_->ListJobs(ctx.get(), v1::ListJobsRequest(), &resp).ok());
    EXPECT_EQ(resp.jobs_size(), 0);
  }

  static TempDir* dir_;
  static DaemonDirs* dirs_;
  static DaemonProcess* daemon_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::ProfilerService::Stub> stub_;
};
TempDir* DaemonHostileInput::dir_ = nullptr;
DaemonDirs* DaemonHostileInput::dirs_ = nullptr;
DaemonProcess* DaemonHostileInput::daemon_ = nullptr;

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

// Issue 9 item 7: every count has an upper bound, and sums and products of counts cannot wrap.
TEST_F(DaemonHostileInput, CountsAtTwoToTheSixtyThreeAreRefused) {
  auto infer = [](auto set) {
    v1::SubmitJobRequest r = TinyInfer();
    set(r.mutable_infer());
    return r;
  };
  auto run = [](auto set) {
    v1::SubmitJobRequest r = TinyRun();
    set(r.mutable_run());
    return r;
  };
  ExpectRefused(infer([](auto* s) { s->set_warmup(kMax); }), "infer.warmup", true);
  ExpectRefused(infer([](auto* s) { s->set_runs(kMax); }), "infer.runs", true);
  ExpectRefused(infer([](auto* s) { s->set_repeat(kMax); }), "infer.repeat", true);
  ExpectRefused(infer([](auto* s) { s->set_batch(kMax); }), "infer.batch", true);
  ExpectRefused(infer([](auto* s) { s->set_imgsz(kMax - 31); }), "infer.imgsz", true);
  ExpectRefused(infer([](auto* s) { s->set_max_det(kMax); }), "infer.max_det");
  ExpectRefused(run([](auto* s) { s->set_warmup(kMax); }), "run.warmup", true);
  ExpectRefused(run([](auto* s) { s->set_steps(kMax); }), "run.steps", true);
  ExpectRefused(run([](auto* s) { s->set_skip_first(kMax); }), "run.skip_first", true);
  ExpectRefused(run([](auto* s) { s->set_wait(kMax); }), "run.wait", true);
  ExpectRefused(run([](auto* s) { s->set_cycles(kMax); }), "run.cycles");
  ExpectRefused(run([](auto* s) { s->set_workers(kMax); }), "run.workers");
  ExpectRefused(run([](auto* s) { s->set_batch(kMax); }), "run.batch", true);
  // A product that wraps to a small number when multiplied without a check.
  ExpectRefused(run([](auto* s) {
                  s->set_repeat(2);
                  s->set_steps(int64_t{1} << 62);
                }),
                "run.steps", true);
  ExpectRefused(run([](auto* s) {
                  s->set_warmup(int64_t{1} << 62);
                  s->set_steps(int64_t{1} << 62);
                }),
                "run.", true);
  ExpectNoJobs();
}

// Item 8: megabyte strings get a short INVALID_ARGUMENT naming the field (TCP, so the status
// travels in HTTP/2 trailers where a long message would be cut off).
TEST_F(DaemonHostileInput, HugeStringsGetAShortError) {
  const std::string ten_mb(10 << 20, 'w');
  const std::string one_mb(1 << 20, 'j');
  v1::SubmitJobRequest r = TinyInfer();
  r.mutable_infer()->mutable_model()->set_weights(ten_mb);
  ExpectRefused(r, "model.weights");
  r = TinyInfer();
  r.mutable_infer()->set_source(ten_mb);
  ExpectRefused(r, "infer.source");
  r = TinyRun();
  r.mutable_run()->set_data(ten_mb);
  ExpectRefused(r, "run.data");
  r = TinyInfer();
  r.set_request_id(one_mb);
  ExpectRefused(r, "request_id");
  r = TinyInfer();
  (*r.mutable_labels())["team"] = one_mb;
  ExpectRefused(r, "labels");
  r = TinyInfer();
  r.mutable_infer()->mutable_model()->set_device(one_mb);
  ExpectRefused(r, "model.device");
  ExpectNoJobs();

  v1::Job job;
  grpc::Status s = GetJob(*stub_, one_mb, &job, kAlice);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message().size();
  EXPECT_THAT(s.error_message(), HasSubstr("job_id"));
  EXPECT_LE(s.error_message().size(), kShortMessage);
  {
    auto ctx = Ctx(kAlice);
    v1::KernelsRequest req;
    req.mutable_profile()->set_job_id("20260101-0000000000000000");
    req.set_grep(one_mb);
    v1::ReaderResponse resp;
    s = stub_->Kernels(ctx.get(), req, &resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(s.error_message(), HasSubstr("grep"));
    EXPECT_LE(s.error_message().size(), kShortMessage);
  }
  {
    auto ctx = Ctx(kAlice);
    v1::ListJobsRequest req;
    req.set_owner(one_mb);
    v1::ListJobsResponse resp;
    s = stub_->ListJobs(ctx.get(), req, &resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(s.error_message(), HasSubstr("owner"));
    EXPECT_LE(s.error_message().size(), kShortMessage);
  }
}

// Item 9: NaN and other non-numbers, malformed synthetic counts, negative `top`, empty ids.
TEST_F(DaemonHostileInput, MalformedValuesAreRefusedNamingTheField) {
  const double nan = std::nan("");
  const double inf = std::numeric_limits<double>::infinity();
  for (double bad : {nan, inf, -inf, -0.5, 1.5}) {
    v1::SubmitJobRequest r = TinyInfer();
    r.mutable_infer()->set_conf(bad);
    ExpectRefused(r, "infer.conf");
    r = TinyInfer();
    r.mutable_infer()->set_iou(bad);
    ExpectRefused(r, "infer.iou");
  }
  {
    v1::SubmitJobRequest r = TinyInfer();
    r.mutable_infer()->mutable_profiler()->set_overhead_budget_pct(nan);
    ExpectRefused(r, "overhead_budget_pct");
  }
  for (const char* data : {"synthetic:0", "synthetic:-5", "synthetic:abc", "synthetic:99999999999",
                           "synthetic:", "synthetic:+8", "synthetic: 8"}) {
    v1::SubmitJobRequest r = TinyRun();
    r.mutable_run()->set_data(data);
    ExpectRefused(r, "run.data");
  }
  ExpectNoJobs();

  const std::string id = "20260101-0123456789abcdef";
  {
    auto ctx = Ctx(kAlice);
    v1::KernelsRequest req;
    req.mutable_profile()->set_job_id(id);
    req.set_top(-5);
    v1::ReaderResponse resp;
    const grpc::Status s = stub_->Kernels(ctx.get(), req, &resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
    EXPECT_THAT(s.error_message(), HasSubstr("top"));
  }
  {
    auto ctx = Ctx(kAlice);
    v1::OpsRequest req;
    req.mutable_profile()->set_job_id(id);
    req.set_top(-5);
    v1::ReaderResponse resp;
    const grpc::Status s = stub_->Ops(ctx.get(), req, &resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
    EXPECT_THAT(s.error_message(), HasSubstr("top"));
  }
  {
    auto ctx = Ctx(kAlice);
    v1::WhatIfRequest req;
    req.mutable_profile()->set_job_id(id);
    req.set_remove_launches(nan);
    v1::ReaderResponse resp;
    const grpc::Status s = stub_->WhatIf(ctx.get(), req, &resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
    EXPECT_THAT(s.error_message(), HasSubstr("remove_launches"));
  }
  // An empty job id is a missing field, not an unknown job; for every RPC that takes one.
  v1::Job job;
  grpc::Status s = GetJob(*stub_, "", &job, kAlice);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("job_id: required"));
  {
    auto ctx = Ctx(kAlice);
    s = stub_->CancelJob(ctx.get(), v1::CancelJobRequest(), &job);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(s.error_message(), HasSubstr("job_id: required"));
  }
  std::vector<v1::JobEvent> events;
  s = Watch(*stub_, "", 0, &events, kAlice);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("job_id: required"));
  s = ReadArtifact(*stub_, "", "profile.json", kAlice).status;
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("job_id: required"));
}

// Item 9: bytes that do not parse as the request message are INVALID_ARGUMENT with a message
// naming the RPC, on unary and streaming RPCs alike (gRPC's own answer is INTERNAL with no text).
TEST_F(DaemonHostileInput, UnparsableRequestIsInvalidArgumentWithAMessage) {
  // 0xff: field 31 with wire type 7, which does not exist; then a truncated length-delimited field.
  for (const std::string& bytes : {std::string("\xff\xff\xff\xff", 4), std::string("\x0a\x7f", 2)}) {
    for (const char* method : {"SubmitJob", "GetJob", "WatchJob", "Kernels", "ReadArtifact"}) {
      const grpc::Status s =
          RawCall(channel_, std::string("/libreyolo.profiler.v1.ProfilerService/") + method,
                  bytes, kAlice);
      EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
          << method << ": " << s.error_code() << " '" << s.error_message() << "'";
      EXPECT_THAT(s.error_message(), HasSubstr(method));
    }
  }
  // A string field that is not UTF-8 does not parse either (proto3 checks it).
  const grpc::Status utf8 = RawCall(channel_, "/libreyolo.profiler.v1.ProfilerService/GetJob",
                                    std::string("\x0a\x02\xff\xfe", 4), kAlice);
  EXPECT_EQ(utf8.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << utf8.error_message();
  // A well-formed request through the same path still works.
  v1::GetJobRequest req;
  req.set_job_id("20260101-0123456789abcdef");
  const grpc::Status s = RawCall(channel_, "/libreyolo.profiler.v1.ProfilerService/GetJob",
                                 req.SerializeAsString(), kAlice);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND) << s.error_message();
}

// Item 10: label keys and values are restricted to a documented character set.
TEST_F(DaemonHostileInput, LabelsWithControlCharactersAreRefused) {
  for (const std::string& value :
       {std::string("\x1b[2J\x1b[31mowned"), std::string("a\rb"), std::string("a\nb"),
        std::string("tab\there"), std::string("\x7f"), std::string("rtl\xe2\x80\xaeoverride"),
        std::string("nul\0x", 5)}) {
    v1::SubmitJobRequest r = TinyInfer();
    (*r.mutable_labels())["team"] = value;
    ExpectRefused(r, "labels[team]");
  }
  v1::SubmitJobRequest r = TinyInfer();
  (*r.mutable_labels())["te\x1bm"] = "x";
  ExpectRefused(r, "labels");
  ExpectNoJobs();
}

// Item 11: a remote caller sees names relative to the daemon's directories, never the
// daemon's absolute paths; not over TCP, and not on the Unix socket of a daemon that does not
// let callers name paths.
TEST_F(DaemonHostileInput, ErrorsShowNoDaemonPathsToRemoteCallers) {
  auto unix_stub = v1::ProfilerService::NewStub(UnixChannel(dirs_->socket));
  for (v1::ProfilerService::Stub* stub : {stub_.get(), unix_stub.get()}) {
    v1::SubmitJobRequest r = TinyInfer();
    r.mutable_infer()->mutable_model()->set_weights("missing.pt");
    v1::Job job;
    grpc::Status s = Submit(*stub, r, &job, kAlice);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND) << s.error_message();
    EXPECT_THAT(s.error_message(), HasSubstr("models/missing.pt"));
    EXPECT_THAT(s.error_message(), Not(HasSubstr(dir_->path())));
    r = TinyRun();
    r.mutable_run()->set_data("nosuch");
    s = Submit(*stub, r, &job, kAlice);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND) << s.error_message();
    EXPECT_THAT(s.error_message(), HasSubstr("datasets/nosuch.yaml"));
    EXPECT_THAT(s.error_message(), Not(HasSubstr(dir_->path())));
    r = TinyInfer();
    r.mutable_infer()->set_source("street");
    s = Submit(*stub, r, &job, kAlice);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND) << s.error_message();
    EXPECT_THAT(s.error_message(), HasSubstr("images/street"));
    EXPECT_THAT(s.error_message(), Not(HasSubstr(dir_->path())));
  }
  ExpectNoJobs();
}

// Item 11, the job's own error: a job that fails on a file in the daemon's images directory
// reports it by its short name to a remote caller, in GetJob and in WatchJob's last event.
TEST_F(DaemonHostileInput, FailedJobErrorsShowNoDaemonPaths) {
  fs::create_directories(dirs_->images + "/broken");
  WriteFile(dirs_->images + "/broken/x.jpg", "this is not a JPEG", 0644);
  v1::SubmitJobRequest r = TinyInfer();
  r.mutable_infer()->set_source("broken");
  v1::Job job;
  ASSERT_TRUE(Submit(*stub_, r, &job, kAlice).ok());
  ASSERT_TRUE(WaitTerminal(*stub_, job.id(), &job, seconds(180), kAlice));
  EXPECT_EQ(job.state(), v1::JOB_STATE_FAILED);
  EXPECT_THAT(job.error(), HasSubstr("images/broken"));
  EXPECT_THAT(job.error(), Not(HasSubstr(dir_->path())));
  std::vector<v1::JobEvent> events;
  ASSERT_TRUE(Watch(*stub_, job.id(), 0, &events, kAlice).ok());
  ASSERT_FALSE(events.empty());
  for (const v1::JobEvent& e : events) EXPECT_THAT(e.message(), Not(HasSubstr(dir_->path())));
  auto ctx = Ctx(kAlice);
  v1::CancelJobRequest cancel;
  cancel.set_job_id(job.id());
  ASSERT_TRUE(stub_->CancelJob(ctx.get(), cancel, &job).ok());  // terminal: unchanged
}

// A valid 24-bit BMP of `width` x `height` (every pixel grey): an ordinary image, written
// without an image library.
std::string GreyBmp(int width, int height) {
  const int row = (width * 3 + 3) / 4 * 4;
  const int pixels = row * height;
  std::string bmp(54 + static_cast<size_t>(pixels), '\x80');
  auto le = [&](size_t at, uint32_t v, size_t bytes) {
    for (size_t i = 0; i < bytes; ++i) bmp[at + i] = static_cast<char>((v >> (8 * i)) & 0xFF);
  };
  bmp[0] = 'B';
  bmp[1] = 'M';
  le(2, static_cast<uint32_t>(bmp.size()), 4);
  le(6, 0, 4);
  le(10, 54, 4);   // pixel data offset
  le(14, 40, 4);   // BITMAPINFOHEADER
  le(18, static_cast<uint32_t>(width), 4);
  le(22, static_cast<uint32_t>(height), 4);
  le(26, 1, 2);    // planes
  le(28, 24, 2);   // bits per pixel
  le(30, 0, 4);    // no compression
  le(34, static_cast<uint32_t>(pixels), 4);
  le(38, 2835, 4);
  le(42, 2835, 4);
  le(46, 0, 4);
  le(50, 0, 4);
  return bmp;
}

// Issue 40 A.9: the suite's daemon runs with --max-decoded-pixels 1024: an ordinary 40 x 30
// image fails its job, which names the image's size, the bound and the option that raises it.
TEST_F(DaemonHostileInput, AnImageOverTheDaemonsPixelBoundFailsTheJobNamingTheOption) {
  fs::create_directories(dirs_->images + "/ordinary");
  WriteFile(dirs_->images + "/ordinary/a.bmp", GreyBmp(40, 30), 0644);
  v1::SubmitJobRequest r = TinyInfer();
  r.mutable_infer()->set_source("ordinary");
  v1::Job job;
  const grpc::Status submitted = Submit(*stub_, r, &job, kAlice);
  ASSERT_TRUE(submitted.ok()) << submitted.error_message();
  ASSERT_TRUE(WaitTerminal(*stub_, job.id(), &job, seconds(180), kAlice));
  EXPECT_EQ(job.state(), v1::JOB_STATE_FAILED);
  EXPECT_THAT(job.error(), HasSubstr("is 40 x 30 pixels, over the bound of 1024 decoded pixels "
                                     "(32 x 32)"));
  EXPECT_THAT(job.error(), HasSubstr("limits.max_decoded_pixels (--max-decoded-pixels)"));
}

// Item 11, the other side: on a private daemon (allow_local_paths) its own user keeps the full
// paths, as before; a token user on the same socket does not.
TEST(DaemonHostileInputPrivate, TheDaemonsOwnUserKeepsFullPaths) {
  TempDir dir;
  DaemonDirs dirs(dir.path());
  std::vector<std::string> flags = dirs.Flags();
  flags.push_back("--allow-local-paths");
  auto daemon = DaemonProcess::Start(flags, dir.File("daemon.log"));
  ASSERT_TRUE(daemon->WaitServing()) << ReadFile(dir.File("daemon.log"));
  auto stub = v1::ProfilerService::NewStub(UnixChannel(dirs.socket));
  v1::SubmitJobRequest r = TinyInfer();
  r.mutable_infer()->mutable_model()->set_weights("missing.pt");
  v1::Job job;
  const grpc::Status s = Submit(*stub, r, &job);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(s.error_message(), HasSubstr(dirs.models + "/missing.pt"));
}

}  // namespace
}  // namespace libreyolo::daemon_test
