// Which jobs go to the Python LibreYOLO (DelegatedFamily), which one runs them (PythonToolPath),
// with what command line (PythonToolArgs), and what its output says (PythonProgress): the
// decisions of python_runner.h, without a process. PythonRunner itself: python_runner.cc.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "common/status/status_macros.h"
#include "wire/job_spec/job_defaults.h"
#include "wire/job_spec/job_spec.h"
#include "server/daemon/jobs/job_inputs.h"
#include "server/daemon/rpc/request_validation.h"
#include "server/daemon/workers/python_runner.h"
#include "server/engine/checkpoint/pickle.h"
#include "server/engine/checkpoint/zip_archive.h"

// The project's Python environment this daemon was built against (CMake's LIBREYOLO_PYTHON_ENV,
// what scripts/python-env.sh printed): the default Python LibreYOLO.
#ifndef LIBREYOLO_BUILD_PYTHON_ENV
#define LIBREYOLO_BUILD_PYTHON_ENV ""
#endif

namespace libreyolo::daemon {
namespace {

namespace fs = std::filesystem;

// A read-only mapping of a whole file: the zip reader touches only the pages it reads (the
// central directory, the pickle), not a large checkpoint's storages; cheap enough for the job
// manager to ask at a job's start. (A file truncated while mapped would fault the reader: the
// weights are the models directory's, an admin's, or the private daemon's owner's own.)
class MappedFile {
 public:
  explicit MappedFile(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    struct stat st {};
    if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= 4) {
      void* p = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
      if (p != MAP_FAILED) {
        data_ = p;
        size_ = static_cast<size_t>(st.st_size);
      }
    }
    ::close(fd);
  }
  ~MappedFile() {
    if (data_ != nullptr) ::munmap(data_, size_);
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  absl::string_view bytes() const {
    return data_ == nullptr ? absl::string_view() : absl::string_view(static_cast<char*>(data_), size_);
  }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace

std::optional<engine::CheckpointModel> NativeCheckpointModel(const std::string& path) {
  const MappedFile file(path);
  if (!absl::StartsWith(file.bytes(), absl::string_view("PK\x03\x04", 4))) return std::nullopt;
  auto zip = engine::ZipArchive::Open(file.bytes(), path);
  if (!zip.ok()) return std::nullopt;
  const engine::ZipEntry* pickle = nullptr;
  for (const engine::ZipEntry& e : zip->entries()) {
    if (absl::EndsWith(e.name, "/constants.pkl")) return std::nullopt;  // torch.jit.save's
    const size_t slash = e.name.find('/');
    if (pickle == nullptr && absl::EndsWith(e.name, "/data.pkl") && slash + 9 == e.name.size()) {
      pickle = &e;
    }
  }
  if (pickle == nullptr) return std::nullopt;
  auto bytes = zip->Read(*pickle);
  if (!bytes.ok()) return std::nullopt;
  auto graph = engine::Unpickle(*bytes, path);
  if (!graph.ok() || graph->root() == engine::kNoValue) return std::nullopt;
  engine::Checkpoint metadata;
  for (const char* key : {"model_family", "size", "task", "nc"}) {
    const std::optional<engine::ValueId> v = graph->DictGet(graph->root(), key);
    if (!v) continue;
    const engine::PyValue& value = graph->at(*v);
    if (value.kind == engine::PyKind::kString) metadata.metadata[key] = value.s;
    if (value.kind == engine::PyKind::kInt) metadata.metadata[key] = value.i;
  }
  return engine::DescribeCheckpoint(metadata);
}

namespace {

const v1::ModelOptions& ModelOf(const v1::Job& job) {
  return job.request().has_run() ? job.request().run().model() : job.request().infer().model();
}

absl::Status Unsupported(const std::string& field, const char* command) {
  return absl::InvalidArgumentError(
      absl::StrCat(jobspec::NamedField(field), ": the Python LibreYOLO's `libreyolo profile ",
                   command, "`, which runs this job, has no such option; leave it out"));
}

// Profiler settings are the Python tool's own: any given is refused.
absl::Status CheckProfiler(const v1::ProfilerOptions& p, const std::string& kind) {
  const std::string at = kind + ".profiler.";
  const char* command = kind.c_str();
  if (p.activities_size() > 0) return Unsupported(at + "activities", command);
  if (p.has_record_shapes()) return Unsupported(at + "record_shapes", command);
  if (p.has_profile_memory()) return Unsupported(at + "profile_memory", command);
  if (p.has_with_flops()) return Unsupported(at + "with_flops", command);
  if (p.with_stack()) return Unsupported(at + "with_stack", command);
  if (p.has_overhead_budget_pct()) return Unsupported(at + "overhead_budget_pct", command);
  if (p.has_with_modules()) return Unsupported(at + "with_modules", command);
  if (!p.collector().empty()) return Unsupported(at + "collector", command);
  if (p.has_probe_overhead()) return Unsupported(at + "probe_overhead", command);
  return absl::OkStatus();
}

// The dataset's data yaml, found as the engine finds a dataset (request_validation.cc): a name
// under datasets_dir (NAME.yaml, NAME/NAME.yaml, NAME/data.yaml), or a path to a yaml or to a
// folder holding data.yaml.
absl::StatusOr<std::string> DataYaml(const std::string& data, const DaemonConfig& config) {
  std::vector<fs::path> candidates;
  if (IsPlainName(data)) {
    const fs::path dir(config.datasets_dir);
    candidates = {dir / (data + ".yaml"), dir / data / (data + ".yaml"), dir / data / "data.yaml"};
  } else {
    const fs::path p(data);
    candidates = {p, p / "data.yaml", p / (p.filename().string() + ".yaml")};
  }
  std::error_code ec;
  for (const fs::path& c : candidates) {
    if (fs::is_regular_file(c, ec)) return c.string();
  }
  std::vector<std::string> looked;
  for (const fs::path& c : candidates) looked.push_back(c.string());
  return absl::NotFoundError(absl::StrCat(
      jobspec::NamedField("run.data"), ": the Python LibreYOLO trains from a data yaml; none at ",
      absl::StrJoin(looked, ", ")));
}

// "--device" for the Python tool: the slot's GPU is its only one (CUDA_VISIBLE_DEVICES).
std::string ToolDevice(const std::string& slot) {
  return absl::StartsWith(slot, "cpu") ? "cpu" : "0";
}

std::string Flag(bool on, const char* name) { return absl::StrCat(on ? "--" : "--no-", name); }

std::vector<std::string> InferFlags(const v1::InferSpec& s) {
  return {"--batch",     absl::StrCat(s.batch()),   "--imgsz",  absl::StrCat(s.imgsz()),
          Flag(s.half(), "half"),                   "--amp-dtype", s.amp_dtype(),
          "--warmup",    absl::StrCat(s.warmup()),  "--runs",   absl::StrCat(s.runs()),
          "--repeat",    absl::StrCat(s.repeat()),  "--conf",   absl::StrCat(s.conf()),
          "--iou",       absl::StrCat(s.iou()),     "--max-det", absl::StrCat(s.max_det()),
          Flag(s.trace(), "trace")};
}

std::vector<std::string> RunFlags(const v1::RunSpec& s) {
  return {"--batch",  absl::StrCat(s.batch()),   "--imgsz",  absl::StrCat(s.imgsz()),
          "--workers", absl::StrCat(s.workers()), Flag(s.amp(), "amp"),
          "--steps",  absl::StrCat(s.steps()),   "--warmup", absl::StrCat(s.warmup()),
          "--repeat", absl::StrCat(s.repeat())};
}

// What the run's spec asks for that the Python tool's `profile run` cannot do.
absl::Status CheckRun(const v1::RunSpec& s) {
  if (s.data() == "synthetic" || absl::StartsWith(s.data(), "synthetic:")) {
    return absl::InvalidArgumentError(absl::StrCat(
        jobspec::NamedField("run.data"), ": '", s.data(), "' is the engine's synthetic dataset; "
        "the Python LibreYOLO, which runs this job, trains from a dataset (a data yaml)"));
  }
  if (s.skip_first() != 0) return Unsupported("run.skip_first", "run");
  if (s.wait() != 0) return Unsupported("run.wait", "run");
  if (s.has_cycles() && s.cycles() != 1) return Unsupported("run.cycles", "run");
  if (s.has_data_parallel() && (jobspec::Ranks(s.data_parallel()) > 1 ||
                                jobspec::AcrossHosts(s.data_parallel()))) {
    return Unsupported("run.data_parallel.nproc", "run");
  }
  return CheckProfiler(s.profiler(), "run");
}

// The message of a logged line ("2026-12-06 14:38:39 | INFO     | Starting training ..."),
// or the line itself.
absl::string_view LogMessage(absl::string_view line) {
  const size_t first = line.find(" | ");
  if (first == absl::string_view::npos || first > 24) return line;
  const size_t second = line.find(" | ", first + 3);
  if (second == absl::string_view::npos) return line;
  return absl::StripAsciiWhitespace(line.substr(second + 3));
}

}  // namespace

absl::StatusOr<std::string> PythonToolPath(const DaemonConfig& config, const std::string& family) {
  const std::string how =
      "set python_tool (--python-tool) to the Python LibreYOLO's bin/libreyolo (pip install "
      "libreyolo), or export the checkpoint to TorchScript (`libreyolo export --model FILE "
      "--format torchscript`) and profile the export";
  if (config.python_tool == "off") {
    return absl::FailedPreconditionError(absl::StrCat(
        "this daemon has no Python LibreYOLO to run ", family, " (python_tool is off): ", how));
  }
  if (!config.python_tool.empty()) {
    if (::access(config.python_tool.c_str(), X_OK) == 0) return config.python_tool;
    return absl::FailedPreconditionError(
        absl::StrCat("this daemon has no Python LibreYOLO to run ", family, ": python_tool ",
                     config.python_tool, " is not an executable file (", std::strerror(errno),
                     "); ", how));
  }
  std::vector<std::string> looked;
  const char* env = std::getenv("LIBREYOLO_PYTHON_ENV");
  for (const char* root : {env, static_cast<const char*>(LIBREYOLO_BUILD_PYTHON_ENV)}) {
    if (root == nullptr || *root == '\0') continue;
    const std::string cli = (fs::path(root) / "bin" / "libreyolo").string();
    if (::access(cli.c_str(), X_OK) == 0) return cli;
    looked.push_back(cli);
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "this daemon has no Python LibreYOLO to run ", family,
      looked.empty() ? std::string() : absl::StrCat(" (none at ", absl::StrJoin(looked, ", "), ")"),
      ": ", how));
}

absl::StatusOr<std::vector<std::string>> PythonToolArgs(const v1::Job& job, const std::string& tool,
                                                        const std::string& project,
                                                        const std::string& checkpoint_size,
                                                        const DaemonConfig& config) {
  const v1::ModelOptions& model = ModelOf(job);
  const bool run = job.request().has_run();
  if (!model.size().empty() && !checkpoint_size.empty() && model.size() != checkpoint_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        jobspec::NamedField("model.size"), ": ", model.weights(), " is size ", checkpoint_size,
        ", not ", model.size(), "; leave --size out or give ", checkpoint_size));
  }
  const std::string size = !model.size().empty() ? model.size()
                            : !checkpoint_size.empty() ? checkpoint_size
                                                       : jobspec::defaults::kSize;
  std::vector<std::string> args = {tool, "profile", run ? "run" : "infer"};
  std::string positional;
  if (run) {
    RETURN_IF_ERROR(CheckRun(job.request().run()));
    ASSIGN_OR_RETURN(positional, DataYaml(job.request().run().data(), config));
    v1::RunSpec spec = job.request().run();
    jobspec::ApplyDefaults(&spec);
    for (std::string& f : RunFlags(spec)) args.push_back(std::move(f));
  } else {
    RETURN_IF_ERROR(CheckProfiler(job.request().infer().profiler(), "infer"));
    // The Python tool's profile infer always decodes: --postprocess none is the engine's.
    if (job.request().infer().postprocess() == "none") return Unsupported("infer.postprocess", "infer");
    positional = job.request().infer().source();  // "" = the tool's bundled sample image
    v1::InferSpec spec = job.request().infer();
    jobspec::ApplyDefaults(&spec);
    for (std::string& f : InferFlags(spec)) args.push_back(std::move(f));
  }
  for (const std::string& f : {std::string("--weights"), model.weights(), std::string("--size"),
                               size, std::string("--device"), ToolDevice(job.device()),
                               std::string("--project"), project}) {
    args.push_back(f);
  }
  if (!positional.empty()) {
    args.push_back("--");  // a path that starts with '-' stays an argument
    args.push_back(positional);
  }
  return args;
}

std::optional<JobProgress> PythonProgress::Line(const std::string& line) {
  const absl::string_view msg = LogMessage(line);
  const std::string text(msg);
  if (absl::StartsWith(msg, "Starting training for")) {
    ++trial_;
    if (trials_ > 1) return JobProgress{"training", trial_, trials_, ""};
    return JobProgress{"training", 0, 0, ""};
  }
  if (absl::StartsWith(msg, "Epoch ") && absl::StrContains(msg, " - Average loss: ")) {
    return JobProgress{"training", 0, 0, text};
  }
  if (absl::StrContains(msg, "LibreYOLO training profile")) return JobProgress{"analysing", 0, 0, ""};
  // Its result lines: the training profile's headline and verdict, the inference latency, stage
  // split and verdict, and the final throughput.
  for (const char* prefix : {"REAL step ", ">> VERDICT:", "latency  p50", "stages   preprocess",
                             ">> ", "img/s: "}) {
    if (absl::StartsWith(msg, prefix)) return JobProgress{"measured", 0, 0, text};
  }
  return std::nullopt;
}

std::optional<std::string> DelegatedFamily(const v1::Job& job, const DaemonConfig& config,
                                           std::string* why_not) {
  if (why_not != nullptr) why_not->clear();
  if (!job.request().has_run() && !job.request().has_infer()) return std::nullopt;
  v1::Job copy = job;
  // Without inline images the resolution writes nothing (its scratch is not used).
  if (copy.request().has_infer()) copy.mutable_request()->mutable_infer()->clear_images();
  absl::StatusOr<v1::Job> resolved = ResolveJobInputs(copy, config, "");
  if (!resolved.ok()) return std::nullopt;
  const std::string& weights = ModelOf(*resolved).weights();
  if (weights == jobspec::defaults::kWeights) return std::nullopt;  // the engine's random init
  std::optional<engine::CheckpointModel> model = NativeCheckpointModel(weights);
  if (!model || model->family.empty() || model->family == "yolo9") return std::nullopt;
  if (why_not != nullptr) {
    absl::StatusOr<std::string> tool = PythonToolPath(config, model->family);
    absl::StatusOr<std::vector<std::string>> args =
        tool.ok() ? PythonToolArgs(*resolved, *tool, "", model->size, config)
                  : absl::StatusOr<std::vector<std::string>>(tool.status());
    if (!args.ok()) {
      *why_not = tool.ok() ? absl::StrCat(weights, " is a ", model->family, " checkpoint (",
                                          model->Label(), "), profiled by the Python LibreYOLO: ",
                                          args.status().message())
                           : std::string(args.status().message());
    }
  }
  return model->family;
}

}  // namespace libreyolo::daemon
