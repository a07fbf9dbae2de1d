// The daemon's metrics in the Prometheus text exposition format (version 0.0.4), served by the
// GetMetrics RPC and written to a node_exporter textfile.
#ifndef LIBREYOLO_SERVER_DAEMON_RPC_PROMETHEUS_H_
#define LIBREYOLO_SERVER_DAEMON_RPC_PROMETHEUS_H_

#include <string>

#include "absl/status/status.h"
#include "server/daemon/jobs/metrics_snapshot.h"

namespace libreyolo::daemon {

// libreyolod_queue_depth{device}, libreyolod_jobs{state}, libreyolod_job_duration_seconds
// (histogram, buckets 1..3600 s){kind}, libreyolod_device_memory_used_bytes{device}, ...
// with # HELP and # TYPE lines; label values escaped.
std::string RenderPrometheus(const MetricsSnapshot& snapshot);

// Writes atomically (temp + rename in the same directory), as node_exporter expects.
absl::Status WriteMetricsTextfile(const std::string& path, const std::string& text);

}  // namespace libreyolo::daemon

#endif  // LIBREYOLO_SERVER_DAEMON_RPC_PROMETHEUS_H_
