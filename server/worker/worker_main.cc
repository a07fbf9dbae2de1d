#include "server/worker/worker_main.h"

#include <malloc.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <optional>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/job/names.h"
#include "libreyolo/worker/v1/worker.pb.h"
#include "server/engine/engine.h"
#include "server/engine/runtime/cuda_runtime.h"
#include "server/worker/engine_spec.h"
#include "server/worker/worker_protocol.h"

namespace libreyolo::worker {
namespace {

namespace fs = std::filesystem;
namespace wv1 = ::libreyolo::worker_wire::v1;

constexpr int kExitOk = 0;
constexpr int kExitChannel = 1;
constexpr int kExitUsage = 2;
constexpr int kExitContextLost = 3;

struct Args {
  int fd = -1;
  std::string device;
  pid_t parent = 0;
};

std::optional<Args> ParseArgs(const std::vector<std::string>& args) {
  Args out;
  for (size_t i = 0; i + 1 < args.size(); i += 2) {
    const std::string& key = args[i];
    const std::string& value = args[i + 1];
    int64_t n = 0;
    if (key == "--fd" && absl::SimpleAtoi(value, &n) && n >= 0 && n < 1024) {
      out.fd = static_cast<int>(n);
    } else if (key == "--device") {
      out.device = value;
    } else if (key == "--parent" && absl::SimpleAtoi(value, &n) && n > 0) {
      out.parent = static_cast<pid_t>(n);
    } else {
      return std::nullopt;
    }
  }
  if (args.size() % 2 != 0 || out.fd < 0 || out.device.empty() || out.parent == 0) {
    return std::nullopt;
  }
  return out;
}

// "cpu", "cpu:1" -> "cpu" (every CPU slot runs on the host); "cuda:N" stays.
std::string EngineDevice(const std::string& slot) {
  return slot.rfind("cpu", 0) == 0 ? "cpu" : slot;
}

// -1 for the CPU.
int CudaIndex(const std::string& device) {
  int index = -1;
  if (device.rfind("cuda:", 0) == 0 && !absl::SimpleAtoi(device.substr(5), &index)) index = -1;
  return index;
}

class Worker {
 public:
  Worker(int fd, std::string slot, FaultHook hook)
      : fd_(fd), slot_(std::move(slot)), device_(EngineDevice(slot_)), hook_(std::move(hook)) {}

  int Serve() {
    wv1::WorkerToDaemon hello_msg;
    wv1::Hello* hello = hello_msg.mutable_hello();
    hello->set_pid(static_cast<int32_t>(::getpid()));
    hello->set_device(slot_);
    hello->set_libtorch_version(engine::EngineLibTorchVersion());
    hello->set_cuda_version(engine::EngineCudaVersion());
    hello->set_cuda_device_count(engine::EngineCudaDeviceCount());
    hello->set_device_description(engine::DescribeDevice(device_));
    if (!Send(hello_msg)) return kExitChannel;

    for (;;) {
      wv1::DaemonToWorker msg;
      absl::StatusOr<bool> got = ReadFrame(fd_, &msg);
      if (!got.ok() || !*got) {
        // The daemon is gone (or the channel broke): nothing to report to, and a job's files
        // would be swept as scratch by the next daemon. Leave at once, mid-job or not.
        if (!got.ok()) std::cerr << "libreyolod-worker " << slot_ << ": " << got.status() << "\n";
        std::_Exit(got.ok() ? kExitOk : kExitChannel);
      }
      switch (msg.msg_case()) {
        case wv1::DaemonToWorker::kRun:
          if (job_thread_.joinable() && !job_done_.load()) {
            std::cerr << "libreyolod-worker " << slot_ << ": a job while one runs; ignored\n";
            break;
          }
          if (job_thread_.joinable()) job_thread_.join();
          if (context_lost_.load()) return kExitContextLost;
          StartJob(msg.run());
          break;
        case wv1::DaemonToWorker::kCancel:
          if (msg.cancel().job_id() == running_id_) cancel_.cancelled = true;
          break;
        case wv1::DaemonToWorker::kStop:
          cancel_.cancelled = true;
          if (job_thread_.joinable()) job_thread_.join();
          return kExitOk;
        default:
          break;
      }
    }
  }

 private:
  bool Send(const wv1::WorkerToDaemon& m) {
    std::lock_guard<std::mutex> lock(write_mu_);
    return WriteFrame(fd_, m).ok();
  }

  void StartJob(const wv1::RunJob& run) {
    running_id_ = run.job().id();
    cancel_.cancelled = false;
    job_done_ = false;
    job_thread_ = std::thread([this, run] {
      wv1::WorkerToDaemon done_msg;
      *done_msg.mutable_done() = RunJob(run);
      const bool lost = done_msg.done().context_lost();
      (void)Send(done_msg);
      if (lost) {
        // Nothing more can run in this process; the daemon sees the socket close and starts a
        // fresh worker for the next job.
        std::cerr << "libreyolod-worker " << slot_ << ": CUDA context lost ("
                  << done_msg.done().context_error() << "); exiting\n";
        std::_Exit(kExitContextLost);
      }
      job_done_ = true;
    });
  }

  wv1::Done RunJob(const wv1::RunJob& run) {
    wv1::Done done;
    done.set_job_id(run.job().id());
    const ProgressFn progress = [this](const JobProgress& p) {
      wv1::WorkerToDaemon m;
      *m.mutable_progress() = ProgressToWire(p);
      (void)Send(m);
      // After the event is out: the daemon knows the stage the fault happened in.
      if (hook_) hook_(p);
    };
    absl::StatusOr<engine::JobResult> result;
    const v1::SubmitJobRequest& request = run.job().request();
    // The job writes in the daemon's scratch folder, which callers never see: profile.json
    // records its files relative to it, and the report is drawn here, from the job's memory.
    engine::JobOutputOptions output;
    output.paths_relative_to_project = true;
    output.report_label = absl::StrCat("job:", run.job().id());
    try {
      if (request.has_infer()) {
        done.set_job_dir((fs::path(run.project_dir()) / kInferOutputFolder).string());
        engine::InferJobSpec spec = ToEngineInferSpec(request.infer(), device_, run.project_dir(),
                                                      run.max_decoded_pixels());
        spec.output = output;
        result = engine::RunInferJob(spec, progress, &cancel_);
      } else if (request.has_run()) {
        done.set_job_dir((fs::path(run.project_dir()) / kRunOutputFolder).string());
        RankPlacement placement;  // one rank of a data-parallel job, or world size 1
        if (run.has_rank()) {
          placement.rank = run.rank().rank();
          placement.world_size = run.rank().world_size();
          placement.master_addr = run.rank().master_addr();
          placement.master_port = run.rank().master_port();
          placement.group = run.rank().group_id();
          placement.placed = true;
        }
        engine::TrainJobSpec spec =
            ToEngineTrainSpec(request.run(), device_, run.project_dir(), placement,
                              run.max_decoded_pixels());
        spec.output = output;
        result = engine::RunTrainJob(spec, progress, &cancel_);
      } else {
        result = absl::InvalidArgumentError("the job has neither an infer nor a run request");
      }
    } catch (const std::exception& e) {
      result = absl::InternalError(absl::StrCat("the engine failed: ", e.what()));
    }
    if (result.ok()) {
      // Where the engine put the job's files (a rank's: prof/rank<R>/, job_files.h).
      done.set_job_dir(fs::path(result->profile_path).parent_path().string());
      done.set_step_ms(result->profile.step_ms.value_or(0));
      done.set_img_per_s(result->profile.img_per_s.value_or(0));
      done.set_bound(result->profile.bound);
    } else {
      done.set_code(static_cast<int32_t>(result.status().code()));
      done.set_error(std::string(result.status().message()));
    }
    // Between jobs: a CUDA device's context must still work, and the memory this process holds
    // goes back (the caching allocator's blocks to the driver, freed heap pages to the OS).
    if (const int index = CudaIndex(device_); index >= 0) {
      if (absl::Status ok = engine::CheckCudaContext(index); !ok.ok()) {
        done.set_context_lost(true);
        done.set_context_error(std::string(ok.message()));
        context_lost_ = true;
      } else {
        (void)engine::ReleaseCudaCache(index);
      }
    }
    ::malloc_trim(0);
    return done;
  }

  const int fd_;
  const std::string slot_;
  const std::string device_;
  const FaultHook hook_;
  std::mutex write_mu_;
  std::thread job_thread_;
  std::string running_id_;
  engine::CancelToken cancel_;
  std::atomic<bool> job_done_{true};
  std::atomic<bool> context_lost_{false};
};

}  // namespace

int WorkerMain(const std::vector<std::string>& args, const FaultHook& fault_hook) {
  const std::optional<Args> parsed = ParseArgs(args);
  if (!parsed) {
    std::cerr << "libreyolod-worker: usage: libreyolod-worker --fd N --device D --parent PID "
                 "(started by libreyolod itself; not meant to be run by hand)\n";
    return kExitUsage;
  }
  // Dies with the daemon: the kernel sends SIGKILL when the parent goes, and a parent that went
  // before this line is caught by the check after it.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parsed->parent) return kExitOk;
  ::signal(SIGPIPE, SIG_IGN);
  // SIGTERM/SIGINT/SIGHUP are the daemon's: it drains and stops its workers itself (systemd's
  // stop and a terminal's Ctrl-C reach the whole group; a drain lets the running job finish).
  ::signal(SIGTERM, SIG_IGN);
  ::signal(SIGINT, SIG_IGN);
  ::signal(SIGHUP, SIG_IGN);
  ::prctl(PR_SET_NAME, "libreyolod-wkr");
  // A CPU slot records CPU activity only, yet Kineto looks for GPUs when the profiler starts and
  // logs "ERROR: ... gpuGetDeviceCount failed with code 35" on a host without a CUDA driver,
  // once per job: noise in the daemon's journal that reads like a failure. Kineto reads its
  // threshold (KINETO_LOG_LEVEL; 5 is above ERROR = 4) when the profiler first starts; a value
  // the user set stays. CUDA slots keep Kineto's errors: there they are about the GPU trace.
  if (EngineDevice(parsed->device) == "cpu") ::setenv("KINETO_LOG_LEVEL", "5", /*overwrite=*/0);
  Worker worker(parsed->fd, parsed->device, fault_hook);
  const int code = worker.Serve();
  std::cout.flush();
  std::cerr.flush();
  std::_Exit(code);  // the job thread is joined or the process is beyond saving
}

}  // namespace libreyolo::worker
