// JobManager's admission seam as its own unit (server/daemon/jobs/admission.h): each refusal
// with its status code and message (the way out included), and the accept path, over explicit
// inputs: no daemon, no store, no job thread.
#include "server/daemon/jobs/admission.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace libreyolo::daemon {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

v1::Job MakeJob(const std::string& owner, v1::JobState state, const std::string& device,
                const std::vector<std::string>& ranks = {}) {
  v1::Job job;
  job.set_owner(owner);
  job.set_state(state);
  job.set_device(ranks.empty() ? device : ranks.front());
  for (const std::string& r : ranks) job.add_devices(r);
  return job;
}

TEST(AdmissionTest, ADrainingManagerRefusesWithTheWayOut) {
  EXPECT_TRUE(Admission::CheckAccepting(true).ok());
  const absl::Status s = Admission::CheckAccepting(false);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(s.message(), "libreyolod is shutting down; submit again after it restarts");
}

TEST(AdmissionTest, OutOfServiceNamesTheFailedWrite) {
  EXPECT_TRUE(Admission::CheckInService("").ok());
  const absl::Status s = Admission::CheckInService("write job.pb: No space left on device");
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(s.message(),
            "libreyolod accepts no jobs: it could not record a job's state durably (write job.pb: "
            "No space left on device); an admin must free space on the state filesystem (it "
            "resumes by itself)");
}

TEST(AdmissionTest, ServedDevicesAreAccepted) {
  const std::vector<std::string> served = {"cuda:0", "cuda:1", "cpu", "attach"};
  for (const std::string& d : served) EXPECT_TRUE(Admission::CheckDevice(d, served).ok()) << d;
}

TEST(AdmissionTest, AnUnservedDeviceNamesWhatTheDaemonHas) {
  const absl::Status gpus = Admission::CheckDevice("cuda:3", {"cuda:0", "cuda:1", "attach"});
  EXPECT_EQ(gpus.code(), absl::StatusCode::kInvalidArgument);
  // The attach lane is not a device a job may name: not listed.
  EXPECT_EQ(gpus.message(),
            "--device (model.device): cuda:3 is not served by this daemon (it has: cuda:0, "
            "cuda:1); use --device cuda:0");
  // The default --device 0 on a host without a GPU: the way out is the CPU.
  const absl::Status cpu_only = Admission::CheckDevice("cuda:0", {"cpu", "cpu:1"});
  EXPECT_EQ(cpu_only.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(cpu_only.message(),
            "--device (model.device): cuda:0 is not served by this daemon (it has: cpu, cpu:1); "
            "it serves no GPU: use --device cpu");
  const absl::Status none = Admission::CheckDevice("cpu", {});
  EXPECT_EQ(none.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(none.message(), "--device (model.device): cpu is not served by this daemon (it has: )");
}

TEST(AdmissionTest, TheAttachLaneWithoutAnEndpointIsAPrecondition) {
  const absl::Status s = Admission::CheckDevice("attach", {"cuda:0", "cpu"});
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(),
            "this daemon serves no attach endpoint (attach_dir): it traces no running process");
}

TEST(AdmissionTest, AReusedRequestIdMustComeWithTheSameRequest) {
  v1::SubmitJobRequest request;
  request.set_request_id("retry-1");
  request.mutable_infer()->set_imgsz(64);
  v1::Job earlier;
  earlier.set_id("20261206-00000000000000aa");
  *earlier.mutable_request() = request;
  EXPECT_TRUE(Admission::CheckSameRequest(earlier, request).ok());
  v1::SubmitJobRequest other = request;
  other.mutable_infer()->set_imgsz(128);
  const absl::Status s = Admission::CheckSameRequest(earlier, other);
  EXPECT_EQ(s.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(s.message(),
            "request_id 'retry-1' was used for job 20261206-00000000000000aa with a different "
            "request; use a new request_id");
  // A hostile id is quoted as an excerpt, not echoed whole.
  other.set_request_id(std::string(500, 'x'));
  const absl::Status long_id = Admission::CheckSameRequest(earlier, other);
  EXPECT_EQ(long_id.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_LT(long_id.message().size(), 300u);
}

TEST(AdmissionTest, CountsTheQueueOfTheDeviceAndTheUsersActiveJobs) {
  const std::vector<v1::Job> jobs = {
      MakeJob("alice", v1::JOB_STATE_QUEUED, "cuda:0"),
      MakeJob("alice", v1::JOB_STATE_RUNNING, "cuda:0"),  // running: not in the queue
      MakeJob("bob", v1::JOB_STATE_QUEUED, "", {"cuda:1", "cuda:0"}),  // a gang waits in both
      MakeJob("carol", v1::JOB_STATE_QUEUED, "cuda:1"),
      MakeJob("dave", v1::JOB_STATE_SUCCEEDED, "cuda:0"),  // finished: counts for nothing
  };
  std::vector<const v1::Job*> all;
  for (const v1::Job& j : jobs) all.push_back(&j);
  const Admission::Load load = Admission::Count(all, "alice", "cuda:0");
  EXPECT_EQ(load.queued_on_device, 2);
  EXPECT_EQ(load.user_active, 2);
  EXPECT_THAT(load.active_users, UnorderedElementsAre("alice", "bob", "carol"));
  const Admission::Load other = Admission::Count(all, "erin", "cpu");
  EXPECT_EQ(other.queued_on_device, 0);
  EXPECT_EQ(other.user_active, 0);
}

TEST(AdmissionTest, QueueLimitsRefuseAFullQueueThenABusyUser) {
  Limits limits;
  limits.max_queue_length = 3;
  limits.max_jobs_per_user = 2;
  Admission::Load load;
  load.queued_on_device = 2;
  load.user_active = 1;
  EXPECT_TRUE(Admission::CheckQueueLimits("alice", "cuda:0", load, limits).ok());
  load.user_active = 2;
  const absl::Status user = Admission::CheckQueueLimits("alice", "cuda:0", load, limits);
  EXPECT_EQ(user.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(user.message(),
            "alice already has 2 queued or running jobs (limit max_jobs_per_user 2); wait or "
            "cancel one");
  load.queued_on_device = 3;  // both reached: the queue is named
  const absl::Status queue = Admission::CheckQueueLimits("alice", "cuda:0", load, limits);
  EXPECT_EQ(queue.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(queue.message(),
            "the queue of cuda:0 is full (3 jobs, limit max_queue_length 3); wait for jobs to "
            "finish or cancel some");
}

TEST(AdmissionTest, RanksArePlacedForADataParallelJobOnly) {
  const std::vector<std::string> served = {"cuda:0", "cuda:1", "cpu"};
  v1::SubmitJobRequest infer;
  infer.mutable_infer()->set_imgsz(64);
  auto none = Admission::Ranks(infer, "cuda:0", served);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_THAT(*none, IsEmpty());
  v1::SubmitJobRequest run;
  run.mutable_run()->mutable_data_parallel()->set_nproc(2);
  auto two = Admission::Ranks(run, "cuda:0", served);
  ASSERT_TRUE(two.ok()) << two.status();
  EXPECT_THAT(*two, ElementsAre("cuda:0", "cuda:1"));
  run.mutable_run()->mutable_data_parallel()->set_nproc(3);
  auto three = Admission::Ranks(run, "cuda:0", served);
  EXPECT_EQ(three.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(three.status().message(),
              HasSubstr("3 ranks, but this daemon has 2 CUDA slots (cuda:0, cuda:1)"));
}

TEST(AdmissionTest, AnUnrecordedJobIsRefusedByWhyTheWriteFailed) {
  for (const absl::Status& full : {absl::ResourceExhaustedError("No space left on device"),
                                   absl::OutOfRangeError("File too large")}) {
    const absl::Status s = Admission::RefuseUnrecorded(full);
    EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << full;
    EXPECT_EQ(s.message(), absl::StrCat("the job was not accepted: libreyolod cannot record it "
                                        "durably (",
                                        full.message(),
                                        "); the state filesystem is full: an admin must free "
                                        "space there"));
  }
  const absl::Status other = Admission::RefuseUnrecorded(absl::UnavailableError("EIO"));
  EXPECT_EQ(other.code(), absl::StatusCode::kInternal);
  EXPECT_EQ(other.message(), "the job was not accepted: libreyolod cannot record it durably (EIO)");
}

}  // namespace
}  // namespace libreyolo::daemon
