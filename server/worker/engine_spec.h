// The one conversion from a job's proto spec into the engine's options. The caller has already
// validated the spec (wire/job_spec/job_spec.h: the daemon at submission, the engine tool
// before it runs) and, for a daemon job, resolved its inputs (server/daemon/jobs/job_inputs.h:
// weights and source paths, inline images written, the CPU thread default). The spec's defaults
// are applied here (jobspec::ApplyDefaults, the one place they live) and every field is then
// copied as it is, so no engine default (engine.h) decides a job's option.
#ifndef LIBREYOLO_SERVER_WORKER_ENGINE_SPEC_H_
#define LIBREYOLO_SERVER_WORKER_ENGINE_SPEC_H_

#include <cstdint>
#include <string>

#include "libreyolo/profiler/v1/profiler.pb.h"
#include "wire/job_spec/job_defaults.h"
#include "server/engine/engine.h"

namespace libreyolo::worker {

namespace v1 = ::libreyolo::profiler::v1;

// `device` is the job's device: "cpu", "cuda:N" (the daemon's normalised form) or "N" (the
// CLI's); `project` the directory the engine writes under (<project>/infer/ or <project>/prof/);
// `max_decoded_pixels` the daemon's limits.max_decoded_pixels (worker.proto's RunJob), 0 = the
// engine's bound (engine::kMaxDecodedPixels; the engine tool's).
engine::InferJobSpec ToEngineInferSpec(const v1::InferSpec& request, const std::string& device,
                                       const std::string& project,
                                       int64_t max_decoded_pixels = 0);
// Where one rank of a data-parallel run stands: given by the daemon to each of a job's slots
// (worker.proto's RankPlacement), or by a launcher to the engine tool (torchrun's RANK,
// WORLD_SIZE, MASTER_ADDR, MASTER_PORT). world_size 1: not distributed.
struct RankPlacement {
  int64_t rank = 0;
  int64_t world_size = 1;
  std::string master_addr = jobspec::defaults::kMasterAddr;
  int64_t master_port = jobspec::defaults::kMasterPort;
  std::string group;  // the run's group: every rank checks in with it
  bool placed = false;  // the daemon placed this rank (a gang, even of one): c10d runs
};

// The run's data_parallel options (backend, buckets, timeouts) with `placement` become the
// engine's DataParallelSpec. `max_decoded_pixels` as for ToEngineInferSpec.
engine::TrainJobSpec ToEngineTrainSpec(const v1::RunSpec& request, const std::string& device,
                                       const std::string& project,
                                       const RankPlacement& placement = {},
                                       int64_t max_decoded_pixels = 0);

}  // namespace libreyolo::worker

#endif  // LIBREYOLO_SERVER_WORKER_ENGINE_SPEC_H_
