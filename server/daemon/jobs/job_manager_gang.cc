// The job manager's gangs (job_manager.h): a data-parallel job runs on several device slots at
// once, all or nothing. Its ranks are placed at submission (PlaceRanksLocked); it waits in the
// queue of each of its devices. When it comes first in one of them and no other gang is
// forming, it becomes the forming gang: each of its devices, once idle, is held for it
// (jumping that device's queue, so that it cannot be starved by later jobs), and the job
// thread of the device held last starts it. One forming gang at a time means that two gangs
// never each hold a part of what the other needs (no deadlock); devices the forming gang does
// not need keep running other jobs, gangs that wait behind it included in their order.
#include <algorithm>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "proto/job_spec/job_spec.h"
#include "server/daemon/jobs/job_manager.h"

namespace libreyolo::daemon {
namespace {

bool IsCpu(const std::string& device) { return absl::StartsWith(device, "cpu"); }

}  // namespace

std::vector<std::string> JobDevices(const v1::Job& job) {
  if (job.devices_size() == 0) return {job.device()};
  return {job.devices().begin(), job.devices().end()};
}

v1::JobWorld JobWorldOf(const v1::DataParallelOptions& dp) {
  v1::JobWorld w;
  const int64_t ranks = jobspec::Ranks(dp);
  w.set_world_size(static_cast<int32_t>(jobspec::WorldSize(dp)));
  w.set_nnodes(std::max<int32_t>(1, dp.rendezvous().nnodes()));
  if (jobspec::AcrossHosts(dp)) {
    w.set_node_rank(dp.rendezvous().node_rank());
    w.set_first_rank(static_cast<int32_t>(dp.rendezvous().node_rank() * ranks));
    w.set_group_id(jobspec::GroupId(dp.rendezvous()));
  }
  return w;
}

bool OnDevice(const v1::Job& job, const std::string& device) {
  if (job.devices_size() == 0) return job.device() == device;
  return std::find(job.devices().begin(), job.devices().end(), device) != job.devices().end();
}

absl::StatusOr<std::vector<std::string>> JobManager::PlaceRanksLocked(
    const v1::RunSpec& run, const std::string& device) const {
  const v1::DataParallelOptions& dp = run.data_parallel();
  const int64_t ranks = jobspec::Ranks(dp);
  // Across hosts, one rank per host is a gang of one here (its rendezvous is the others').
  if (ranks <= 1 && dp.devices_size() == 0 && !jobspec::AcrossHosts(dp)) {
    return std::vector<std::string>{};
  }
  // This daemon's slots of the job's kind, in its order.
  std::vector<std::string> kind;
  for (const std::string& d : devices_) {
    if (IsCpu(d) == IsCpu(device)) kind.push_back(d);
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
    if (device_state_.count(*d) == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--devices (run.data_parallel.devices): ", *d, " is not served by this daemon (its ",
          what, " slots: ", absl::StrJoin(kind, ", "), ")"));
    }
    placed.push_back(*d);
  }
  return placed;
}

JobManager::Entry* JobManager::NextForLocked(const std::string& device) {
  if (!forming_gang_.empty()) {
    auto it = jobs_.find(forming_gang_);
    if (it == jobs_.end() || it->second->job.state() != v1::JOB_STATE_QUEUED) {
      ReleaseGangLocked(forming_gang_);  // it went (cancelled, swept)
    } else if (OnDevice(it->second->job, device)) {
      return it->second.get();
    }
  }
  for (Entry* e : QueueOrderLocked(device)) {
    if (e->job.devices_size() == 0) return e;
    if (forming_gang_.empty()) {
      forming_gang_ = e->job.id();
      return e;
    }
    // A gang behind the forming one: the device serves what comes after it meanwhile.
  }
  return nullptr;
}

bool JobManager::ReserveForGangLocked(Entry& e, const std::string& device) {
  device_state_.at(device).reserved = e.job.id();
  for (const std::string& d : JobDevices(e.job)) {
    const DeviceState& ds = device_state_.at(d);
    if (ds.reserved != e.job.id() || !ds.running.empty()) return false;
  }
  return true;
}

void JobManager::ReleaseGangLocked(const std::string& id) {
  bool any = false;
  for (auto& [device, ds] : device_state_) {
    if (ds.reserved == id) {
      ds.reserved.clear();
      any = true;
    }
  }
  if (forming_gang_ == id) {
    forming_gang_.clear();
    any = true;
  }
  if (any) work_cv_.notify_all();
}

}  // namespace libreyolo::daemon
