// Issue 39 §4, the throw injection of the job workers' catch-all (common/status/thread_guard.h,
// jobs/job_manager_dispatch.cc RunOne): a runner that throws (JobRunner::Run must not, but a
// std::bad_alloc or a bug can) fails that job with the exception's text and one log line naming
// the thread, where it used to end libreyolod (std::terminate); the device's worker keeps
// running jobs.
#include <atomic>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/daemon/jobs/job_manager.h"
#include "tests/daemon/job_manager_test_util.h"
#include "tests/support/test_files.h"

namespace libreyolo::daemon {
namespace {

using ::testing::HasSubstr;

// Throws for the job labelled name=throw, succeeds for the others.
class ThrowingRunner : public JobRunner {
 public:
  RunOutcome Run(const v1::Job& job, const ProgressFn&, const engine::CancelToken&) override {
    if (job.request().labels().at("name") == "throw") throw std::runtime_error("injected\nthrow");
    RunOutcome out;
    out.step_ms = 1;
    out.img_per_s = 1;
    out.bound = "compute";
    return out;
  }
};

TEST(JobWorkerThrow, ARunnerThatThrowsFailsTheJobAndTheWorkerRunsTheNext) {
  test::TempDir tmp("lyjwt");
  std::unique_ptr<JobStore> store = test::OpenStore(tmp.path());
  ASSERT_NE(store, nullptr);
  ThrowingRunner runner;
  JobManager jobs(store.get(), &runner, {"cpu"}, Limits(), Retention());
  jobs.Start();
  testing::internal::CaptureStderr();
  auto thrown = jobs.Submit(test::Alice(), test::InferRequest("throw"), "cpu");
  ASSERT_TRUE(thrown.ok()) << thrown.status();
  const v1::Job failed = test::WaitTerminal(jobs, test::Alice(), thrown->id());
  const std::string logged = testing::internal::GetCapturedStderr();
  EXPECT_EQ(failed.state(), v1::JOB_STATE_FAILED);
  EXPECT_THAT(failed.error(), HasSubstr("libreyolod: the job threw: injected\\nthrow"));
  EXPECT_THAT(logged, HasSubstr("libreyolo: thread 'job worker (job " + thrown->id() +
                                ")' threw: injected\\nthrow; the job fails\n"));
  auto next = jobs.Submit(test::Alice(), test::InferRequest("next"), "cpu");
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_EQ(test::WaitTerminal(jobs, test::Alice(), next->id()).state(),
            v1::JOB_STATE_SUCCEEDED)
      << "the device's worker died with the exception";
}

}  // namespace
}  // namespace libreyolo::daemon
