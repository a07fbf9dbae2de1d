#include "server/daemon/jobs/job_manager.h"

#include <algorithm>
#include <climits>
#include <random>
#include <set>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/status/exit_code.h"
#include "common/status/status_macros.h"
#include "common/status/thread_guard.h"

namespace libreyolo::daemon {
namespace {

bool Terminal(v1::JobState s) {
  return s == v1::JOB_STATE_SUCCEEDED || s == v1::JOB_STATE_FAILED || s == v1::JOB_STATE_CANCELLED;
}

std::string StateLabel(v1::JobState s) {
  switch (s) {
    case v1::JOB_STATE_QUEUED:
      return "queued";
    case v1::JOB_STATE_RUNNING:
      return "running";
    case v1::JOB_STATE_SUCCEEDED:
      return "succeeded";
    case v1::JOB_STATE_FAILED:
      return "failed";
    case v1::JOB_STATE_CANCELLED:
      return "cancelled";
    default:
      return "unspecified";
  }
}

// While out of service, how often the retention thread tries the store again.
constexpr auto kStoreRetryInterval = std::chrono::milliseconds(5000);
// How often retention looks for finished jobs to delete (and SetLimits at once).
constexpr auto kRetentionInterval = std::chrono::milliseconds(60'000);

}  // namespace

std::string NewJobId() {
  static std::mutex mu;
  static std::mt19937_64 rng{std::random_device{}()};
  uint64_t r = 0;
  {
    std::lock_guard<std::mutex> lock(mu);
    r = rng();
  }
  return absl::StrCat(absl::FormatTime("%Y%m%d", absl::Now(), absl::UTCTimeZone()), "-",
                      absl::StrFormat("%016x", r));
}

JobManager::JobManager(JobStore* store, JobRunner* runner, std::vector<std::string> devices,
                       Limits limits, Retention retention, const Clock& clock)
    : store_(store),
      runner_(runner),
      devices_(std::move(devices)),
      limits_(limits),
      retention_(retention),
      clock_(clock),
      started_(clock.SteadyNow()) {
  for (const std::string& d : devices_) device_state_[d];
}

JobManager::~JobManager() { Drain(std::chrono::milliseconds(0)); }

absl::Status JobManager::Recover(std::vector<std::string>* warnings) {
  ASSIGN_OR_RETURN(std::vector<StoredJob> stored, store_->LoadAll(warnings));
  std::lock_guard<std::mutex> lock(mu_);
  std::sort(stored.begin(), stored.end(), [](const StoredJob& a, const StoredJob& b) {
    return a.job.create_time_unix_ms() != b.job.create_time_unix_ms()
               ? a.job.create_time_unix_ms() < b.job.create_time_unix_ms()
               : a.job.id() < b.job.id();
  });
  for (StoredJob& s : stored) {
    auto e = std::make_unique<Entry>();
    e->job = std::move(s.job);
    e->events = std::move(s.events);
    e->submit_order = next_submit_order_++;
    // The record and the event log are written separately; the log may hold one more event.
    if (!e->events.empty() && e->events.back().sequence() > e->job.last_sequence()) {
      e->job.set_last_sequence(e->events.back().sequence());
    }
    const std::string id = e->job.id();
    RecoverRunTimeLocked(*e, s.run, warnings);
    if (e->job.state() == v1::JOB_STATE_RUNNING) {
      v1::Job failed = e->job;
      failed.set_state(v1::JOB_STATE_FAILED);
      failed.set_error(
          "libreyolod stopped while this job was running (crash, kill or power loss); its "
          "partial outputs were discarded: submit it again");
      failed.set_exit_code(ExitCodeForStatus(absl::AbortedError("")));
      failed.set_finish_time_unix_ms(NowMs());
      store_->DiscardScratch(id);
      // It may have died between publishing an artifact and recording the job's success.
      failed.clear_artifacts();
      store_->DiscardArtifacts(id);
      RecoverAsFailedLocked(*e, std::move(failed), warnings);
    } else if (e->job.state() == v1::JOB_STATE_QUEUED) {
      const std::vector<std::string> slots = JobDevices(e->job);
      auto unserved = std::find_if(slots.begin(), slots.end(), [&](const std::string& d) {
        return device_state_.count(d) == 0;
      });
      if (unserved != slots.end()) {
        v1::Job failed = e->job;
        failed.set_state(v1::JOB_STATE_FAILED);
        failed.set_error(absl::StrCat("device ", *unserved, " is no longer served by this daemon"));
        failed.set_exit_code(ExitCodeForStatus(absl::FailedPreconditionError("")));
        failed.set_finish_time_unix_ms(NowMs());
        RecoverAsFailedLocked(*e, std::move(failed), warnings);
      } else {
        store_->DiscardScratch(id);
      }
    }
    if (!e->job.request().request_id().empty()) {
      request_ids_[absl::StrCat(e->job.owner(), "/", e->job.request().request_id())] = id;
    }
    jobs_[id] = std::move(e);
  }
  RebuildUsageLocked();
  RefreshQueuePositionsLocked();
  return absl::OkStatus();
}

void JobManager::RecoverAsFailedLocked(Entry& e, v1::Job failed,
                                       std::vector<std::string>* warnings) {
  // The record first, then its event. One that cannot be written (a full state filesystem) no
  // longer keeps the daemon down (issue 40, item 8: systemd's RestartPreventExitStatus=2 left
  // it so for good): the job stays as it is on disk (RUNNING or QUEUED, which nothing starts)
  // and the manager out of service until RetryStore writes the record and its "failed" event.
  // Nothing runs twice: a restart before that decides the same again.
  if (absl::Status st = store_->PutJob(failed, RunClockLocked(e, failed)); !st.ok()) {
    StoreFailedLocked(st);
    if (warnings != nullptr) {
      warnings->push_back(absl::StrCat(
          "cannot record the recovered state of job ", failed.id(), " (", st.message(),
          "); libreyolod starts out of service (it accepts and starts no job) until the state "
          "filesystem has room: free space there, it resumes by itself"));
    }
    failed.set_last_sequence(e.job.last_sequence());
    e.pending = std::move(failed);
    e.pending_stage = "failed";
    return;
  }
  e.job = std::move(failed);
  AppendEventLocked(e, "failed", 0, 0, e.job.error());
}

void JobManager::RecoverRunTimeLocked(Entry& e, const std::optional<RunClock>& run,
                                      std::vector<std::string>* warnings) {
  const v1::Job& j = e.job;
  if (j.start_time_unix_ms() <= 0) return;  // it never started
  if (run.has_value()) {
    e.started_boot = run->boot_id;
    e.started_steady = Clock::SteadyTime(std::chrono::milliseconds(run->start_steady_ms));
    if (run->ran_ms >= 0) {  // measured on the monotonic clock when it ended
      e.ran_ms = run->ran_ms;
      return;
    }
  }
  // Running when the daemon stopped, or ended before records kept a run clock. In the same
  // boot, the monotonic clock says how long ago it started; otherwise only the wall clock
  // does, which a step (NTP, `date -s`) may have moved by days: its span is bounded by the
  // job's time limit, and a negative one counts 0. A job that was running ends, for this, at
  // its last stored event (its last sign of life), not at this restart.
  const bool same_boot = !Terminal(j.state()) && run.has_value() && !run->boot_id.empty() &&
                         run->boot_id == clock_.BootId();
  int64_t ms = 0;
  if (same_boot) {
    ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(clock_.SteadyNow() - e.started_steady)
            .count();
  } else {
    const int64_t end = Terminal(j.state()) ? j.finish_time_unix_ms()
                        : e.events.empty()  ? NowMs()
                                            : e.events.back().time_unix_ms();
    ms = end - j.start_time_unix_ms();
  }
  const int64_t limit_s =
      j.max_wall_seconds() > 0 ? j.max_wall_seconds() : limits_.max_job_seconds;
  const int64_t limit_ms = limit_s > 0 ? std::min(limit_s, kMaxJobSeconds) * 1000 : INT64_MAX;
  e.ran_ms = std::clamp<int64_t>(ms, 0, limit_ms);
  if (e.ran_ms != ms && warnings != nullptr) {
    warnings->push_back(absl::StrCat(
        "job ", j.id(), ": its ", same_boot ? "monotonic" : "wall-clock", " run time (", ms,
        " ms, from its record's times) is outside 0..its time limit (", limit_s,
        " s): the clock was stepped while it ran; its device time and duration count ", e.ran_ms,
        " ms"));
  }
}

std::optional<RunClock> JobManager::RunClockLocked(const Entry& e, const v1::Job& record) const {
  if (record.start_time_unix_ms() <= 0) return std::nullopt;
  return RunClock{
      e.started_boot,
      std::chrono::duration_cast<std::chrono::milliseconds>(e.started_steady.time_since_epoch())
          .count(),
      Terminal(record.state()) ? e.ran_ms : -1};
}

// Fair share survives a restart: device usage lives in memory, so without this a restarted
// daemon forgot who had been served (bench/daemon_soak.py measured 1.30x between users where
// 1.25x is the goal). The busy period that is still going on began no later than the oldest
// queued job's submission; every job that ran since counts for its owner, as it did when it
// finished (time x slots), the time it ran on the monotonic clock (RecoverRunTimeLocked),
// never its wall-clock span, which a clock step makes days long (issue 40 A.6). Which jobs
// fall in the busy period is read on the wall clock; a job that started before it counts the
// part after its start, at most the time it ran.
void JobManager::RebuildUsageLocked() {
  int64_t since = INT64_MAX;
  std::vector<FairShare::PastRun> runs;
  for (const auto& [id, e] : jobs_) {
    const v1::Job& j = e->job;
    if (j.state() == v1::JOB_STATE_QUEUED) since = std::min(since, j.create_time_unix_ms());
    if (j.device() == kAttachLane) continue;  // holds no device
    runs.push_back({j.owner(), j.start_time_unix_ms(), j.finish_time_unix_ms(), e->ran_ms,
                    static_cast<int64_t>(JobDevices(j).size())});
  }
  fair_.Rebuild(since, runs);
}

void JobManager::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [device, state] : device_state_) {
    state.worker = std::thread([this, d = device] {
      RunGuarded(absl::StrCat("job worker ", d),
                 absl::StrCat("libreyolod keeps serving; ", d, " starts no job until it restarts"),
                 [&] { WorkerLoop(d); });
    });
  }
  retention_thread_ = std::thread([this] {
    RunGuarded("retention sweep", "libreyolod keeps serving; no job expires until it restarts",
               [this] { SweepRetention(); });
  });
}

void JobManager::Drain(std::chrono::milliseconds deadline) {
  accepting_ = false;
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (stopping_) return;
    stopping_ = true;  // workers take no new job
    work_cv_.notify_all();
    retention_cv_.notify_all();
    const auto until = clock_.SteadyNow() + deadline;
    auto busy = [&] {
      return std::any_of(device_state_.begin(), device_state_.end(),
                         [](const auto& kv) { return !kv.second.running.empty(); });
    };
    while (busy() && clock_.SteadyNow() < until) clock_.WaitUntil(events_cv_, lock, until);
    for (auto& [device, state] : device_state_) {
      if (state.running.empty()) continue;
      auto it = jobs_.find(state.running);
      if (it != jobs_.end()) it->second->cancel.cancelled = true;
    }
    events_cv_.notify_all();
  }
  for (auto& [device, state] : device_state_) {
    if (state.worker.joinable()) state.worker.join();
  }
  if (retention_thread_.joinable()) retention_thread_.join();
  {
    std::lock_guard<std::mutex> lock(mu_);
    (void)RetryStoreLocked();  // a last try at the records held back
    drained_ = true;
  }
  events_cv_.notify_all();
}

bool JobManager::Visible(const Identity& who, const v1::Job& job) const {
  return who.admin || job.owner() == who.user;
}

absl::StatusOr<v1::Job> JobManager::Submit(const Identity& who, const v1::SubmitJobRequest& request,
                                           const std::string& device) {
  RETURN_IF_ERROR(Admission::CheckAccepting(accepting_));
  std::lock_guard<std::mutex> lock(mu_);
  RETURN_IF_ERROR(Admission::CheckInService(store_error_));
  RETURN_IF_ERROR(Admission::CheckDevice(device, devices_));
  ASSIGN_OR_RETURN(const Entry* same, SameRequestLocked(who, request));
  if (same != nullptr) return same->job;
  const Admission::Load load = LoadLocked(who, device);
  RETURN_IF_ERROR(Admission::CheckQueueLimits(who.user, device, load, limits_));
  ASSIGN_OR_RETURN(const std::vector<std::string> ranks,
                   Admission::Ranks(request, device, devices_));  // a data-parallel job's slots
  std::unique_ptr<Entry> e = NewEntryLocked(who, request, device, ranks);
  RETURN_IF_ERROR(PersistNewJobLocked(e->job));
  return EnqueueLocked(std::move(e), who, request, load.active_users).job;
}

absl::StatusOr<const JobManager::Entry*> JobManager::SameRequestLocked(
    const Identity& who, const v1::SubmitJobRequest& request) const {
  if (request.request_id().empty()) return nullptr;
  auto it = request_ids_.find(absl::StrCat(who.user, "/", request.request_id()));
  if (it == request_ids_.end()) return nullptr;
  const Entry& existing = *jobs_.at(it->second);
  RETURN_IF_ERROR(Admission::CheckSameRequest(existing.job, request));
  return &existing;
}

Admission::Load JobManager::LoadLocked(const Identity& who, const std::string& device) const {
  std::vector<const v1::Job*> all;
  all.reserve(jobs_.size());
  for (const auto& [id, e] : jobs_) all.push_back(&e->job);
  return Admission::Count(all, who.user, device);
}

std::unique_ptr<JobManager::Entry> JobManager::NewEntryLocked(
    const Identity& who, const v1::SubmitJobRequest& request, const std::string& device,
    const std::vector<std::string>& ranks) {
  auto e = std::make_unique<Entry>();
  v1::Job& job = e->job;
  job.set_id(NewJobId());
  // An attach job (issue 37) runs on the attach lane: no device slot, no rank placement.
  job.set_kind(request.has_attach() ? v1::JOB_KIND_ATTACH
               : request.has_run()  ? v1::JOB_KIND_RUN
                                    : v1::JOB_KIND_INFER);
  job.set_state(v1::JOB_STATE_QUEUED);
  job.set_owner(who.user);
  // Who submitted, as the daemon knows it (never from the request): the attach job's owner
  // check reads these (attach_job.h: ResolveOwner).
  if (who.uid.has_value()) job.set_owner_uid(static_cast<int32_t>(*who.uid));
  job.set_owner_admin(who.admin);
  *job.mutable_labels() = request.labels();
  job.set_priority(request.priority());
  job.set_max_wall_seconds(JobWallSeconds(request.max_wall_seconds(), limits_.max_job_seconds));
  job.set_device(ranks.empty() ? device : ranks.front());
  for (const std::string& r : ranks) job.add_devices(r);
  if (!ranks.empty()) *job.mutable_world() = JobWorldOf(request.run().data_parallel());
  *job.mutable_request() = request;
  job.set_create_time_unix_ms(NowMs());
  return e;
}

absl::Status JobManager::PersistNewJobLocked(const v1::Job& job) {
  // Durable before it is accepted: a job the caller was told about must survive a restart. A
  // record that cannot be written (a full state filesystem) refuses the job, and the store has
  // removed its temp file. The record counts the first event, stored next: should that append
  // be lost (or the log be freed by a cancel, below), a restart still numbers on after it.
  v1::Job record = job;
  record.set_last_sequence(1);
  absl::Status s = store_->PutJob(record);
  if (s.ok()) return s;
  StoreFailedLocked(s);
  // The record may be in place without being durable (its directory's fsync failed): the
  // caller is told the job was not accepted, so it must not come back after a restart.
  (void)store_->DeleteJob(job.id());
  return Admission::RefuseUnrecorded(s);
}

const JobManager::Entry& JobManager::EnqueueLocked(std::unique_ptr<Entry> e, const Identity& who,
                                                   const v1::SubmitJobRequest& request,
                                                   const std::set<std::string>& active_users) {
  e->submit_order = next_submit_order_++;
  // Fair share counts device time within a busy period: when nobody is waiting or running,
  // the slate is wiped; a user who joins one starts level with the least served of the others
  // (time spent away is not banked as credit).
  fair_.Join(who.user, active_users, [this](const std::string& u) { return UsageLocked(u); });
  Entry& ref = *e;
  const std::string id = ref.job.id();
  jobs_[id] = std::move(e);
  if (!request.request_id().empty()) {
    request_ids_[absl::StrCat(who.user, "/", request.request_id())] = id;
  }
  ++submitted_total_;
  // A new job's position goes from 0 to its place; its first event, the one stored "queued"
  // (the others' position changes are only shown).
  RefreshQueuePositionsLocked(&ref);
  AppendEventLocked(ref, "queued", 0, 0, "");
  work_cv_.notify_all();
  return ref;
}

absl::StatusOr<v1::Job> JobManager::Get(const Identity& who, const std::string& id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = jobs_.find(id);
  if (it == jobs_.end() || !Visible(who, it->second->job)) {
    return absl::NotFoundError(
        absl::StrCat("job ", id, " not found (libreyolo jobs list shows yours)"));
  }
  return it->second->job;
}

absl::StatusOr<v1::ListJobsResponse> JobManager::List(const Identity& who,
                                                      const v1::ListJobsRequest& r) const {
  if (!r.owner().empty() && !who.admin && r.owner() != who.user) {
    return absl::PermissionDeniedError("owner: only admins list other users' jobs");
  }
  int64_t offset = 0;
  if (!r.page_token().empty() && (!absl::SimpleAtoi(r.page_token(), &offset) || offset < 0)) {
    return absl::InvalidArgumentError("page_token: not a token this daemon issued");
  }
  const int32_t page = r.page_size() <= 0 ? 50 : std::min(r.page_size(), 500);
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<const Entry*> matched;
  for (const auto& [id, e] : jobs_) {
    const v1::Job& j = e->job;
    if (!Visible(who, j)) continue;
    if (!r.owner().empty() && j.owner() != r.owner()) continue;
    if (r.states_size() > 0 &&
        std::find(r.states().begin(), r.states().end(), j.state()) == r.states().end()) {
      continue;
    }
    bool labels_ok = true;
    for (const auto& [k, v] : r.labels()) {
      auto l = j.labels().find(k);
      if (l == j.labels().end() || l->second != v) labels_ok = false;
    }
    if (labels_ok) matched.push_back(e.get());
  }
  std::sort(matched.begin(), matched.end(),
            [](const Entry* a, const Entry* b) { return a->submit_order > b->submit_order; });
  v1::ListJobsResponse out;
  const auto begin = static_cast<size_t>(offset);
  for (size_t i = begin; i < matched.size() && i < begin + static_cast<size_t>(page); ++i) {
    *out.add_jobs() = matched[i]->job;
  }
  if (begin + static_cast<size_t>(page) < matched.size()) {
    out.set_next_page_token(absl::StrCat(begin + static_cast<size_t>(page)));
  }
  return out;
}

absl::StatusOr<v1::Job> JobManager::Cancel(const Identity& who, const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = jobs_.find(id);
  if (it == jobs_.end() || !Visible(who, it->second->job)) {
    return absl::NotFoundError(absl::StrCat("job ", id, " not found"));
  }
  Entry& e = *it->second;
  // Recovery's decision for it is held back (out of service): it stands, shown once recorded.
  if (e.pending && !e.pending_stage.empty()) return e.job;
  if (e.job.state() == v1::JOB_STATE_QUEUED) {
    v1::Job next = e.job;
    next.set_state(v1::JOB_STATE_CANCELLED);
    next.set_error(absl::StrCat("cancelled by ", who.user, " while queued"));
    next.set_exit_code(ExitCodeForStatus(absl::CancelledError("")));
    next.set_finish_time_unix_ms(NowMs());
    next.set_queue_position(0);
    if (!CommitQueuedCancelLocked(e, next)) {
      return absl::UnavailableError(absl::StrCat(
          "job ", id, " was not cancelled: libreyolod cannot record it durably (", store_error_,
          "); it stays queued and does not start while the state filesystem is full"));
    }
    AppendEventLocked(e, "cancelled", 0, 0, e.job.error());
    ReleaseGangLocked(e.job.id());  // a forming gang's held devices go back to their queues
    RefreshQueuePositionsLocked();
  } else if (e.job.state() == v1::JOB_STATE_RUNNING) {
    e.cancel.cancelled = true;  // the worker sees it at the next step and records the outcome
    e.job.set_error(absl::StrCat("cancelled by ", who.user));
  }
  return e.job;
}

absl::StatusOr<v1::Job> JobManager::Delete(const Identity& who, const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = jobs_.find(id);
  if (it == jobs_.end() || !Visible(who, it->second->job)) {
    return absl::NotFoundError(absl::StrCat("job ", id, " not found"));
  }
  const v1::Job job = it->second->job;
  if (job.state() == v1::JOB_STATE_QUEUED || job.state() == v1::JOB_STATE_RUNNING ||
      it->second->pending) {
    return absl::FailedPreconditionError(
        absl::StrCat("job ", id, " is ", job.state() == v1::JOB_STATE_QUEUED ? "queued" : "running",
                     ": cancel it first (libreyolo jobs cancel ", id, "), then delete it"));
  }
  RETURN_IF_ERROR(store_->DeleteJob(id));
  if (!job.request().request_id().empty()) {
    request_ids_.erase(absl::StrCat(job.owner(), "/", job.request().request_id()));
  }
  jobs_.erase(it);
  ForgetVerifiedLocked(id);
  ++deleted_total_;
  return job;
}

bool JobManager::CommitQueuedCancelLocked(Entry& e, const v1::Job& next) {
  absl::Status s = store_->PutJob(next);
  const bool full = s.code() == absl::StatusCode::kResourceExhausted ||
                    s.code() == absl::StatusCode::kOutOfRange;  // ENOSPC, EDQUOT; EFBIG
  if (full) {
    ++store_write_failures_;
    // A full state filesystem (issue 40, item 8: the space held by queued jobs' events left
    // them neither runnable nor cancellable). What a queued job has stored is its queue events;
    // none is needed once it is cancelled. Deleting them frees at least the blocks that the new
    // record and its "cancelled" event take (the old record's go when the new one replaces
    // it). Its record already counts its first event, so a restart in between numbers on.
    if (absl::Status freed = store_->DiscardEvents(e.job.id()); freed.ok()) {
      s = store_->PutJob(next);
    }
  }
  if (!s.ok()) {
    StoreFailedLocked(s);
    return false;
  }
  e.job = next;
  return true;
}

absl::Status JobManager::Watch(const Identity& who, const std::string& id, int64_t from,
                               const std::function<bool(const v1::JobEvent&)>& send,
                               const std::function<bool()>& stop) {
  int64_t total_cap = 0, per_user_cap = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    total_cap = limits_.max_watchers;
    per_user_cap = limits_.max_watchers_per_user;
  }
  // Held until the stream ends.
  ASSIGN_OR_RETURN(UserSlots::Slot slot, watchers_.Acquire(who.user, total_cap, per_user_cap));
  int64_t next = std::max<int64_t>(from, 1);
  int64_t unstored_sent = 0;  // the generation of the last unstored event this stream sent
  std::unique_lock<std::mutex> lock(mu_);
  for (bool first = true;; first = false) {
    // Looked up on every pass: retention may remove a finished job while we send unlocked.
    auto it = jobs_.find(id);
    if (it == jobs_.end() || (first && !Visible(who, it->second->job))) {
      return absl::NotFoundError(absl::StrCat("job ", id, first ? " not found" : " was removed"));
    }
    const Entry& e = *it->second;
    // A resumed stream (from past the latest stored event) may have been sent the current
    // unstored event before it reconnected: it gets the ones after it.
    if (first && from > 1 && next > e.job.last_sequence()) unstored_sent = e.unstored_gen;
    std::vector<v1::JobEvent> batch;
    for (const v1::JobEvent& ev : e.events) {
      if (ev.sequence() >= next) batch.push_back(ev);
    }
    // The newest unstored event comes after every stored one (its sequence is the latest
    // stored): sent once each, to a stream that has (or is about to have) all stored events.
    int64_t unstored_gen = 0;
    if (e.unstored && e.unstored_gen > unstored_sent && e.unstored->sequence() >= next - 1) {
      batch.push_back(*e.unstored);
      unstored_gen = e.unstored_gen;
    }
    if (!batch.empty()) {
      lock.unlock();
      for (const v1::JobEvent& ev : batch) {
        if (!send(ev)) return absl::OkStatus();
        next = ev.sequence() + 1;
      }
      if (unstored_gen > 0) unstored_sent = unstored_gen;
      lock.lock();
      continue;
    }
    // A terminal state and its final event are recorded under one lock, so nothing follows.
    if (Terminal(e.job.state())) return absl::OkStatus();
    if (stop()) return absl::CancelledError("the watcher went away");
    // Streams outlive the drain: a job that ends during it still sends its terminal event.
    // After it, every other stream ends UNAVAILABLE and the client resumes after the restart.
    if (drained_) {
      return absl::UnavailableError(absl::StrCat(
          "libreyolod is shutting down; watch again from sequence ", next, " after it restarts"));
    }
    events_cv_.wait_for(lock, std::chrono::milliseconds(200));
  }
}

void JobManager::SetLimits(const Limits& limits, const Retention& retention) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    limits_ = limits;
    retention_ = retention;
    ++retention_kicks_;
  }
  retention_cv_.notify_all();  // a tighter retention applies now, not at the next minute
}

void JobManager::SweepRetention() {
  std::unique_lock<std::mutex> lock(mu_);
  // Waits `interval` on the clock, or until SetLimits or Drain wakes the thread.
  auto wait = [&](std::chrono::milliseconds interval) {
    const auto until = clock_.SteadyNow() + interval;
    const int64_t kicks = retention_kicks_;
    while (!stopping_ && retention_kicks_ == kicks && clock_.SteadyNow() < until) {
      clock_.WaitUntil(retention_cv_, lock, until);
    }
  };
  while (!stopping_) {
    if (!store_error_.empty() && !RetryStoreLocked()) {
      wait(kStoreRetryInterval);
      continue;
    }
    std::vector<v1::Job> all;
    all.reserve(jobs_.size());
    for (const auto& [id, e] : jobs_) all.push_back(e->job);
    for (const std::string& id :
         JobsToExpire(all, NowMs(), retention_.max_age_hours, retention_.max_jobs)) {
      if (auto s = store_->DeleteJob(id); s.ok()) {
        // Its request_id goes with it: a submit that reuses it now makes a new job.
        auto it = jobs_.find(id);
        const v1::Job& gone = it->second->job;
        if (!gone.request().request_id().empty()) {
          request_ids_.erase(absl::StrCat(gone.owner(), "/", gone.request().request_id()));
        }
        jobs_.erase(it);
        ForgetVerifiedLocked(id);
        ++expired_total_;
      } else {
        persist_errors_.push_back(std::string(s.message()));
      }
    }
    wait(kRetentionInterval);
  }
}

int32_t JobManager::QueueLength(const std::string& device) const {
  std::lock_guard<std::mutex> lock(mu_);
  int32_t n = 0;
  for (const auto& [id, e] : jobs_) {
    if (e->job.state() == v1::JOB_STATE_QUEUED && OnDevice(e->job, device)) ++n;
  }
  return n;
}

std::string JobManager::RunningJob(const std::string& device) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = device_state_.find(device);
  return it == device_state_.end() ? "" : it->second.running;
}

bool JobManager::Busy() const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [id, e] : jobs_) {
    const v1::JobState s = e->job.state();
    if (s == v1::JOB_STATE_QUEUED || s == v1::JOB_STATE_RUNNING) return true;
  }
  return false;
}

MetricsSnapshot JobManager::Metrics() const {
  std::lock_guard<std::mutex> lock(mu_);
  MetricsSnapshot m;
  for (const char* s : {"queued", "running", "succeeded", "failed", "cancelled"}) {
    m.jobs_by_state[s] = 0;
  }
  std::map<std::string, int64_t> queued;
  for (const auto& [id, e] : jobs_) {
    const v1::Job& j = e->job;
    ++m.jobs_by_state[StateLabel(j.state())];
    if (j.state() == v1::JOB_STATE_QUEUED) {
      for (const std::string& d : JobDevices(j)) ++queued[d];
    }
    if (Terminal(j.state()) && j.start_time_unix_ms() > 0 && e->ran_ms >= 0) {
      // Measured on the monotonic clock (RunOne), or what recovery made of the stored run
      // clock (RecoverRunTimeLocked): never a wall-clock span a step stretched to days.
      m.job_durations_s[j.kind() == v1::JOB_KIND_RUN ? "run" : "infer"].push_back(
          static_cast<double>(e->ran_ms) / 1000.0);
    }
  }
  for (const std::string& d : devices_) {
    DeviceGauge g;
    g.device = d;
    g.queue_depth = queued[d];
    g.busy = !device_state_.at(d).running.empty();
    m.devices.push_back(g);
  }
  m.jobs_submitted_total = submitted_total_;
  m.worker_restarts_total = runner_->WorkerRestarts();
  m.watchers = watchers_.in_use();
  m.store_ok = store_error_.empty();
  m.store_write_failures_total = store_write_failures_;
  m.artifacts_corrupt_total = artifacts_corrupt_;
  m.uptime_s = std::chrono::duration<double>(clock_.SteadyNow() - started_).count();
  m.jobs_expired_total = expired_total_;
  m.jobs_deleted_total = deleted_total_;
  return m;
}

}  // namespace libreyolo::daemon
