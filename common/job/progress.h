// A job's progress, the one type of it: the engine reports it (server/engine/engine.h's jobs),
// the engine worker sends it to the daemon (server/worker/worker_protocol.h holds the one
// conversion to and from its wire form, worker.proto's Progress), and the daemon's job runners
// hand it to the job manager, which streams it to clients as a JobEvent's progress (docs/rpc.md).
#ifndef LIBREYOLO_COMMON_JOB_PROGRESS_H_
#define LIBREYOLO_COMMON_JOB_PROGRESS_H_

#include <cstdint>
#include <functional>
#include <string>

namespace libreyolo {

// Stage names are stable: the engine's "loading model", "warmup", "measuring", "probing" (the
// overhead budget's probes), "profiling", "analysing", "writing", and a data-parallel rank's
// "rendezvous" while it waits for its peers; the daemon's own "storing" (collecting a job's
// files), a delegated job's "training" and "measured", an attach job's stages (attach_job.h).
// `done` of `total` steps within the stage (0 of 0: a stage without a count); `message` is a
// line for people, often empty.
struct JobProgress {
  std::string stage;
  int64_t done = 0, total = 0;
  std::string message;

  bool operator==(const JobProgress&) const = default;
};

// Called at every progress event, on the thread that runs the job.
using ProgressFn = std::function<void(const JobProgress&)>;

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_JOB_PROGRESS_H_
