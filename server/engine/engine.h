// The engine's torch-free interface: what the daemon (and the engine bench tool) call to run a
// profiling job. Nothing here includes LibTorch; the jobs live in engine/*.cc behind it.
#ifndef LIBREYOLO_SERVER_ENGINE_ENGINE_H_
#define LIBREYOLO_SERVER_ENGINE_ENGINE_H_

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/job/progress.h"
#include "common/profile/profile.h"
#include "wire/job_spec/job_defaults.h"
#include "server/engine/data/image_header.h"

namespace libreyolo::engine {

// Every default below is the job spec's (wire/job_spec/job_defaults.h, the one place they are
// stated); jobs from the daemon and the engine tool arrive with every field set
// (server/worker/engine_spec.h), so these initialisers matter only to direct callers (tests).
namespace job_defaults = ::libreyolo::jobspec::defaults;

// The collection switches users of torch.profiler's ProfileKwargs know (cli.md). The three
// costly ones are tri-state: true/false as the user asked, nullopt = the fixed default
// (overhead_budget.h, kDefault*): never a value that depends on the machine's load or on earlier
// jobs. Before the profiled window a job probes what each switch that is on costs and the
// profile's `profiler` object records it, with the switches over overhead_budget_pct named.
struct ProfilerSwitches {
  std::optional<bool> record_shapes;
  std::optional<bool> profile_memory;
  std::optional<bool> with_flops;
  // Module scopes (model/module_scope.h): every LibreYOLO9 module's forward inside a named
  // range of the trace ("nn.Module: backbone.conv0"). On by default: the ranges cost well within
  // the default budget (docs/cli.md, "Module scopes", has the measurement). --with-stack is
  // its alias: LibTorch in C++ records no Python stacks.
  bool with_modules = job_defaults::kWithModules;
  // Who records the CPU side: "native" (collect/op_collector.h) or "libtorch" (LibTorch's
  // profiler); on a CUDA device without our CUPTI collector, LibTorch's (profiling_session.h).
  std::string collector = job_defaults::kCollector;
  bool cuda = true;                  // record GPU activity when the job runs on a CUDA device
  // The overhead probes before the profiled window (overhead_budget.h); off: none (the
  // switches are the same, overhead_pct and their costs not measured).
  bool probe_overhead = job_defaults::kProbeOverhead;
  double overhead_budget_pct = job_defaults::kOverheadBudgetPct;  // a switch cost over it is named, in %
};

struct ModelSpec {
  std::string weights = job_defaults::kWeights;  // a path; the default name may be absent (random init)
  std::string size = job_defaults::kSize;
  std::string device = job_defaults::kDevice;  // "cpu", or a CUDA index
  int threads = job_defaults::kThreads;  // CPU threads; 0 = all cores
  // Where the caller and the daemon looked for a bare weights name before sending it
  // (ModelOptions.weights_searched): named by a random init's notice and profile.
  std::vector<std::string> weights_searched;
};

// How a job leaves its results (job_files.h). The defaults are what a local user expects; the
// daemon's worker sets both (its jobs write in a scratch folder that callers never see).
struct JobOutputOptions {
  // Paths recorded in profile.json (its trace, the cycle traces) relative to the project folder
  // ("infer/profile_trace.json") instead of as written ("<project>/infer/profile_trace.json").
  bool paths_relative_to_project = false;
  // Non-empty: report.html is drawn beside profile.json from the profile and the trace the job
  // holds in memory, labelled so on the page (the daemon: "job:<id>").
  std::string report_label;
  // The bench's peer (bench/engine_bench.py --post-window): the path before the in-memory
  // pipeline: write the trace, read it back to analyse it, and draw the report from the files.
  bool analyse_from_files = false;
};

// What the stages after the recorded window took (wall time): the trace written and analysed,
// then profile.json (and profile_repeat.json, report.html) written.
struct PostWindowTimes {
  double trace_ms = 0;    // export (and, from files, the read back) and analysis
  double outputs_ms = 0;  // the profile, the report
  double total_ms() const { return trace_ms + outputs_ms; }
};

struct InferJobSpec {
  ModelSpec model;
  std::string source;  // image or directory; empty = the project's sample image
  int64_t batch = job_defaults::kInferBatch;
  int64_t imgsz = job_defaults::kImgsz;
  bool half = false;
  std::string amp_dtype = job_defaults::kAmpDtype;
  int64_t warmup = job_defaults::kInferWarmup;
  int64_t runs = job_defaults::kRuns;
  int64_t repeat = job_defaults::kRepeat;
  double conf = job_defaults::kConf;
  double iou = job_defaults::kIou;
  int64_t max_det = job_defaults::kMaxDet;
  // "auto": the model's decode (and NMS where its backend has one); "none": the forward only, the
  // postprocess stage not run (InferSpec.postprocess, `--postprocess`).
  std::string postprocess = job_defaults::kPostprocess;
  bool trace = job_defaults::kTrace;
  int64_t profiled_runs = job_defaults::kProfiledRuns;  // iterations recorded in the trace (at most `runs`)
  ProfilerSwitches profiler;
  std::string project = job_defaults::kProject;
  // Cross-check (bench/engine_tool, scripts/gpu-check.sh): non-empty = after the recorded
  // window, record as many iterations again with LibTorch's own profiler (CUDA activity through
  // Kineto) and save LibTorch's own trace of them here.
  std::string kineto_trace_path;
  JobOutputOptions output;
  // The most pixels (width x height) decoded from one source image (image_io.h): a daemon's
  // limits.max_decoded_pixels (worker.proto's RunJob), else the engine's bound.
  int64_t max_decoded_pixels = kMaxDecodedPixels;
};

// A job reports its progress as JobProgress through a ProgressFn (common/job/progress.h: the
// one type the engine, the worker and the daemon share; its stage names are listed there).

// Set from another thread; jobs observe it between iterations and return CANCELLED.
struct CancelToken {
  std::atomic<bool> cancelled{false};
};

struct JobResult {
  std::string profile_path;
  std::string trace_path;  // empty with --no-trace
  std::optional<std::string> repeat_path;
  std::string report_path;  // empty unless JobOutputOptions::report_label asked for one
  Profile profile;
  PostWindowTimes post_window;
};

// Runs `profile infer`: warmup, the measured window (no profiler), a profiled window, analysis,
// and profile.json + profile_trace.json under <project>/infer/. Errors: NOT_FOUND for a missing
// weights file or source (exit 2), INVALID_ARGUMENT for bad options, FAILED_PRECONDITION for a
// CUDA device that is not there, CANCELLED, and any engine failure as INTERNAL with its reason.
absl::StatusOr<JobResult> RunInferJob(const InferJobSpec& spec, const ProgressFn& progress,
                                      const CancelToken* cancel);

// ---- `profile run`: a short training run, profiled -------------------------------------------

// One rank of a data-parallel training run (issue 21), on LibTorch's own c10d: a TCPStore
// rendezvous at master_addr:master_port (rank 0 serves it), ProcessGroupGloo on the CPU and
// ProcessGroupNCCL on CUDA, and c10d's Reducer all-reducing the gradients in buckets as the
// backward produces them, as torch.nn.parallel.DistributedDataParallel does (its defaults:
// bucket_cap_mb 25, a first bucket of 1 MiB, buffers broadcast from rank 0 before every
// forward). Each rank reads its own shard of every epoch (DistributedSampler's). world_size 1:
// not distributed, nothing below is used, unless `placed` (a gang of one, `--devices 0`: c10d
// and DDP's Reducer run in a world of one, as under torchrun --nproc-per-node 1).
struct DataParallelSpec {
  int64_t world_size = 1;
  int64_t rank = 0;
  std::string master_addr = job_defaults::kMasterAddr;
  int64_t master_port = job_defaults::kMasterPort;
  // The run's group (its daemon job, or the group id its hosts were given): a rank that checks
  // in with another one belongs to another run, and the rendezvous refuses it.
  std::string group;
  std::string backend;  // "gloo" | "nccl"; empty: nccl on CUDA, gloo on the CPU
  double bucket_cap_mb = job_defaults::kBucketCapMb;
  bool gradient_as_bucket_view = job_defaults::kGradientAsBucketView;
  bool broadcast_buffers = job_defaults::kBroadcastBuffers;
  // The rendezvous (every rank joined) and every collective: past it the job fails on every
  // rank, naming the ranks that never joined or the collective that did not finish.
  int64_t timeout_s = job_defaults::kDistTimeoutS;
  bool placed = false;
  bool distributed() const { return world_size > 1 || placed; }
};

struct TrainJobSpec {
  ModelSpec model;
  std::string data;    // dataset YAML, name, or `synthetic[:N]` (data/dataset_spec.h)
  // -1: auto-batch (largest power of two under ~70% of VRAM; 16 on CPU)
  int64_t batch = job_defaults::kRunBatch;
  int64_t imgsz = job_defaults::kImgsz;
  int64_t workers = job_defaults::kWorkers;
  bool amp = job_defaults::kAmp;  // float16 autocast + loss scaling on CUDA; none on the CPU
  // LibreYOLO9's PGI auxiliary branch, as the Python LibreYOLO trains it (aux_weight, its
  // `libreyolo train --aux-weight`): > 0 attaches the branch for the run (its tensors from the
  // checkpoint where it has them, else a seeded fresh init) and adds its loss at this weight;
  // 0 trains the main head only. Training only: inference never builds it. Finite, >= 0.
  double aux_weight = job_defaults::kAuxWeight;
  int64_t steps = job_defaults::kSteps;  // measured steps, and the profiler's active steps/cycle
  int64_t warmup = job_defaults::kRunWarmup;  // steps before measuring, and the profiler's warmup
  int64_t repeat = job_defaults::kRepeat;  // measured windows (trials) for mean and std deviation
  // The rest of torch.profiler.schedule.
  int64_t skip_first = job_defaults::kSkipFirst, wait = job_defaults::kWait,
          cycles = job_defaults::kCycles;
  ProfilerSwitches profiler;
  std::string project = job_defaults::kProject;
  JobOutputOptions output;
  DataParallelSpec data_parallel;
  // A delay slept inside every step's data loading: a straggler made on purpose, to check the
  // cross-rank analysis names it (the engine tool's --inject-dataload-delay; never a job
  // option). Recorded as config.injected_dataload_delay_ms when set.
  int64_t inject_dataload_delay_ms = 0;
  // The most pixels (width x height) decoded from one dataset image (image_io.h), as for infer.
  int64_t max_decoded_pixels = kMaxDecodedPixels;
};

// Runs `profile run`: loads the model (the dataset's class count), then `repeat` measured
// windows without the profiler (warmup + steps each; the first half of the steps unsynchronised
// for the step time, the second half synchronised per phase for the composition; on the CPU
// every step serves both), then the profiler schedule. Writes <project>/prof/profile.json (the
// reference's layout), profile_trace.json (the last cycle) and profile_trace.<step>.json per
// cycle. A dataset smaller than the window fills it across epochs, and one smaller than the
// batch trains on all of it a step, as the Python LibreYOLO's `profile run` does
// (LoaderBatchSource, LoaderOptions::drop_last). Errors as RunInferJob's, plus OUT_OF_RANGE for
// the one dataset that cannot fill the window, an empty one: the CLI maps OUT_OF_RANGE to exit 3
// ("run produced no profile"), and the message names the ways out that work (images where the
// YAML points, another split, or `libreyolo profile run synthetic`).
absl::StatusOr<JobResult> RunTrainJob(const TrainJobSpec& spec, const ProgressFn& progress,
                                      const CancelToken* cancel);

// ---- Facts the daemon reports (GetDaemonInfo), torch-free -------------------------------------

std::string EngineLibTorchVersion();  // "2.11.0+cu130"
std::string EngineCudaVersion();      // the CUDA LibTorch was built with; "" for CPU-only
int EngineCudaDeviceCount();          // 0 without CUDA
// "cpu" -> "x86_64, 16 cores"; "cuda:0" -> "NVIDIA H200, 139 GiB" (or why it is unavailable).
std::string DescribeDevice(const std::string& device);

}  // namespace libreyolo::engine

#endif  // LIBREYOLO_SERVER_ENGINE_ENGINE_H_
