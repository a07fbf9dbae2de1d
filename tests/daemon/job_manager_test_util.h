// The JobManager tests' shared pieces, one copy each: who submits (User), what (InferRequest),
// a cancelled run's outcome (CancelledOutcome), when a job is over (Terminal), the bounded real-time poll for what the job threads do on their
// own (Eventually, WaitTerminal), a job's events (Events) and the store in a test's directory
// (OpenStore, with tests/support/test_files.h's TempDir). The polls bound how long a test waits;
// no test asserts on the time they take.
#ifndef LIBREYOLO_TESTS_DAEMON_JOB_MANAGER_TEST_UTIL_H_
#define LIBREYOLO_TESTS_DAEMON_JOB_MANAGER_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "server/daemon/jobs/job_manager.h"
#include "server/daemon/store/job_store.h"

namespace libreyolo::test {

using daemon::Identity;
using daemon::JobManager;
using daemon::JobStore;
namespace v1 = ::libreyolo::profiler::v1;

inline Identity User(const std::string& name, bool admin = false) {
  Identity id;
  id.user = name;
  id.admin = admin;
  return id;
}

inline Identity Alice() { return User("alice"); }

// An inference request at imgsz 64 labelled name=`name` (no label when empty).
inline v1::SubmitJobRequest InferRequest(const std::string& name = "", int priority = 0) {
  v1::SubmitJobRequest r;
  r.mutable_infer()->set_imgsz(64);
  if (!name.empty()) (*r.mutable_labels())["name"] = name;
  r.set_priority(priority);
  return r;
}

// What a scripted runner returns for a job cancelled while it ran (fields by name, so that
// RunOutcome may grow without touching the tests).
inline daemon::RunOutcome CancelledOutcome(int exit_code) {
  daemon::RunOutcome out;
  out.status = absl::CancelledError("cancelled");
  out.exit_code = exit_code;
  return out;
}

inline bool Terminal(v1::JobState s) {
  return s == v1::JOB_STATE_SUCCEEDED || s == v1::JOB_STATE_FAILED || s == v1::JOB_STATE_CANCELLED;
}

// Polls (real time, at most `limit`) until `done`; false when it never came. For what the job
// threads do on their own; a test's times come from its ManualClock, not from this.
inline bool Eventually(const std::function<bool()>& done,
                       std::chrono::milliseconds limit = std::chrono::seconds(20)) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

// The job's record once it is terminal; a failure (and the last record seen) when it is not
// within 20 s.
inline v1::Job WaitTerminal(JobManager& jobs, const Identity& who, const std::string& id) {
  v1::Job last;
  const bool ended = Eventually([&] {
    absl::StatusOr<v1::Job> j = jobs.Get(who, id);
    if (!j.ok()) return false;
    last = *std::move(j);
    return Terminal(last.state());
  });
  EXPECT_TRUE(ended) << "job " << id << " is still " << v1::JobState_Name(last.state());
  return last;
}

// Every event of job `id` from sequence `from` on, as Watch delivers them to a watcher that
// stops at the end of the record.
inline std::vector<v1::JobEvent> Events(JobManager& jobs, const Identity& who,
                                        const std::string& id, int64_t from = 1) {
  std::vector<v1::JobEvent> out;
  const absl::Status watched = jobs.Watch(
      who, id, from,
      [&](const v1::JobEvent& e) {
        out.push_back(e);
        return true;
      },
      [] { return false; });
  EXPECT_TRUE(watched.ok()) << watched;
  return out;
}

// The job store in `dir`/state and `dir`/store; null (and a test failure) when it cannot open.
inline std::unique_ptr<JobStore> OpenStore(const std::string& dir) {
  absl::StatusOr<std::unique_ptr<JobStore>> store = JobStore::Open(dir + "/state", dir + "/store");
  EXPECT_TRUE(store.ok()) << store.status();
  return store.ok() ? *std::move(store) : nullptr;
}

}  // namespace libreyolo::test

#endif  // LIBREYOLO_TESTS_DAEMON_JOB_MANAGER_TEST_UTIL_H_
