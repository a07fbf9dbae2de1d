// AnalyseIntoJob (produced_files.h): traces made outside the engine, taken into a job and
// analysed into its profile, one process or the ranks of a data-parallel run.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/analysis/profile_json_write.h"
#include "common/analysis/trace_analyser.h"
#include "common/analysis/verdict.h"
#include "common/io/rank_artifacts.h"
#include "common/io/unique_fd.h"
#include "common/job/names.h"
#include "common/json/json_writer.h"
#include "common/readers/ranks_view.h"
#include "common/status/status_macros.h"
#include "common/trace/trace_reader.h"
#include "rapidjson/filereadstream.h"
#include "rapidjson/reader.h"
#include "server/daemon/external/produced_files.h"
#include "server/daemon/external/produced_files_internal.h"

namespace libreyolo::daemon::external {
namespace {

// The top-level members a Kineto trace writes before its events.
struct TraceHeader {
  std::optional<std::string> trace_id;
  std::optional<int64_t> schema_version;
};

// SAX over the header only: parsing stops at "traceEvents" (Kineto writes trace_id before it).
class HeaderHandler : public rapidjson::BaseReaderHandler<rapidjson::UTF8<>, HeaderHandler> {
 public:
  explicit HeaderHandler(TraceHeader* out) : out_(out) {}
  bool StartObject() { return ++depth_ <= 64; }
  bool EndObject(rapidjson::SizeType) { return --depth_, true; }
  bool StartArray() { return depth_ > 0 && ++depth_ <= 64; }  // a bare list has no header
  bool EndArray(rapidjson::SizeType) { return --depth_, true; }
  bool Key(const char* s, rapidjson::SizeType len, bool) {
    if (depth_ != 1) return true;
    key_.assign(s, len);
    return key_ != "traceEvents";
  }
  bool String(const char* s, rapidjson::SizeType len, bool) {
    if (depth_ == 1 && key_ == "trace_id") out_->trace_id = std::string(s, len);
    return true;
  }
  bool Int(int v) { return Int64(v); }
  bool Uint(unsigned v) { return Int64(v); }
  bool Int64(int64_t v) {
    if (depth_ == 1 && key_ == "schemaVersion") out_->schema_version = v;
    return true;
  }
  bool Default() { return true; }

 private:
  TraceHeader* out_;
  int depth_ = 0;
  std::string key_;
};

absl::StatusOr<TraceHeader> ReadTraceHeader(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rbe");
  if (f == nullptr) return absl::ErrnoToStatus(errno, absl::StrCat("cannot open ", path));
  char buf[1 << 16];
  rapidjson::FileReadStream in(f, buf, sizeof(buf));
  TraceHeader header;
  HeaderHandler handler(&header);
  rapidjson::Reader reader;
  reader.Parse(in, handler);  // stops at traceEvents (or at a syntax error: header as read)
  std::fclose(f);
  return header;
}

// The order the processes' files are named in: by RANK when every process has a distinct one,
// else by pid.
std::vector<size_t> RankOrder(const std::vector<TracedProcess>& processes) {
  std::vector<size_t> order(processes.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::set<int64_t> ranks;
  for (const TracedProcess& p : processes) {
    if (p.rank.has_value()) ranks.insert(*p.rank);
  }
  const bool by_rank = ranks.size() == processes.size();
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const TracedProcess& x = processes[a];
    const TracedProcess& y = processes[b];
    return by_rank ? *x.rank < *y.rank : x.pid < y.pid;
  });
  return order;
}

absl::Status CheckProcesses(const std::vector<TracedProcess>& processes) {
  if (processes.empty()) return absl::InvalidArgumentError("no traced process to analyse");
  std::set<int32_t> pids;
  std::set<std::string> files;
  for (const TracedProcess& p : processes) {
    if (p.pid <= 0 || !pids.insert(p.pid).second) {
      return absl::InvalidArgumentError(absl::StrCat("pid ", p.pid, " is not a process's pid, or "
                                                     "is given twice"));
    }
    if (!files.insert(p.trace_file).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("the trace ", p.trace_file, " is given for two processes"));
    }
  }
  return absl::OkStatus();
}

// The world size of the processes' ranks: every process has a distinct RANK in [0, world),
// world being their WORLD_SIZE where each gives the same one, else how many they are. An
// error says why there is none (no cross-rank view then).
absl::StatusOr<int64_t> RankWorld(const std::vector<TracedProcess>& processes) {
  std::set<int64_t> ranks, worlds;
  bool all_worlds = true;
  for (const TracedProcess& p : processes) {
    if (!p.rank.has_value()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "pid ", p.pid, " has no RANK in its environment: not known to be a rank of one run"));
    }
    ranks.insert(*p.rank);
    if (p.world_size.has_value()) {
      worlds.insert(*p.world_size);
    } else {
      all_worlds = false;
    }
  }
  if (ranks.size() != processes.size()) {
    return absl::FailedPreconditionError("two processes have the same RANK: not one run's ranks");
  }
  if (worlds.size() > 1) {
    return absl::FailedPreconditionError(
        "the processes' WORLD_SIZEs differ: not one run's ranks");
  }
  const int64_t world = all_worlds && !worlds.empty() ? *worlds.begin()
                                                      : static_cast<int64_t>(processes.size());
  if (*ranks.begin() < 0 || *ranks.rbegin() >= world) {
    return absl::FailedPreconditionError(absl::StrCat(
        "RANK ", *ranks.rbegin(), " is not a rank of a ", world, "-rank run (",
        all_worlds ? "the processes' WORLD_SIZE" : "the processes traced", ")"));
  }
  return world;
}

// config: who was traced and which trace of theirs this is (docs/profile-json.md); world_size
// is the run's (RankWorld), null when the processes are not known to be one run's ranks.
std::string TracedProcessConfig(const TracedProcess& proc, const TraceOrigin& origin,
                                std::optional<int64_t> world) {
  JsonWriter w;
  w.BeginObject().Key("traced_process").BeginObject()
      .Field("pid", static_cast<int64_t>(proc.pid))
      .Field("rank", proc.rank)
      .Field("world_size", world)
      .Field("command_line", proc.command_line)
      .Field("trace_file", proc.trace_file)
      .Field("request_trace_id", origin.request_trace_id)
      .EndObject().EndObject();
  return w.Take();
}

// One process's trace (already stored as `trace_path`) analysed into its profile's text.
absl::StatusOr<std::string> AnalyseOne(const TracedProcess& proc, const TraceOrigin& origin,
                                       const std::string& trace_path,
                                       const std::string& trace_artifact,
                                       std::optional<int64_t> world) {
  ASSIGN_OR_RETURN(TraceHeader header, ReadTraceHeader(trace_path));
  const std::string who = absl::StrCat(proc.trace_file, " (pid ", proc.pid, ")");
  if (!header.trace_id.has_value()) {
    return absl::DataLossError(absl::StrCat(
        who, " has no top-level trace_id before its events: not the Kineto trace this job asked "
        "for (REQUEST_TRACE_ID=", origin.request_trace_id, "); refused"));
  }
  if (*header.trace_id != origin.request_trace_id) {
    return absl::DataLossError(absl::StrCat(who, " says trace_id '", *header.trace_id,
                                            "', not '", origin.request_trace_id,
                                            "' that this job asked for: another request's "
                                            "trace; refused"));
  }
  absl::StatusOr<TraceData> data = ReadTraceFile(trace_path);
  if (!data.ok()) {
    return absl::Status(data.status().code(),
                        absl::StrCat(who, ": ", data.status().message()));
  }
  // No ProfilerStep#N marks (Kineto's on-demand window): the analyser counts the window as one
  // step (docs/metrics.md); a profile of a process we did not drive says no step it did not see.
  const bool marked = !data->steps.empty();
  Profile p = AnalyseTrace(*std::move(data));
  if (!marked) {
    p.step_ms.reset();
    p.real_steps.reset();
    p.img_per_s.reset();
    // The verdict again, of the window it now is rather than of "the step" (verdict.h).
    const Verdict v = ComputeVerdict(p);
    p.bound = v.bound;
    p.bound_why = v.why;
  }
  p.trace = trace_artifact;
  p.tool_name = origin.tool;
  p.tool_version = header.schema_version.has_value()
                       ? absl::StrCat("trace schemaVersion ", *header.schema_version)
                       : std::string("trace");
  p.config_json = TracedProcessConfig(proc, origin, world);
  return WriteProfileJson(p);
}

// Rank 0's profile gains `ranks` (the cross-rank view of the stored traces, as a data-parallel
// job's); "" when added, else why not.
std::string AddRanks(const v1::Job& job, const std::vector<RankTraceInput>& traces,
                     const std::map<std::string, std::string>& artifact_of, std::string* text) {
  const int threads = static_cast<int>(
      std::max<size_t>(1, std::min<size_t>(traces.size(), std::thread::hardware_concurrency())));
  absl::StatusOr<RanksView> view =
      BuildRanksViewOfTraces(absl::StrCat("job ", job.id()), traces, threads);
  if (!view.ok()) return std::string(view.status().message());
  view->source = absl::StrCat("job:", job.id());
  for (RankFigures& f : view->result.ranks) {
    auto it = artifact_of.find(f.path);
    if (it != artifact_of.end()) f.path = it->second;
  }
  absl::StatusOr<std::string> with = AddProfileMember(*text, "ranks", RenderRanksJson(*view));
  if (!with.ok()) return std::string(with.status().message());
  *text = *std::move(with);
  return "";
}

absl::StatusOr<v1::Artifact> PublishText(JobStore* store, const std::string& job_id,
                                         const std::string& name, const std::string& text,
                                         int64_t max_bytes) {
  ASSIGN_OR_RETURN(std::string scratch, store->ScratchDir(job_id));
  const std::string path = absl::StrCat(scratch, "/.produced.", name);
  (void)::unlink(path.c_str());
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0640));
  if (!fd.valid()) return absl::ErrnoToStatus(errno, absl::StrCat("cannot create ", path));
  for (size_t done = 0; done < text.size();) {
    const ssize_t w = ::write(fd.get(), text.data() + done, text.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) {
      const int err = errno;
      fd.Reset();
      (void)::unlink(path.c_str());
      return absl::ErrnoToStatus(err, absl::StrCat("cannot write ", path));
    }
    done += static_cast<size_t>(w);
  }
  if (const int err = fd.Close(); err != 0) {
    (void)::unlink(path.c_str());
    return absl::ErrnoToStatus(err, absl::StrCat("cannot write ", path));
  }
  absl::StatusOr<v1::Artifact> art = store->PublishArtifact(job_id, path, name, max_bytes);
  if (!art.ok()) (void)::unlink(path.c_str());
  return art;
}

}  // namespace

absl::Status AnalyseIntoJob(const v1::Job& job, const DropFolder& folder,
                            const std::vector<TracedProcess>& processes,
                            const TraceOrigin& origin, JobStore* store, int64_t max_bytes,
                            std::vector<v1::Artifact>* artifacts) {
  RETURN_IF_ERROR(CheckProcesses(processes));
  const std::vector<size_t> order = RankOrder(processes);
  std::vector<ProducedFile> files;
  for (size_t r = 0; r < order.size(); ++r) {
    files.push_back({processes[order[r]].trace_file,
                     RankArtifactName(static_cast<int64_t>(r), kTraceFileName)});
  }
  ASSIGN_OR_RETURN(std::vector<v1::Artifact> published,
                   TakeProducedFiles(folder, files, store, job.id(), max_bytes));
  auto fail = [&](absl::Status s) {
    internal::UnpublishArtifacts(store, job.id(), published);
    return s;
  };
  absl::StatusOr<std::string> dir = store->ArtifactDir(job.id());
  if (!dir.ok()) return fail(dir.status());

  // Several processes: the ranks of one run where their environments say so.
  absl::StatusOr<int64_t> world = absl::FailedPreconditionError("one process");
  if (order.size() > 1) world = RankWorld(processes);
  std::vector<std::string> texts;
  std::vector<RankTraceInput> inputs;
  std::map<std::string, std::string> artifact_of;
  for (size_t r = 0; r < order.size(); ++r) {
    const TracedProcess& proc = processes[order[r]];
    const std::string path = absl::StrCat(*dir, "/", files[r].artifact);
    const std::optional<int64_t> world_size =
        order.size() > 1 && world.ok() ? std::optional<int64_t>(*world) : std::nullopt;
    absl::StatusOr<std::string> text =
        AnalyseOne(proc, origin, path, files[r].artifact, world_size);
    if (!text.ok()) return fail(text.status());
    texts.push_back(*std::move(text));
    RankTraceInput in{path, std::nullopt};
    if (world_size) in.given = DistributedInfo{"", *proc.rank, *world_size};
    inputs.push_back(std::move(in));
    artifact_of[path] = files[r].artifact;
  }
  if (texts.size() > 1) {
    if (const std::string why = AddRanks(job, inputs, artifact_of, &texts[0]); !why.empty()) {
      std::cerr << "libreyolod: job " << job.id() << ": no cross-rank analysis in its "
                << kProfileFileName << ": " << why
                << (world.ok() ? "" : absl::StrCat(" (and the processes' RANKs do not say: ",
                                                   world.status().message(), ")"))
                << std::endl;
    }
  }
  for (size_t r = 0; r < texts.size(); ++r) {
    absl::StatusOr<v1::Artifact> art =
        PublishText(store, job.id(), RankArtifactName(static_cast<int64_t>(r), kProfileFileName),
                    texts[r], max_bytes);
    if (!art.ok()) return fail(art.status());
    published.push_back(*std::move(art));
  }
  artifacts->insert(artifacts->end(), published.begin(), published.end());
  return absl::OkStatus();
}

}  // namespace libreyolo::daemon::external
