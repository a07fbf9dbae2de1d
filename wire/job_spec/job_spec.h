// A job's options in code: the proto's job spec with its defaults applied in one place, and the
// one validator of its values (used by the daemon at submission, server/daemon/
// request_validation.h, and by bench/engine_tool before it runs a job in process). The mapping
// into the engine's option structs is server/worker/engine_spec.h; the flag table that fills a
// spec from a command line is client/cli/job_flags.h. Defaults and fixed bounds:
// job_defaults.h. What a job reads (weights, a dataset, images) and where it may come from
// (names in the daemon's directories, inline images, local paths) is the daemon's check, not
// this one.
#ifndef LIBREYOLO_WIRE_JOB_SPEC_JOB_SPEC_H_
#define LIBREYOLO_WIRE_JOB_SPEC_JOB_SPEC_H_

#include <cstdint>
#include <limits>
#include <string>

#include "absl/status/status.h"
#include "libreyolo/profiler/v1/profiler.pb.h"
#include "wire/job_spec/job_defaults.h"

namespace libreyolo::jobspec {

namespace v1 = ::libreyolo::profiler::v1;

// Sets every unset field that has a default (job_defaults.h) to it: a proto3 0 / "" of a field
// without presence and an unset optional alike. model.device stays as given (empty: the
// daemon's first device); the tri-state profiler switches stay unset (auto); activities stay
// empty (cpu plus the job's device). Idempotent.
void ApplyDefaults(v1::ModelOptions* m);
void ApplyDefaults(v1::ProfilerOptions* p);
void ApplyDefaults(v1::InferSpec* s);
void ApplyDefaults(v1::RunSpec* s);
void ApplyDefaults(v1::DataParallelOptions* d);

// The ranks a run asks for: nproc, or the count of its devices; 1 for a single-device run.
int64_t Ranks(const v1::DataParallelOptions& d);
// A run across hosts (rendezvous.nnodes > 1); its ranks on every host together; the group
// that ties its hosts' jobs (the given one, or master_addr:master_port).
bool AcrossHosts(const v1::DataParallelOptions& d);
int64_t WorldSize(const v1::DataParallelOptions& d);
std::string GroupId(const v1::Rendezvous& r);
// Whether `addr` may be a rendezvous host (MASTER_ADDR): a host name or an address, 1..253
// bytes of [A-Za-z0-9.:_-]. The one rule of the job spec, the engine tool's --master-addr and
// a scheduler's environment.
bool IsHostOrAddress(const std::string& addr);

// A job record's data-parallel facts (Job.devices and Job.world; a record stored before
// Job.world existed has only devices).
bool DataParallelJob(const v1::Job& job);
int64_t JobWorldSize(const v1::Job& job);
// The trials of a `--repeat N` RUN or INFER job that is not data-parallel: how many
// <kind>_<T>/ folders its files make (common/io/trial_artifacts.h); 1 for any other job.
int64_t JobTrials(const v1::Job& job);

// The limits a caller may set below the fixed bounds: the daemon's configured `limits`
// (daemon_config.h); the engine tool runs with these defaults (no limit beyond the bounds).
// Over one of them is RESOURCE_EXHAUSTED naming `limit_owner`'s key ("this daemon's
// max_imgsz (1536)").
struct JobLimits {
  int64_t max_batch = std::numeric_limits<int64_t>::max();
  int64_t max_imgsz = bounds::kImgszMax;
  int64_t max_runs = std::numeric_limits<int64_t>::max();    // infer: warmup + runs
  int64_t max_steps = std::numeric_limits<int64_t>::max();   // run: the whole schedule
  int64_t max_repeat = std::numeric_limits<int64_t>::max();
  std::string limit_owner = "this daemon's";
};

// The values of a job spec, after ApplyDefaults (the caller's spec is not changed): ranges,
// enum values, the imgsz grid, the limits. `cpu` is true when the job runs on the CPU (half
// and the cuda activity need a CUDA device). INVALID_ARGUMENT (or RESOURCE_EXHAUSTED over a
// limit) naming the flag and the field: "--imgsz (infer.imgsz): 33 is not a multiple of 32 in
// 32..4096".
absl::Status ValidateInferSpec(const v1::InferSpec& spec, const JobLimits& limits, bool cpu);
absl::Status ValidateRunSpec(const v1::RunSpec& spec, const JobLimits& limits, bool cpu);

// Error helpers shared with the daemon's request checks. A field path ("infer.imgsz",
// "run.profiler.activities") named for a CLI user and a gRPC client alike:
// "--imgsz (infer.imgsz)"; fields without a flag are named as they are.
std::string NamedField(const std::string& field);
absl::Status FieldError(const std::string& field, const std::string& what);  // INVALID_ARGUMENT
absl::Status LimitError(const std::string& field, int64_t value, int64_t limit,
                        const std::string& limit_owner, const char* key);  // RESOURCE_EXHAUSTED

}  // namespace libreyolo::jobspec

#endif  // LIBREYOLO_WIRE_JOB_SPEC_JOB_SPEC_H_
