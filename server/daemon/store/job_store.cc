// The job store: job records, event logs and artifacts on disk (layout in job_store.h). This
// file: records, event logs, recovery (LoadAll), deletion and retention; job_store_artifacts.cc:
// scratch and artifact directories; job_store_fs.cc: the helpers of job_store_internal.h.
//
// Conventions of these files:
// - Every path built from a job id goes through CheckJobId; every artifact name through
//   ValidArtifactName. Neither admits '/', so no path here can climb out of its directory.
// - Errors name the path and carry strerror (OsError: absl::ErrnoToStatus maps ENOSPC to
//   RESOURCE_EXHAUSTED, EACCES to PERMISSION_DENIED, ENOENT to NOT_FOUND ...; the shared
//   common/io helpers map the same errors alike).
// - Files are written through common/io/atomic_file.h (WriteFileAtomically, its temp files
//   "<dir>/.tmp.<final name>.XXXXXX"); LoadAll removes any temp file it finds.
// - Each public entry point runs inside Guarded(), so that no exception (bad_alloc) escapes.
// Behaviour the header leaves open:
// - LoadAll is startup recovery: it removes every scratch dir, so it must not run while jobs do.
//   An event log whose job has no record is moved to corrupt/ like an unparsable record.
// - PublishArtifact's `file` is a path, or a bare name inside the job's scratch dir; a file on
//   another file system is copied in atomically (EXDEV). The size limit is checked before the
//   move and again on the bytes hashed.
// - DeleteJob is idempotent (OK when nothing is left) and removes the record last.
// - JobsToExpire counts a finished job without a finish time from its creation time.
#include "server/daemon/store/job_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <limits>
#include <optional>
#include <set>
#include <system_error>
#include <tuple>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/io/atomic_file.h"
#include "common/io/sha256.h"
#include "common/io/unique_fd.h"
#include "common/status/status_macros.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "server/daemon/store/job_store_internal.h"

namespace libreyolo::daemon {

using namespace job_store_internal;  // NOLINT: the store's own helpers

namespace {

google::protobuf::util::JsonPrintOptions PrintOptions() {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;  // the files use the .proto's snake_case names
  return options;
}

google::protobuf::util::JsonParseOptions ParseOptions() {
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;  // a record written by a newer daemon still loads
  return options;
}

absl::StatusOr<std::string> ToJson(const google::protobuf::Message& message) {
  std::string json;
  const auto st = google::protobuf::util::MessageToJsonString(message, &json, PrintOptions());
  if (!st.ok()) {
    return absl::InternalError(
        absl::StrCat("cannot serialise ", message.GetTypeName(), ": ", st.message().ToString()));
  }
  return json;
}

// An empty string when `json` parses into `message`, otherwise the parser's complaint.
std::string FromJson(absl::string_view json, google::protobuf::Message* message) {
  const auto st = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(json.data(), json.size()), message, ParseOptions());
  if (st.ok()) return "";
  const std::string why = st.message().ToString();
  return why.empty() ? "unparsable JSON" : why;
}

// The record file's own key beside the Job's fields (RunClock); a Job parse ignores it.
constexpr char kRunClockKey[] = "libreyolod_run_clock";

// `job_json` (a Job's JSON object, never empty: it has an id) with the run clock added as its
// last key.
absl::StatusOr<std::string> WithRunClock(std::string job_json, const RunClock& run) {
  google::protobuf::Struct clock;
  auto& fields = *clock.mutable_fields();
  fields["boot_id"].set_string_value(run.boot_id);
  fields["start_steady_ms"].set_number_value(static_cast<double>(run.start_steady_ms));
  fields["ran_ms"].set_number_value(static_cast<double>(run.ran_ms));
  ASSIGN_OR_RETURN(const std::string value, ToJson(clock));
  const size_t close = job_json.rfind('}');
  if (close == std::string::npos) {
    return absl::InternalError("job store: a record is not an object");
  }
  job_json.replace(close, 1, absl::StrCat(",\"", kRunClockKey, "\":", value, "}"));
  return job_json;
}

// The run clock of a record file, if it has a well-formed one (anything else: none, and the
// job's wall-clock times are all there is).
std::optional<RunClock> ReadRunClock(absl::string_view record) {
  if (!absl::StrContains(record, kRunClockKey)) return std::nullopt;
  google::protobuf::Struct all;
  if (!FromJson(record, &all).empty()) return std::nullopt;
  auto it = all.fields().find(kRunClockKey);
  if (it == all.fields().end() || !it->second.has_struct_value()) return std::nullopt;
  const auto& f = it->second.struct_value().fields();
  const auto boot = f.find("boot_id");
  const auto start = f.find("start_steady_ms");
  const auto ran = f.find("ran_ms");
  if (boot == f.end() || start == f.end() || ran == f.end() ||
      boot->second.kind_case() != google::protobuf::Value::kStringValue ||
      start->second.kind_case() != google::protobuf::Value::kNumberValue ||
      ran->second.kind_case() != google::protobuf::Value::kNumberValue) {
    return std::nullopt;
  }
  const double start_ms = start->second.number_value();
  const double ran_ms = ran->second.number_value();
  constexpr double kMaxMs = 9.0e15;  // exact in a double, and far beyond any uptime
  if (!(start_ms >= 0 && start_ms < kMaxMs && ran_ms >= -1 && ran_ms < kMaxMs)) {
    return std::nullopt;
  }
  return RunClock{boot->second.string_value(), static_cast<int64_t>(start_ms),
                  static_cast<int64_t>(ran_ms)};
}

// Moves <dir>/<name> to <state_dir>/corrupt/ (never overwriting an earlier one) and says so.
void Quarantine(const std::string& state_dir, const std::string& dir, const std::string& name,
                const std::string& why, std::vector<std::string>* warnings, FileOps& ops) {
  const std::string from = Join(dir, name);
  const std::string corrupt = Join(state_dir, "corrupt");
  absl::Status st = MakeDirs(corrupt, 0700);
  std::string to = Join(corrupt, name);
  struct stat unused {};
  for (int i = 1; st.ok() && ::lstat(to.c_str(), &unused) == 0; ++i) {
    to = absl::StrCat(Join(corrupt, name), ".", i);
  }
  if (st.ok() && ops.RenameNoReplace(from.c_str(), to.c_str()) != 0) {
    st = OsError(errno, absl::StrCat("cannot move ", from, " to"), to);
  }
  if (st.ok()) {
    (void)FsyncDirectory(corrupt, ops);
    (void)FsyncDirectory(dir, ops);
    warnings->push_back(absl::StrCat(from, ": ", why, "; moved to ", to));
  } else {
    warnings->push_back(absl::StrCat(from, ": ", why, "; left in place (", st.message(), ")"));
  }
}

std::string EventsFile(const std::string& events_dir, const std::string& id) {
  return Join(events_dir, absl::StrCat(id, ".jsonl"));
}

// Reads <events_dir>/<id>.jsonl. Unparsable lines are skipped with a warning naming file:line;
// an unparsable or unterminated last line (a crash in the middle of an append) is dropped and
// cut off the file, so that the next append starts on a clean line.
absl::Status LoadEvents(const std::string& events_dir, const std::string& id,
                        std::vector<v1::JobEvent>* events, std::vector<std::string>* warnings,
                        FileOps& ops) {
  const std::string path = EventsFile(events_dir, id);
  auto data = ReadFile(path);
  if (!data.ok()) {
    if (absl::IsNotFound(data.status())) return absl::OkStatus();
    return data.status();
  }
  const absl::string_view all = *data;
  size_t pos = 0;
  size_t keep = all.size();  // bytes of the file to keep
  for (int64_t line_no = 1; pos < all.size(); ++line_no) {
    const size_t nl = all.find('\n', pos);
    const bool terminated = nl != absl::string_view::npos;
    const size_t end = terminated ? nl : all.size();
    const absl::string_view line = all.substr(pos, end - pos);
    const bool last = !terminated || nl + 1 == all.size();
    const std::string where = absl::StrCat(path, ":", line_no);
    v1::JobEvent event;
    const std::string why =
        !terminated ? "unterminated" : (line.empty() ? "" : FromJson(line, &event));
    if (!why.empty() && last) {
      warnings->push_back(absl::StrCat(where, ": dropped the last event line (", why,
                                       "), left by an interrupted append"));
      keep = pos;
    } else if (!why.empty()) {
      warnings->push_back(absl::StrCat(where, ": skipped an unparsable event line (", why, ")"));
    } else if (!line.empty() && event.job_id() != id) {
      warnings->push_back(
          absl::StrCat(where, ": skipped an event of another job ", Quote(event.job_id())));
    } else if (!line.empty()) {
      events->push_back(std::move(event));
    }
    pos = terminated ? nl + 1 : all.size();
  }
  if (keep < all.size()) {
    UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOFOLLOW));
    absl::Status st = fd.valid() ? absl::OkStatus() : OsError(errno, "cannot open", path);
    if (st.ok() && ops.Ftruncate(fd.get(), static_cast<off_t>(keep)) != 0) {
      st = OsError(errno, "cannot truncate", path);
    }
    if (st.ok()) st = FsyncFd(fd.get(), path, ops);
    if (!st.ok()) warnings->push_back(absl::StrCat("cannot repair the event log: ", st.message()));
  }
  std::stable_sort(
      events->begin(), events->end(),
      [](const v1::JobEvent& a, const v1::JobEvent& b) { return a.sequence() < b.sequence(); });
  auto dup = std::adjacent_find(
      events->begin(), events->end(),
      [](const v1::JobEvent& a, const v1::JobEvent& b) { return a.sequence() == b.sequence(); });
  if (dup != events->end()) {
    warnings->push_back(absl::StrCat(path, ": duplicate event sequence numbers (first ",
                                     dup->sequence(), "); keeping the first of each"));
    events->erase(std::unique(events->begin(), events->end(),
                              [](const v1::JobEvent& a, const v1::JobEvent& b) {
                                return a.sequence() == b.sequence();
                              }),
                  events->end());
  }
  return absl::OkStatus();
}

// Removes <store_dir>/.tmp/* and temp files left in the artifact directories.
void CleanStore(const std::string& store_dir, const std::string& scratch_root,
                std::vector<std::string>* warnings) {
  if (auto scratch = ListDir(scratch_root); scratch.ok()) {
    for (const std::string& name : *scratch) {
      const std::string path = Join(scratch_root, name);
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
      warnings->push_back(
          ec ? absl::StrCat("cannot remove leftover scratch ", path, ": ", ec.message())
             : absl::StrCat("removed leftover scratch ", path));
    }
  }
  auto dirs = ListDir(store_dir);
  if (!dirs.ok()) {
    warnings->push_back(std::string(dirs.status().message()));
    return;
  }
  for (const std::string& id : *dirs) {
    const std::string dir = Join(store_dir, id);
    struct stat st {};
    if (!ValidJobId(id) || ::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) continue;
    auto files = ListDir(dir);
    if (!files.ok()) continue;
    for (const std::string& name : *files) {
      if (!absl::StartsWith(name, kTmpPrefix)) {
        continue;
      }
      const std::string path = Join(dir, name);
      if (::unlink(path.c_str()) == 0) warnings->push_back("removed leftover temp file " + path);
    }
  }
}

absl::Status CheckWritableDir(const std::string& dir) {
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    return OsError(errno, "cannot write to directory", dir);
  }
  return absl::OkStatus();
}

}  // namespace

// ---- JobStore ------------------------------------------------------------------------------

absl::StatusOr<std::unique_ptr<JobStore>> JobStore::Open(const std::string& state_dir,
                                                         const std::string& store_dir,
                                                         FileOps* ops) {
  return Guarded("Open", [&]() -> absl::StatusOr<std::unique_ptr<JobStore>> {
    if (state_dir.empty() || store_dir.empty()) {
      return absl::InvalidArgumentError("job store: the state and store directories must be set");
    }
    std::string state = StripTrailingSlashes(state_dir);
    std::string store = StripTrailingSlashes(store_dir);
    const Layout layout = LayoutOf(state, store);
    absl::Status st = MakeDirs(state, 0700);
    for (const std::string& dir : {layout.jobs, layout.events}) {
      if (st.ok()) st = MakeDirs(dir, 0700);
      if (st.ok()) st = CheckWritableDir(dir);
    }
    if (!st.ok()) {
      return absl::FailedPreconditionError(
          absl::StrCat("job store: unusable state directory ", state, ": ", st.message()));
    }
    st = MakeDirs(store, 0750);
    if (st.ok()) st = CheckWritableDir(store);
    if (st.ok()) st = MakeRealDir(layout.scratch_root, 0750);
    if (st.ok()) st = CheckWritableDir(layout.scratch_root);
    if (!st.ok()) {
      return absl::FailedPreconditionError(
          absl::StrCat("job store: unusable store directory ", store, ": ", st.message()));
    }
    return std::unique_ptr<JobStore>(
        new JobStore(std::move(state), std::move(store), ops != nullptr ? *ops : SystemFileOps()));
  });
}

absl::StatusOr<std::vector<StoredJob>> JobStore::LoadAll(std::vector<std::string>* warnings) {
  return Guarded("LoadAll", [&]() -> absl::StatusOr<std::vector<StoredJob>> {
    std::vector<std::string> ignored;
    if (warnings == nullptr) warnings = &ignored;
    const Layout layout = LayoutOf(state_dir_, store_dir_);
    CleanStore(store_dir_, layout.scratch_root, warnings);

    std::vector<StoredJob> jobs;
    std::set<std::string> ids;
    ASSIGN_OR_RETURN(const std::vector<std::string> records, ListDir(layout.jobs));
    for (const std::string& name : records) {
      const std::string path = Join(layout.jobs, name);
      if (absl::StartsWith(name, kTmpPrefix)) {
        if (::unlink(path.c_str()) == 0) warnings->push_back("removed leftover temp file " + path);
        continue;
      }
      const std::string id = name.substr(0, name.size() - std::min<size_t>(name.size(), 5));
      if (!absl::EndsWith(name, ".json") || !ValidJobId(id)) {
        warnings->push_back(absl::StrCat(path, ": not a job record; ignored"));
        continue;
      }
      auto data = ReadFile(path);
      if (!data.ok()) {
        warnings->push_back(absl::StrCat("skipped a job record: ", data.status().message()));
        continue;
      }
      StoredJob job;
      std::string why = FromJson(*data, &job.job);
      if (why.empty() && job.job.id() != id) {
        why = absl::StrCat("the record's id ", Quote(job.job.id()), " does not match its name");
      }
      if (!why.empty()) {
        Quarantine(state_dir_, layout.jobs, name, "cannot parse the job record (" + why + ")",
                   warnings, ops_);
        continue;
      }
      job.run = ReadRunClock(*data);
      ids.insert(id);
      jobs.push_back(std::move(job));
    }

    {
      std::lock_guard<std::mutex> lock(append_mu_);
      for (StoredJob& job : jobs) {
        const absl::Status st =
            LoadEvents(layout.events, job.job.id(), &job.events, warnings, ops_);
        if (!st.ok()) warnings->push_back(absl::StrCat("skipped an event log: ", st.message()));
      }
      ASSIGN_OR_RETURN(const std::vector<std::string> logs, ListDir(layout.events));
      for (const std::string& name : logs) {
        const std::string id = name.substr(0, name.size() - std::min<size_t>(name.size(), 6));
        if (absl::EndsWith(name, ".jsonl") && ValidJobId(id) && ids.count(id) == 0) {
          Quarantine(state_dir_, layout.events, name, "an event log without a job record", warnings,
                     ops_);
        } else if (!absl::EndsWith(name, ".jsonl") || !ValidJobId(id)) {
          warnings->push_back(
              absl::StrCat(Join(layout.events, name), ": not an event log; ignored"));
        }
      }
    }

    std::sort(jobs.begin(), jobs.end(), [](const StoredJob& a, const StoredJob& b) {
      return std::make_pair(a.job.create_time_unix_ms(), a.job.id()) <
             std::make_pair(b.job.create_time_unix_ms(), b.job.id());
    });
    return jobs;
  });
}

absl::Status JobStore::PutJob(const v1::Job& job, const std::optional<RunClock>& run) {
  return Guarded("PutJob", [&]() -> absl::Status {
    RETURN_IF_ERROR(CheckJobId(job.id()));
    ASSIGN_OR_RETURN(std::string json, ToJson(job));
    if (run.has_value()) {
      ASSIGN_OR_RETURN(json, WithRunClock(std::move(json), *run));
    }
    json.push_back('\n');
    const std::string jobs = LayoutOf(state_dir_, store_dir_).jobs;
    return WriteFileAtomically(Join(jobs, absl::StrCat(job.id(), ".json")), json, 0600, ops_);
  });
}

absl::Status JobStore::Probe() {
  return Guarded("Probe", [&]() -> absl::Status {
    // About a job record's size, so that a probe that passes leaves room for the next record.
    const std::string path = Join(state_dir_, ".probe");
    RETURN_IF_ERROR(WriteFileAtomically(path, std::string(4096, '\n'), 0600, ops_));
    if (::unlink(path.c_str()) != 0) return OsError(errno, "cannot remove", path);
    return FsyncDirectory(state_dir_, ops_);
  });
}

absl::Status JobStore::AppendEvent(const v1::JobEvent& event) {
  return Guarded("AppendEvent", [&]() -> absl::Status {
    RETURN_IF_ERROR(CheckJobId(event.job_id()));
    ASSIGN_OR_RETURN(std::string line, ToJson(event));
    line.push_back('\n');
    const std::string dir = LayoutOf(state_dir_, store_dir_).events;
    const std::string path = EventsFile(dir, event.job_id());

    std::lock_guard<std::mutex> lock(append_mu_);
    bool created = false;
    int raw = ::open(path.c_str(), O_RDWR | O_APPEND | O_CLOEXEC | O_NOFOLLOW);
    if (raw < 0 && errno == ENOENT) {
      raw = ::open(path.c_str(), O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
      created = raw >= 0;
    }
    UniqueFd fd(raw);
    if (!fd.valid()) return OsError(errno, "cannot open", path);
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return OsError(errno, "cannot stat", path);
    // A line cut short by an earlier crash must not swallow this one.
    char last = '\n';
    if (st.st_size > 0 && ::pread(fd.get(), &last, 1, st.st_size - 1) != 1) {
      return OsError(errno, "cannot read", path);
    }
    if (last != '\n') line.insert(line.begin(), '\n');
    absl::Status status = WriteAllToFd(fd.get(), line, path, ops_);
    if (status.ok()) status = FsyncFd(fd.get(), path, ops_);
    if (status.ok() && created) status = FsyncDirectory(dir, ops_);
    if (!status.ok()) {
      // Leave the log as it was: no partial line behind a failed append (disk full).
      if (ops_.Ftruncate(fd.get(), st.st_size) == 0) (void)ops_.Fsync(fd.get());
      if (created) ::unlink(path.c_str());
      return status;
    }
    return CloseFd(fd, path);
  });
}

absl::Status JobStore::DiscardEvents(const std::string& job_id) {
  return Guarded("DiscardEvents", [&]() -> absl::Status {
    RETURN_IF_ERROR(CheckJobId(job_id));
    const std::string dir = LayoutOf(state_dir_, store_dir_).events;
    const std::string path = EventsFile(dir, job_id);
    std::lock_guard<std::mutex> lock(append_mu_);
    if (::unlink(path.c_str()) != 0) {
      return errno == ENOENT ? absl::OkStatus() : OsError(errno, "cannot remove", path);
    }
    return FsyncDirectory(dir, ops_);
  });
}

absl::Status JobStore::DeleteJob(const std::string& job_id) {
  return Guarded("DeleteJob", [&]() -> absl::Status {
    RETURN_IF_ERROR(CheckJobId(job_id));
    const Layout layout = LayoutOf(state_dir_, store_dir_);
    std::lock_guard<std::mutex> lock(append_mu_);
    // The record goes last: a crash half way leaves a record that retention deletes again.
    for (const std::string& dir : {Join(store_dir_, job_id), Join(layout.scratch_root, job_id)}) {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
      if (ec) return absl::InternalError(absl::StrCat("cannot remove ", dir, ": ", ec.message()));
    }
    for (const std::string& file :
         {EventsFile(layout.events, job_id), Join(layout.jobs, absl::StrCat(job_id, ".json"))}) {
      if (::unlink(file.c_str()) != 0 && errno != ENOENT) {
        return OsError(errno, "cannot remove", file);
      }
    }
    RETURN_IF_ERROR(FsyncDirectory(store_dir_, ops_));
    RETURN_IF_ERROR(FsyncDirectory(layout.events, ops_));
    return FsyncDirectory(layout.jobs, ops_);
  });
}

// ---- Free functions ------------------------------------------------------------------------

std::vector<std::string> JobsToExpire(const std::vector<v1::Job>& jobs, int64_t now_unix_ms,
                                      int64_t max_age_hours, int64_t max_jobs) {
  try {
    std::vector<const v1::Job*> finished;
    for (const v1::Job& job : jobs) {
      const v1::JobState s = job.state();
      if (s == v1::JOB_STATE_SUCCEEDED || s == v1::JOB_STATE_FAILED ||
          s == v1::JOB_STATE_CANCELLED) {
        finished.push_back(&job);
      }
    }
    // A finished job without a finish time (recovered after a crash) counts from its creation.
    const auto finish = [](const v1::Job* j) {
      return j->finish_time_unix_ms() > 0 ? j->finish_time_unix_ms() : j->create_time_unix_ms();
    };
    std::sort(finished.begin(), finished.end(), [&](const v1::Job* a, const v1::Job* b) {
      return std::make_tuple(finish(a), a->create_time_unix_ms(), a->id()) <
             std::make_tuple(finish(b), b->create_time_unix_ms(), b->id());
    });
    size_t n = 0;  // the oldest n finished jobs go
    if (max_age_hours > 0) {
      constexpr int64_t kMsPerHour = 3600LL * 1000;
      const int64_t age_ms = max_age_hours > std::numeric_limits<int64_t>::max() / kMsPerHour
                                 ? std::numeric_limits<int64_t>::max()
                                 : max_age_hours * kMsPerHour;
      const int64_t cutoff = now_unix_ms < std::numeric_limits<int64_t>::min() + age_ms
                                 ? std::numeric_limits<int64_t>::min()
                                 : now_unix_ms - age_ms;
      while (n < finished.size() && finish(finished[n]) < cutoff) ++n;
    }
    if (max_jobs > 0 && finished.size() > static_cast<uint64_t>(max_jobs)) {
      n = std::max(n, finished.size() - static_cast<size_t>(max_jobs));
    }
    std::vector<std::string> ids;
    ids.reserve(n);
    for (size_t i = 0; i < n; ++i) ids.push_back(finished[i]->id());
    return ids;
  } catch (...) {  // bad_alloc: expire nothing this round
    return {};
  }
}

}  // namespace libreyolo::daemon
