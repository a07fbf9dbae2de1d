// The daemon's metrics in the Prometheus text exposition format (version 0.0.4), served by the
// GetMetrics RPC and written to a node_exporter textfile.
#ifndef LIBREYOLO_SERVER_DAEMON_RPC_PROMETHEUS_H_
#define LIBREYOLO_SERVER_DAEMON_RPC_PROMETHEUS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"

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

// libreyolod_queue_depth{device}, libreyolod_jobs{state}, libreyolod_job_duration_seconds
// (histogram, buckets 1..3600 s){kind}, libreyolod_device_memory_used_bytes{device}, ...
// with # HELP and # TYPE lines; label values escaped.
std::string RenderPrometheus(const MetricsSnapshot& snapshot);

// Writes atomically (temp + rename in the same directory), as node_exporter expects.
absl::Status WriteMetricsTextfile(const std::string& path, const std::string& text);

}  // namespace libreyolo::daemon

#endif  // LIBREYOLO_SERVER_DAEMON_RPC_PROMETHEUS_H_
