// Everything the daemon's metrics report (GetMetrics, the node_exporter textfile), as one plain
// snapshot: the job manager fills the jobs' and devices' part (JobManager::Metrics), the
// service adds its own (ProfilerServiceImpl::Metrics), and rpc/prometheus.h renders it. Here,
// beside the job manager, so that jobs/ needs nothing of rpc/.
#ifndef LIBREYOLO_SERVER_DAEMON_JOBS_METRICS_SNAPSHOT_H_
#define LIBREYOLO_SERVER_DAEMON_JOBS_METRICS_SNAPSHOT_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace libreyolo::daemon {

struct DeviceGauge {
  std::string device;         // "cpu", "cuda:0"
  int64_t queue_depth = 0;
  int64_t memory_used_bytes = -1;   // -1 = unknown (not exported)
  int64_t memory_total_bytes = -1;
  bool busy = false;
};

struct MetricsSnapshot {
  std::vector<DeviceGauge> devices;
  std::map<std::string, int64_t> jobs_by_state;  // "queued", "running", "succeeded", ...
  // Finished job durations (seconds) by kind ("infer", "run") for a histogram.
  std::map<std::string, std::vector<double>> job_durations_s;
  int64_t jobs_submitted_total = 0;
  int64_t rpc_errors_total = 0;
  int64_t worker_restarts_total = 0;  // engine worker deaths, each replaced (JobRunner)
  int64_t watchers = 0;
  int64_t reads_in_flight = 0;      // reader calls
  int64_t downloads_in_flight = 0;  // ReadArtifact streams
  // False while the daemon is out of service because a job's state could not be made durable
  // (a full state filesystem); failed store writes since the start.
  bool store_ok = true;
  int64_t store_write_failures_total = 0;
  int64_t artifacts_corrupt_total = 0;  // served or scrubbed artifacts whose digest differed
  int64_t jobs_expired_total = 0;       // finished jobs deleted by retention
  int64_t jobs_deleted_total = 0;       // finished jobs deleted by their owners (DeleteJob)
  int64_t resident_memory_bytes = -1;
  double uptime_s = 0;
};

}  // namespace libreyolo::daemon

#endif  // LIBREYOLO_SERVER_DAEMON_JOBS_METRICS_SNAPSHOT_H_
