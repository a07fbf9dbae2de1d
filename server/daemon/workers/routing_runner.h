// The daemon's JobRunner: sends each job to the runner that makes its profile. An attach job
// (JOB_KIND_ATTACH) to the attach runner (server/daemon/attach/attach_job.h); a run or infer
// job whose model the engine lacks (a native checkpoint of another family) to the Python
// LibreYOLO's own profiler (server/daemon/workers/python_runner.h); every other job to the
// engine (engine_runner.h). The engine's facts, device descriptions and worker restarts are
// the daemon's.
#ifndef LIBREYOLO_SERVER_DAEMON_WORKERS_ROUTING_RUNNER_H_
#define LIBREYOLO_SERVER_DAEMON_WORKERS_ROUTING_RUNNER_H_

#include <functional>
#include <string>

#include "server/daemon/jobs/job_runner.h"

namespace libreyolo::daemon {

class RoutingRunner : public JobRunner {
 public:
  struct Routes {
    JobRunner* engine = nullptr;  // required
    JobRunner* attach = nullptr;  // null: this daemon serves no attach endpoint
    JobRunner* python = nullptr;  // null: no delegation
    // Whether a run/infer job goes to `python` (python_runner.h: DelegatedFamily); a job that
    // should but cannot (`*why_not` set: no Python tool, an option it lacks) fails at once.
    std::function<bool(const v1::Job&, std::string* why_not)> delegate;
  };
  explicit RoutingRunner(Routes routes) : routes_(std::move(routes)) {}

  RunOutcome Run(const v1::Job& job, const ProgressFn& progress,
                 const engine::CancelToken& cancel) override;
  std::string ToolFor(const v1::Job& job) const override;
  EngineFacts Facts() const override { return routes_.engine->Facts(); }
  std::string DescribeDevice(const std::string& device) const override;
  int64_t WorkerRestarts() const override { return routes_.engine->WorkerRestarts(); }

 private:
  // The runner of `job`; null when none can run it, with the reason in `*why_not`.
  JobRunner* Pick(const v1::Job& job, std::string* why_not) const;

  Routes routes_;
};

}  // namespace libreyolo::daemon

#endif  // LIBREYOLO_SERVER_DAEMON_WORKERS_ROUTING_RUNNER_H_
