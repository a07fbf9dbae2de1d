// The one place a job option's default value and fixed bound are stated. The proto's job spec
// (proto/libreyolo/profiler/v1/profiler.proto: InferSpec, RunSpec, ModelOptions,
// ProfilerOptions) is the schema; these constants are what an unset field means
// (job_spec.h: ApplyDefaults), what the shared flag table prints (client/cli/job_flags.h), and
// what the engine's option structs start from (server/engine/engine.h). The daemon's own,
// configurable limits (limits.max_imgsz, ...) are not here: they narrow these bounds
// (job_spec.h: JobLimits). Header-only and dependency-free, so that the torch-side engine can
// include it. docs/cli.md ("Job options") lists every default and bound.
#ifndef LIBREYOLO_WIRE_JOB_SPEC_JOB_DEFAULTS_H_
#define LIBREYOLO_WIRE_JOB_SPEC_JOB_DEFAULTS_H_

#include <cstdint>

namespace libreyolo::jobspec {

namespace defaults {

// ModelOptions
inline constexpr const char* kWeights = "LibreYOLO9t.pt";  // absent: seeded random init
inline constexpr const char* kSize = "t";
inline constexpr const char* kDevice = "0";  // the CLI's default; the proto's: the daemon's
inline constexpr int32_t kThreads = 0;       // 0 = all cores

// InferSpec
inline constexpr int64_t kInferBatch = 1;
inline constexpr int64_t kImgsz = 640;  // infer and run
inline constexpr const char* kAmpDtype = "float16";
inline constexpr int64_t kInferWarmup = 20;
inline constexpr int64_t kRuns = 100;
inline constexpr int64_t kRepeat = 1;  // infer and run
inline constexpr double kConf = 0.25;
inline constexpr double kIou = 0.45;
inline constexpr int64_t kMaxDet = 300;
// InferSpec.postprocess: "auto" (the model's decode) or "none" (the forward only).
inline constexpr const char* kPostprocess = "auto";
inline constexpr bool kTrace = true;

// RunSpec
inline constexpr int64_t kRunBatch = 16;  // -1 = auto
inline constexpr int64_t kWorkers = 8;
inline constexpr bool kAmp = true;
inline constexpr int64_t kSteps = 20;
inline constexpr int64_t kRunWarmup = 5;
inline constexpr int64_t kSkipFirst = 0;
inline constexpr int64_t kWait = 0;
inline constexpr int64_t kCycles = 1;
// The PGI auxiliary branch's loss weight (the Python LibreYOLO's YOLO9Config.aux_weight and its
// `libreyolo train --aux-weight`): > 0 trains LibreYOLO9 with the branch, 0 without it.
inline constexpr double kAuxWeight = 0.25;

// DataParallelOptions (DistributedDataParallel's defaults; the rendezvous torchrun's)
inline constexpr double kBucketCapMb = 25;
inline constexpr bool kGradientAsBucketView = false;
inline constexpr bool kBroadcastBuffers = true;
inline constexpr int64_t kDistTimeoutS = 300;
inline constexpr const char* kMasterAddr = "127.0.0.1";
inline constexpr int64_t kMasterPort = 29500;

// ProfilerOptions. record_shapes, profile_memory, with_flops: unset takes these fixed defaults,
// never a value that depends on the machine's load or on earlier jobs (issue 36, section 4; the
// measurement behind them: server/engine/job/overhead_budget.h, bench/README.md).
inline constexpr bool kRecordShapes = true;
inline constexpr bool kProfileMemory = true;
inline constexpr bool kWithFlops = false;
inline constexpr double kOverheadBudgetPct = 3.0;
inline constexpr bool kWithModules = true;
inline constexpr bool kProbeOverhead = true;
inline constexpr const char* kCollector = "native";  // or "libtorch"

// AttachSpec (`libreyolo profile attach`, issue 37): a window of this many milliseconds when
// neither duration_ms nor iterations is set.
inline constexpr int64_t kAttachDurationMs = 1000;

// Not in the proto: the engine tool's and the engine's own knobs.
inline constexpr int64_t kProfiledRuns = 20;  // infer iterations recorded in the trace
inline constexpr const char* kProject = "runs/profile";

}  // namespace defaults

// Fixed bounds of the contract (the engine's own: no daemon setting widens them).
namespace bounds {

inline constexpr int64_t kImgszMin = 32;
inline constexpr int64_t kImgszMax = 4096;
inline constexpr int64_t kImgszStep = 32;  // imgsz is a multiple of this
inline constexpr int32_t kMaxThreads = 1024;
inline constexpr int64_t kMaxWorkers = 64;
inline constexpr int64_t kMaxCycles = 100;
// RunSpec.aux_weight (PGI auxiliary-branch loss weight): 0..100.
inline constexpr double kMaxAuxWeight = 100;
inline constexpr int64_t kMaxDet = 30000;
inline constexpr int kMaxActivities = 8;
inline constexpr double kMaxOverheadBudgetPct = 1000;
// AttachSpec: pids at most, duration_ms in 1..this, iterations in 1..this.
inline constexpr int kMaxAttachPids = 64;
inline constexpr int64_t kMaxAttachDurationMs = 600000;
inline constexpr int64_t kMaxAttachIterations = 100000;
inline constexpr int64_t kMaxRanks = 64;           // data_parallel.nproc on one daemon
inline constexpr int64_t kMaxWorldSize = 1024;     // the engine tool's --world-size
inline constexpr double kMaxBucketCapMb = 4096;    // data_parallel.bucket_cap_mb: (0, this]
inline constexpr int64_t kMaxDistTimeoutS = 86400;  // data_parallel.timeout_s: 1..this

}  // namespace bounds

}  // namespace libreyolo::jobspec

#endif  // LIBREYOLO_WIRE_JOB_SPEC_JOB_DEFAULTS_H_
