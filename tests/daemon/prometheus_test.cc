// The daemon's Prometheus output: the rendering and the atomically replaced textfile.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "server/daemon/rpc/prometheus.h"
#include "tests/daemon/security_test_util.h"

namespace libreyolo::daemon {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using testing_util::ReadFile;
using testing_util::TempDir;

// ---- Prometheus -------------------------------------------------------------------------------

TEST(PrometheusTest, GoldenRendering) {
  MetricsSnapshot s;
  s.devices = {{"cuda:0", 2, 1024, 4096, true}, {"cpu", 0, -1, -1, false}};
  s.jobs_by_state = {{"queued", 2}, {"running", 1}, {"succeeded", 7}};
  s.job_durations_s = {{"infer", {0.5, 12, 4000}}};
  s.jobs_submitted_total = 10;
  s.worker_restarts_total = 2;
  s.rpc_errors_total = 3;
  s.watchers = 1;
  s.reads_in_flight = 2;
  s.downloads_in_flight = 3;
  s.resident_memory_bytes = 123456789;
  s.uptime_s = 61.25;
  EXPECT_EQ(RenderPrometheus(s),
            R"(# HELP libreyolod_uptime_seconds Seconds since the daemon started.
# TYPE libreyolod_uptime_seconds gauge
libreyolod_uptime_seconds 61.25
# HELP libreyolod_queue_depth Jobs queued on a device, not yet running.
# TYPE libreyolod_queue_depth gauge
libreyolod_queue_depth{device="cuda:0"} 2
libreyolod_queue_depth{device="cpu"} 0
# HELP libreyolod_device_busy 1 while a job runs on the device, else 0.
# TYPE libreyolod_device_busy gauge
libreyolod_device_busy{device="cuda:0"} 1
libreyolod_device_busy{device="cpu"} 0
# HELP libreyolod_device_memory_used_bytes Device memory in use, bytes.
# TYPE libreyolod_device_memory_used_bytes gauge
libreyolod_device_memory_used_bytes{device="cuda:0"} 1024
# HELP libreyolod_device_memory_total_bytes Device memory in total, bytes.
# TYPE libreyolod_device_memory_total_bytes gauge
libreyolod_device_memory_total_bytes{device="cuda:0"} 4096
# HELP libreyolod_jobs Jobs known to the daemon, by state.
# TYPE libreyolod_jobs gauge
libreyolod_jobs{state="queued"} 2
libreyolod_jobs{state="running"} 1
libreyolod_jobs{state="succeeded"} 7
# HELP libreyolod_job_duration_seconds Wall time of finished jobs from start to end, seconds, by kind.
# TYPE libreyolod_job_duration_seconds histogram
libreyolod_job_duration_seconds_bucket{kind="infer",le="1"} 1
libreyolod_job_duration_seconds_bucket{kind="infer",le="2.5"} 1
libreyolod_job_duration_seconds_bucket{kind="infer",le="5"} 1
libreyolod_job_duration_seconds_bucket{kind="infer",le="10"} 1
libreyolod_job_duration_seconds_bucket{kind="infer",le="30"} 2
libreyolod_job_duration_seconds_bucket{kind="infer",le="60"} 2
libreyolod_job_duration_seconds_bucket{kind="infer",le="120"} 2
libreyolod_job_duration_seconds_bucket{kind="infer",le="300"} 2
libreyolod_job_duration_seconds_bucket{kind="infer",le="600"} 2
libreyolod_job_duration_seconds_bucket{kind="infer",le="1800"} 2
libreyolod_job_duration_seconds_bucket{kind="infer",le="3600"} 2
libreyolod_job_duration_seconds_bucket{kind="infer",le="+Inf"} 3
libreyolod_job_duration_seconds_sum{kind="infer"} 4012.5
libreyolod_job_duration_seconds_count{kind="infer"} 3
# HELP libreyolod_jobs_submitted_total Jobs accepted by SubmitJob.
# TYPE libreyolod_jobs_submitted_total counter
libreyolod_jobs_submitted_total 10
# HELP libreyolod_rpc_errors_total RPCs answered with an error status.
# TYPE libreyolod_rpc_errors_total counter
libreyolod_rpc_errors_total 3
# HELP libreyolod_worker_restarts_total Engine worker processes that died, each replaced (a crash, an exit, a death before ready, a kill after the cancel grace, a lost CUDA context).
# TYPE libreyolod_worker_restarts_total counter
libreyolod_worker_restarts_total 2
# HELP libreyolod_watchers Open WatchJob streams.
# TYPE libreyolod_watchers gauge
libreyolod_watchers 1
# HELP libreyolod_reads_in_flight Reader calls (Summary, Get, Phases, Kernels, Ops, Compare, WhatIf) in flight.
# TYPE libreyolod_reads_in_flight gauge
libreyolod_reads_in_flight 2
# HELP libreyolod_downloads_in_flight ReadArtifact streams in flight.
# TYPE libreyolod_downloads_in_flight gauge
libreyolod_downloads_in_flight 3
# HELP libreyolod_store_ok 1 while every job state change is durable; 0 while the daemon accepts no work because one could not be written (a full state filesystem).
# TYPE libreyolod_store_ok gauge
libreyolod_store_ok 1
# HELP libreyolod_store_write_failures_total Writes of job records and events that failed.
# TYPE libreyolod_store_write_failures_total counter
libreyolod_store_write_failures_total 0
# HELP libreyolod_artifacts_corrupt_total Stored artifacts found not to match their recorded SHA-256 (served or scrubbed).
# TYPE libreyolod_artifacts_corrupt_total counter
libreyolod_artifacts_corrupt_total 0
# HELP libreyolod_jobs_expired_total Finished jobs deleted by retention (max_age_hours, max_jobs).
# TYPE libreyolod_jobs_expired_total counter
libreyolod_jobs_expired_total 0
# HELP libreyolod_jobs_deleted_total Finished jobs deleted by their owners or an admin (DeleteJob).
# TYPE libreyolod_jobs_deleted_total counter
libreyolod_jobs_deleted_total 0
# HELP libreyolod_resident_memory_bytes Resident memory of the daemon process, bytes.
# TYPE libreyolod_resident_memory_bytes gauge
libreyolod_resident_memory_bytes 123456789
)");
}

TEST(PrometheusTest, EmptySnapshotHasOnlyTheScalars) {
  const std::string text = RenderPrometheus(MetricsSnapshot{});
  EXPECT_THAT(text, HasSubstr("libreyolod_uptime_seconds 0\n"));
  EXPECT_THAT(text, HasSubstr("libreyolod_jobs_submitted_total 0\n"));
  EXPECT_THAT(text, Not(HasSubstr("queue_depth")));
  EXPECT_THAT(text, Not(HasSubstr("resident_memory")));
  EXPECT_THAT(text, Not(HasSubstr("histogram")));
}

TEST(PrometheusTest, LabelValuesAreEscaped) {
  MetricsSnapshot s;
  s.devices = {{"a\\b\"c\nd", 1, -1, -1, false}};
  EXPECT_THAT(RenderPrometheus(s),
              HasSubstr("libreyolod_queue_depth{device=\"a\\\\b\\\"c\\nd\"} 1\n"));
  s.job_durations_s = {{"we\"ird", {}}};
  const std::string text = RenderPrometheus(s);
  EXPECT_THAT(
      text, HasSubstr("libreyolod_job_duration_seconds_bucket{kind=\"we\\\"ird\",le=\"+Inf\"} 0"));
  EXPECT_THAT(text, HasSubstr("libreyolod_job_duration_seconds_sum{kind=\"we\\\"ird\"} 0\n"));
}

TEST(PrometheusTest, TextfileIsReplacedAtomically) {
  TempDir dir;
  const std::string path = dir.File("libreyolod.prom");
  ASSERT_TRUE(WriteMetricsTextfile(path, "old 1\n").ok());
  const absl::Status status = WriteMetricsTextfile(path, "new 2\n");
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(ReadFile(path), "new 2\n");
  struct stat info {};
  ASSERT_EQ(stat(path.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0644u);
  int files = 0;
  for (const auto& entry : fs::directory_iterator(dir.path())) {
    ++files;
    EXPECT_EQ(entry.path().filename(), "libreyolod.prom");  // no temp file left behind
  }
  EXPECT_EQ(files, 1);

  const absl::Status missing = WriteMetricsTextfile(dir.File("no/such/dir.prom"), "x 1\n");
  EXPECT_EQ(missing.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(missing.message()), HasSubstr("no/such/dir.prom"));
}

}  // namespace
}  // namespace libreyolo::daemon
