#include "server/daemon/workers/routing_runner.h"

#include "common/status/exit_code.h"

namespace libreyolo::daemon {

JobRunner* RoutingRunner::Pick(const v1::Job& job, std::string* why_not) const {
  if (job.kind() == v1::JOB_KIND_ATTACH) {
    if (routes_.attach == nullptr) {
      // Refused at SubmitJob already; a job queued before a restart without the endpoint
      // lands here.
      *why_not =
          "this daemon serves no attach endpoint (attach_dir is empty and "
          "attach_dynolog_compat off): an admin must set attach_dir (docs/deploy.md) before "
          "processes can be attached";
    }
    return routes_.attach;
  }
  if (routes_.python != nullptr && routes_.delegate && routes_.delegate(job, why_not)) {
    return why_not->empty() ? routes_.python : nullptr;
  }
  return routes_.engine;
}

RunOutcome RoutingRunner::Run(const v1::Job& job, const ProgressFn& progress,
                              const engine::CancelToken& cancel) {
  std::string why_not;
  JobRunner* runner = Pick(job, &why_not);
  if (runner != nullptr) return runner->Run(job, progress, cancel);
  RunOutcome out;
  out.status = absl::InvalidArgumentError(why_not);
  out.exit_code = ExitCodeForStatus(out.status);
  return out;
}

std::string RoutingRunner::ToolFor(const v1::Job& job) const {
  if (job.kind() == v1::JOB_KIND_ATTACH) return kToolKineto;
  std::string why_not;
  JobRunner* runner = Pick(job, &why_not);
  if (runner != nullptr) return runner->ToolFor(job);
  return routes_.delegate ? kToolPython : kToolEngine;  // a delegated job that cannot run
}

std::string RoutingRunner::DescribeDevice(const std::string& device) const {
  if (device == kAttachLane) {
    return "attach lane: traces of running processes (Kineto on-demand); holds no device";
  }
  return routes_.engine->DescribeDevice(device);
}

}  // namespace libreyolo::daemon
