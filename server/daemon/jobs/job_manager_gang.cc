// The job manager's gangs (job_manager.h): a data-parallel job runs on several device slots at
// once, all or nothing. The rules (placement at submission, one forming gang whose devices are
// held for it until all are) are GangPlacement's (gang_placement.h); here JobManager applies
// them to its queues and device threads: which job a device's thread takes next, and holding
// and letting go of devices. Devices the forming gang does not need keep running other jobs,
// gangs that wait behind it included in their order.
#include <algorithm>

#include "wire/job_spec/job_spec.h"
#include "server/daemon/jobs/job_manager.h"

namespace libreyolo::daemon {

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

JobManager::Entry* JobManager::NextForLocked(const std::string& device) {
  if (!gangs_.forming().empty()) {
    auto it = jobs_.find(gangs_.forming());
    if (it == jobs_.end() || it->second->job.state() != v1::JOB_STATE_QUEUED) {
      ReleaseGangLocked(gangs_.forming());  // it went (cancelled, swept)
    } else if (OnDevice(it->second->job, device)) {
      return it->second.get();
    }
  }
  for (Entry* e : QueueOrderLocked(device)) {
    if (e->job.devices_size() == 0) return e;
    if (gangs_.Form(e->job.id())) return e;
    // A gang behind the forming one: the device serves what comes after it meanwhile.
  }
  return nullptr;
}

bool JobManager::ReserveForGangLocked(Entry& e, const std::string& device) {
  return gangs_.Reserve(e.job.id(), device, JobDevices(e.job), [this](const std::string& d) {
    return !device_state_.at(d).running.empty();
  });
}

void JobManager::ReleaseGangLocked(const std::string& id) {
  if (gangs_.Release(id)) work_cv_.notify_all();
}

}  // namespace libreyolo::daemon
