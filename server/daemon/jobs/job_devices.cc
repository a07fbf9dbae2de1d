// Device slots (job_devices.h).
#include "server/daemon/jobs/job_devices.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace libreyolo::daemon {

absl::StatusOr<std::string> NormaliseDevice(const std::string& device) {
  const std::string d = absl::AsciiStrToLower(device);
  if (d == "cpu" || d == "cpu:0") return std::string("cpu");
  int n = 0;
  if (absl::StartsWith(d, "cpu:")) {
    // Further CPU slots ("cpu:1"): a daemon configured with them runs that many CPU jobs at
    // once, each in its own engine worker (docs/rpc.md, "Devices").
    if (absl::SimpleAtoi(d.substr(4), &n) && n > 0 && n < 64) return absl::StrCat("cpu:", n);
  }
  std::string index = d;
  if (absl::StartsWith(d, "cuda:")) index = d.substr(5);
  if (!index.empty() && absl::SimpleAtoi(index, &n) && n >= 0 && n < 64) {
    return absl::StrCat("cuda:", n);
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "--device (model.device): '", device,
      "' is not a device (use cpu, 0, 1, ... or cuda:N; cpu:N names a further CPU slot)"));
}

std::vector<std::string> JobDevices(const v1::Job& job) {
  if (job.devices_size() == 0) return {job.device()};
  return {job.devices().begin(), job.devices().end()};
}

bool OnDevice(const v1::Job& job, const std::string& device) {
  if (job.devices_size() == 0) return job.device() == device;
  return std::find(job.devices().begin(), job.devices().end(), device) != job.devices().end();
}

}  // namespace libreyolo::daemon
