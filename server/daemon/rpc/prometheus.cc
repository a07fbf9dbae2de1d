#include "server/daemon/rpc/prometheus.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/io/atomic_file.h"

namespace libreyolo::daemon {
namespace {

// Upper bounds of the job duration histogram, seconds (+Inf is implied).
constexpr std::array<double, 11> kDurationBuckets = {1,   2.5, 5,   10,   30,  60,
                                                     120, 300, 600, 1800, 3600};

// A sample value: shortest round-trip form ("0.5", "1e+21"), and Prometheus' spellings of
// infinities and NaN.
std::string FormatValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  char buffer[32];
  const auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  return std::string(buffer, result.ptr);
}

std::string FormatValue(int64_t value) { return absl::StrCat(value); }

// Label values escape backslash, double quote and line feed.
std::string EscapeLabelValue(absl::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (const char c : value) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
        break;
      case '\n':
        out += "\\n";
        break;
      default:
        out += c;
    }
  }
  return out;
}

class Writer {
 public:
  // "# HELP" and "# TYPE" of a family; written once, before its first sample.
  void Family(absl::string_view name, absl::string_view type, absl::string_view help) {
    absl::StrAppend(&text_, "# HELP ", name, " ", help, "\n# TYPE ", name, " ", type, "\n");
  }
  void Sample(absl::string_view name, absl::string_view label, absl::string_view label_value,
              const std::string& value) {
    if (label.empty()) {
      absl::StrAppend(&text_, name, " ", value, "\n");
    } else {
      absl::StrAppend(&text_, name, "{", label, "=\"", EscapeLabelValue(label_value), "\"} ", value,
                      "\n");
    }
  }
  // A histogram series with one label besides `le`.
  void Histogram(absl::string_view name, absl::string_view label, absl::string_view label_value,
                 const std::vector<double>& values) {
    const std::string escaped = EscapeLabelValue(label_value);
    double sum = 0;
    for (const double v : values) sum += v;
    for (const double bound : kDurationBuckets) {
      int64_t count = 0;
      for (const double v : values) count += v <= bound ? 1 : 0;
      absl::StrAppend(&text_, name, "_bucket{", label, "=\"", escaped, "\",le=\"",
                      FormatValue(bound), "\"} ", count, "\n");
    }
    const int64_t total = static_cast<int64_t>(values.size());
    absl::StrAppend(&text_, name, "_bucket{", label, "=\"", escaped, "\",le=\"+Inf\"} ", total,
                    "\n");
    absl::StrAppend(&text_, name, "_sum{", label, "=\"", escaped, "\"} ", FormatValue(sum), "\n");
    absl::StrAppend(&text_, name, "_count{", label, "=\"", escaped, "\"} ", total, "\n");
  }
  std::string Take() { return std::move(text_); }

 private:
  std::string text_;
};

}  // namespace

std::string RenderPrometheus(const MetricsSnapshot& snapshot) {
  Writer out;
  out.Family("libreyolod_uptime_seconds", "gauge", "Seconds since the daemon started.");
  out.Sample("libreyolod_uptime_seconds", "", "", FormatValue(snapshot.uptime_s));

  if (!snapshot.devices.empty()) {
    out.Family("libreyolod_queue_depth", "gauge", "Jobs queued on a device, not yet running.");
    for (const DeviceGauge& d : snapshot.devices) {
      out.Sample("libreyolod_queue_depth", "device", d.device, FormatValue(d.queue_depth));
    }
    out.Family("libreyolod_device_busy", "gauge", "1 while a job runs on the device, else 0.");
    for (const DeviceGauge& d : snapshot.devices) {
      out.Sample("libreyolod_device_busy", "device", d.device, d.busy ? "1" : "0");
    }
  }
  // Memory families only for devices that report it (-1 = unknown).
  const struct {
    const char* name;
    const char* help;
    int64_t DeviceGauge::*field;
  } memory[] = {
      {"libreyolod_device_memory_used_bytes", "Device memory in use, bytes.",
       &DeviceGauge::memory_used_bytes},
      {"libreyolod_device_memory_total_bytes", "Device memory in total, bytes.",
       &DeviceGauge::memory_total_bytes},
  };
  for (const auto& family : memory) {
    bool any = false;
    for (const DeviceGauge& d : snapshot.devices) {
      if (d.*family.field < 0) continue;
      if (!any) out.Family(family.name, "gauge", family.help);
      any = true;
      out.Sample(family.name, "device", d.device, FormatValue(d.*family.field));
    }
  }

  if (!snapshot.jobs_by_state.empty()) {
    out.Family("libreyolod_jobs", "gauge", "Jobs known to the daemon, by state.");
    for (const auto& [state, count] : snapshot.jobs_by_state) {
      out.Sample("libreyolod_jobs", "state", state, FormatValue(count));
    }
  }
  if (!snapshot.job_durations_s.empty()) {
    out.Family("libreyolod_job_duration_seconds", "histogram",
               "Wall time of finished jobs from start to end, seconds, by kind.");
    for (const auto& [kind, durations] : snapshot.job_durations_s) {
      out.Histogram("libreyolod_job_duration_seconds", "kind", kind, durations);
    }
  }
  out.Family("libreyolod_jobs_submitted_total", "counter", "Jobs accepted by SubmitJob.");
  out.Sample("libreyolod_jobs_submitted_total", "", "", FormatValue(snapshot.jobs_submitted_total));
  out.Family("libreyolod_rpc_errors_total", "counter", "RPCs answered with an error status.");
  out.Sample("libreyolod_rpc_errors_total", "", "", FormatValue(snapshot.rpc_errors_total));
  out.Family("libreyolod_worker_restarts_total", "counter",
             "Engine worker processes that died, each replaced (a crash, an exit, a death before "
             "ready, a kill after the cancel grace, a lost CUDA context).");
  out.Sample("libreyolod_worker_restarts_total", "", "", FormatValue(snapshot.worker_restarts_total));
  out.Family("libreyolod_watchers", "gauge", "Open WatchJob streams.");
  out.Sample("libreyolod_watchers", "", "", FormatValue(snapshot.watchers));
  out.Family("libreyolod_reads_in_flight", "gauge",
             "Reader calls (Summary, Get, Phases, Kernels, Ops, Compare, WhatIf) in flight.");
  out.Sample("libreyolod_reads_in_flight", "", "", FormatValue(snapshot.reads_in_flight));
  out.Family("libreyolod_downloads_in_flight", "gauge", "ReadArtifact streams in flight.");
  out.Sample("libreyolod_downloads_in_flight", "", "", FormatValue(snapshot.downloads_in_flight));
  out.Family("libreyolod_store_ok", "gauge",
             "1 while every job state change is durable; 0 while the daemon accepts no work "
             "because one could not be written (a full state filesystem).");
  out.Sample("libreyolod_store_ok", "", "", FormatValue(int64_t{snapshot.store_ok ? 1 : 0}));
  out.Family("libreyolod_store_write_failures_total", "counter",
             "Writes of job records and events that failed.");
  out.Sample("libreyolod_store_write_failures_total", "", "",
             FormatValue(snapshot.store_write_failures_total));
  out.Family("libreyolod_artifacts_corrupt_total", "counter",
             "Stored artifacts found not to match their recorded SHA-256 (served or scrubbed).");
  out.Sample("libreyolod_artifacts_corrupt_total", "", "",
             FormatValue(snapshot.artifacts_corrupt_total));
  out.Family("libreyolod_jobs_expired_total", "counter",
             "Finished jobs deleted by retention (max_age_hours, max_jobs).");
  out.Sample("libreyolod_jobs_expired_total", "", "", FormatValue(snapshot.jobs_expired_total));
  out.Family("libreyolod_jobs_deleted_total", "counter",
             "Finished jobs deleted by their owners or an admin (DeleteJob).");
  out.Sample("libreyolod_jobs_deleted_total", "", "", FormatValue(snapshot.jobs_deleted_total));
  if (snapshot.resident_memory_bytes >= 0) {
    out.Family("libreyolod_resident_memory_bytes", "gauge",
               "Resident memory of the daemon process, bytes.");
    out.Sample("libreyolod_resident_memory_bytes", "", "",
               FormatValue(snapshot.resident_memory_bytes));
  }
  return out.Take();
}

absl::Status WriteMetricsTextfile(const std::string& path, const std::string& text) {
  // 0644: node_exporter often runs as another user. The temp name does not end in .prom, so
  // node_exporter never reads a partial file.
  if (auto st = WriteFileAtomically(path, text, 0644); !st.ok()) {
    return absl::FailedPreconditionError(absl::StrCat("metrics textfile ", path, ": ", st.message()));
  }
  return absl::OkStatus();
}

}  // namespace libreyolo::daemon
