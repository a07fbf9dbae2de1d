// The one conversion from a job's proto spec into the engine's options. The daemon has already
// resolved the job's inputs (job_inputs.h: weights and source paths, inline images written,
// the CPU thread default), so this is a pure mapping: an unset field keeps the engine's default
// (engine.h), a set one is taken as it is (request_validation.h checked it at submission).
#ifndef LIBREYOLO_SERVER_WORKER_ENGINE_SPEC_H_
#define LIBREYOLO_SERVER_WORKER_ENGINE_SPEC_H_

#include <string>

#include "libreyolo/profiler/v1/profiler.pb.h"
#include "server/engine/engine.h"

namespace libreyolo::worker {

namespace v1 = ::libreyolo::profiler::v1;

// `device` is the job's normalised device ("cpu", "cuda:N"); `project` the directory the engine
// writes under (<project>/infer/ or <project>/prof/).
engine::InferJobSpec ToEngineInferSpec(const v1::InferSpec& request, const std::string& device,
                                       const std::string& project);
engine::TrainJobSpec ToEngineTrainSpec(const v1::RunSpec& request, const std::string& device,
                                       const std::string& project);

}  // namespace libreyolo::worker

#endif  // LIBREYOLO_SERVER_WORKER_ENGINE_SPEC_H_
