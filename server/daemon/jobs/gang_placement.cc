// Gang placement (gang_placement.h).
#include "server/daemon/jobs/gang_placement.h"

#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "wire/job_spec/job_spec.h"
#include "server/daemon/jobs/job_devices.h"
#include "server/daemon/jobs/job_runner.h"

namespace libreyolo::daemon {
namespace {

bool IsCpu(const std::string& device) { return absl::StartsWith(device, "cpu"); }

}  // namespace

absl::StatusOr<std::vector<std::string>> GangPlacement::Place(
    const v1::RunSpec& run, const std::string& device, const std::vector<std::string>& served) {
  const v1::DataParallelOptions& dp = run.data_parallel();
  const int64_t ranks = jobspec::Ranks(dp);
  // Across hosts, one rank per host is a gang of one here (its rendezvous is the others').
  if (ranks <= 1 && dp.devices_size() == 0 && !jobspec::AcrossHosts(dp)) {
    return std::vector<std::string>{};
  }
  // This daemon's slots of the job's kind, in its order. The attach lane is no device (it
  // traces other processes): never a rank's slot, nor counted as a GPU.
  std::vector<std::string> kind;
  for (const std::string& d : served) {
    if (d != kAttachLane && IsCpu(d) == IsCpu(device)) kind.push_back(d);
  }
  const std::string what = IsCpu(device) ? "CPU" : "CUDA";
  const std::string slots_hint =
      IsCpu(device) ? "start it with more CPU slots (libreyolod --device cpu --device cpu:1 ...)"
                    : "ask for at most as many ranks as it has GPUs";
  std::vector<std::string> placed;
  if (dp.devices_size() == 0) {
    if (ranks > static_cast<int64_t>(kind.size())) {
      return absl::FailedPreconditionError(absl::StrCat(
          "--nproc (run.data_parallel.nproc): ", ranks, " ranks, but this daemon has ",
          kind.size(), " ", what, " slot", kind.size() == 1 ? "" : "s", " (",
          absl::StrJoin(kind, ", "), "); ask for fewer or ", slots_hint));
    }
    placed.assign(kind.begin(), kind.begin() + ranks);
    return placed;
  }
  const std::set<std::string> serves(served.begin(), served.end());
  std::set<std::string> seen;
  for (const std::string& given : dp.devices()) {
    auto d = NormaliseDevice(given);
    if (!d.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--devices (run.data_parallel.devices): ",
                                                     d.status().message()));
    }
    if (IsCpu(*d) != IsCpu(device)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--devices (run.data_parallel.devices): ", *d, " is not of --device ", device,
          "'s kind; every rank runs on the same kind of device"));
    }
    if (!seen.insert(*d).second) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--devices (run.data_parallel.devices): ", *d, " is named twice (one rank per slot)"));
    }
    if (serves.count(*d) == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--devices (run.data_parallel.devices): ", *d, " is not served by this daemon (its ",
          what, " slots: ", absl::StrJoin(kind, ", "), ")"));
    }
    placed.push_back(*d);
  }
  return placed;
}

bool GangPlacement::Form(const std::string& id) {
  if (forming_.empty()) forming_ = id;
  return forming_ == id;
}

bool GangPlacement::Reserve(const std::string& id, const std::string& device,
                            const std::vector<std::string>& devices,
                            const std::function<bool(const std::string&)>& running) {
  held_[device] = id;
  for (const std::string& d : devices) {
    if (!HeldFor(d, id) || running(d)) return false;
  }
  return true;
}

bool GangPlacement::HeldFor(const std::string& device, const std::string& id) const {
  auto it = held_.find(device);
  return it != held_.end() && it->second == id;
}

void GangPlacement::Started(const std::string& id) {
  if (forming_ == id) forming_.clear();
}

bool GangPlacement::Release(const std::string& id) {
  bool any = false;
  for (auto it = held_.begin(); it != held_.end();) {
    if (it->second == id) {
      it = held_.erase(it);
      any = true;
    } else {
      ++it;
    }
  }
  if (forming_ == id) {
    forming_.clear();
    any = true;
  }
  return any;
}

}  // namespace libreyolo::daemon
