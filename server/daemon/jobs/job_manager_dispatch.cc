// The job manager's dispatch (job_manager.h): the order of each device's queue (fair share of
// device time across users), the device workers, and what happens when a state change cannot
// be made durable (the manager goes out of service until RetryStore succeeds).
#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/status/exit_code.h"
#include "common/status/thread_guard.h"
#include "server/daemon/jobs/job_manager.h"

namespace libreyolo::daemon {
namespace {

// Progress events are persisted with an fsync each; the engine reports every iteration, so
// intermediate counts are thinned to a few per second. Stage changes and completions always go.
constexpr auto kProgressInterval = std::chrono::milliseconds(250);

}  // namespace

int64_t JobManager::NowMs() const { return clock_.NowUnixMs(); }

int64_t JobManager::UsageLocked(const std::string& user) const {
  int64_t ms = fair_.Used(user);
  const Clock::SteadyTime now = clock_.SteadyNow();
  for (const auto& [device, state] : device_state_) {
    if (state.running.empty() || device == kAttachLane) continue;
    auto j = jobs_.find(state.running);
    if (j == jobs_.end() || j->second->job.owner() != user) continue;
    ms += std::max<int64_t>(0, std::chrono::duration_cast<std::chrono::milliseconds>(
                                   now - j->second->started_steady)
                                   .count());
  }
  return ms;
}

std::vector<JobManager::Entry*> JobManager::QueueOrderLocked(const std::string& device) const {
  std::vector<Entry*> queued;
  std::vector<FairShare::Queued> rows;
  for (const auto& [id, e] : jobs_) {
    if (e->job.state() == v1::JOB_STATE_QUEUED && OnDevice(e->job, device)) {
      queued.push_back(e.get());
      rows.push_back({e->job.owner(), e->job.priority(), e->submit_order});
    }
  }
  std::vector<Entry*> order;
  for (size_t i : fair_.Order(rows, [this](const std::string& u) { return UsageLocked(u); })) {
    order.push_back(queued[i]);
  }
  return order;
}

void JobManager::RefreshQueuePositionsLocked(const Entry* fresh) {
  std::map<Entry*, int32_t> positions;
  for (const std::string& device : devices_) {
    const std::vector<Entry*> order = QueueOrderLocked(device);
    for (size_t i = 0; i < order.size(); ++i) {
      int32_t& pos = positions[order[i]];
      pos = std::max(pos, static_cast<int32_t>(i + 1));
    }
  }
  for (auto& [entry, pos] : positions) {
    Entry& e = *entry;
    if (e.job.queue_position() == pos) continue;
    e.job.set_queue_position(pos);
    // Each start moves every waiting job: storing these made a drain of N jobs write ~N^2/2
    // events (issue 40, item 8). Watchers get them; a restart recomputes them.
    if (&e != fresh) ShowEventLocked(e, "queued", 0, 0, "");
  }
}

v1::JobEvent JobManager::NewEventLocked(const Entry& e, const std::string& stage, int64_t done,
                                        int64_t total, const std::string& message) const {
  v1::JobEvent ev;
  ev.set_job_id(e.job.id());
  ev.set_sequence(e.job.last_sequence() + 1);
  ev.set_time_unix_ms(NowMs());
  ev.set_state(e.job.state());
  ev.set_stage(stage);
  ev.set_done(done);
  ev.set_total(total);
  ev.set_queue_position(e.job.queue_position());
  ev.set_message(message);
  return ev;
}

void JobManager::AppendEventLocked(Entry& e, const std::string& stage, int64_t done, int64_t total,
                                   const std::string& message) {
  v1::JobEvent ev = NewEventLocked(e, stage, done, total, message);
  // An event that cannot be written is still shown to watchers (the record holds the state),
  // but the manager goes out of service like for a record.
  if (absl::Status s = store_->AppendEvent(ev); !s.ok()) StoreFailedLocked(s);
  e.job.set_last_sequence(ev.sequence());
  e.events.push_back(std::move(ev));
  e.unstored.reset();  // older than what was just stored
  events_cv_.notify_all();
}

void JobManager::ShowEventLocked(Entry& e, const std::string& stage, int64_t done, int64_t total,
                                 const std::string& message) {
  v1::JobEvent ev = NewEventLocked(e, stage, done, total, message);
  // Not a sequence of its own: the latest stored one's. A watcher resuming from the next
  // sequence misses no stored event, and none is ever numbered below one it saw, across a
  // restart too (docs/rpc.md, "Resuming").
  ev.set_sequence(e.job.last_sequence());
  e.unstored = std::move(ev);
  ++e.unstored_gen;
  events_cv_.notify_all();
}

void JobManager::AppendNoteLocked(Entry& e, const std::string& stage, int64_t done, int64_t total,
                                  const std::string& message) {
  const size_t stored = e.events.size();
  const bool new_stage = e.events.empty() || e.events.back().stage() != stage;
  if (stored < kThinEventsFrom || (stored < kMaxStoredEvents && new_stage)) {
    AppendEventLocked(e, stage, done, total, message);
  } else {
    ShowEventLocked(e, stage, done, total, message);
  }
}

bool JobManager::CommitLocked(Entry& e, const v1::Job& next) {
  if (absl::Status s = store_->PutJob(next, RunClockLocked(e, next)); !s.ok()) {
    StoreFailedLocked(s);
    return false;
  }
  e.job = next;
  return true;
}

void JobManager::StoreFailedLocked(const absl::Status& status) {
  ++store_write_failures_;
  if (!store_error_.empty()) return;
  store_error_ = std::string(status.message());
  if (store_error_.empty()) store_error_ = status.ToString();
  if (store_listener_) store_listener_(false, store_error_);
  // Wake the sweep thread, which retries the store every kStoreRetryInterval while out of
  // service: left in its retention wait (a minute), the daemon stayed out of service ~52 s
  // after the space was freed (issue 40 A.5).
  ++retention_kicks_;
  retention_cv_.notify_all();
}

std::string JobManager::StoreError() const {
  std::lock_guard<std::mutex> lock(mu_);
  return store_error_;
}

void JobManager::SetStoreListener(std::function<void(bool ok, const std::string& why)> listener) {
  std::lock_guard<std::mutex> lock(mu_);
  store_listener_ = std::move(listener);
  if (!store_error_.empty() && store_listener_) store_listener_(false, store_error_);
}

bool JobManager::RetryStore() {
  std::lock_guard<std::mutex> lock(mu_);
  return RetryStoreLocked();
}

bool JobManager::RetryStoreLocked() {
  if (store_error_.empty()) return true;
  for (auto& [id, e] : jobs_) {
    if (!e->pending) continue;
    const bool requeue = e->pending_stage.empty();  // a start that was not recorded
    const v1::Job& record = requeue ? e->job : *e->pending;
    if (absl::Status s = store_->PutJob(record, RunClockLocked(*e, record)); !s.ok()) {
      ++store_write_failures_;
      return false;
    }
    if (requeue) {
      e->pending.reset();
      continue;
    }
    const int64_t seq = e->job.last_sequence();
    e->job = *std::move(e->pending);
    e->job.set_last_sequence(seq);
    e->pending.reset();
    AppendEventLocked(*e, e->pending_stage, e->pending_stage == "done" ? 1 : 0,
                      e->pending_stage == "done" ? 1 : 0,
                      e->pending_stage == "done" ? "" : e->job.error());
  }
  if (absl::Status s = store_->Probe(); !s.ok()) {
    ++store_write_failures_;
    return false;
  }
  if (store_listener_) store_listener_(true, store_error_);
  store_error_.clear();
  work_cv_.notify_all();
  return true;
}

void JobManager::WorkerLoop(const std::string& device) {
  for (;;) {
    Entry* next = nullptr;
    {
      std::unique_lock<std::mutex> lock(mu_);
      work_cv_.wait(lock, [&] {
        if (stopping_) return true;
        return store_error_.empty() && NextForLocked(device) != nullptr;
      });
      if (stopping_) return;
      next = NextForLocked(device);
      if (next->job.devices_size() > 0 && !ReserveForGangLocked(*next, device)) {
        // Held for a gang that others of its devices have still to reach: wait until it has
        // run (or was cancelled), then look again.
        const std::string gang = next->job.id();
        work_cv_.wait(lock, [&] {
          return stopping_ || (!gangs_.HeldFor(device, gang) &&
                               device_state_.at(device).running != gang);
        });
        continue;
      }
      // Durable before it runs: a job whose RUNNING record cannot be written stays queued (and
      // the manager out of service), so a restart never runs a job that already ran.
      v1::Job running = next->job;
      running.set_state(v1::JOB_STATE_RUNNING);
      running.set_queue_position(0);
      running.set_start_time_unix_ms(NowMs());
      running.set_tool(runner_->ToolFor(next->job));
      // Its start on the monotonic clock goes into the RUNNING record: a restart in this boot
      // knows how long it ran whatever the wall clock did.
      next->started_steady = clock_.SteadyNow();
      next->started_boot = clock_.BootId();
      if (!CommitLocked(*next, running)) {
        // The RUNNING record may be in place without being durable (a failed directory
        // fsync): RetryStore writes the QUEUED one again before the job may start. A gang's
        // devices stay held for it meanwhile.
        next->pending = next->job;
        next->pending_stage.clear();
        continue;
      }
      for (const std::string& d : JobDevices(next->job)) {
        device_state_.at(d).running = next->job.id();
      }
      gangs_.Started(next->job.id());
      fair_.Started(next->job.owner());
      AppendEventLocked(*next, "starting", 0, 0,
                        absl::StrCat("on ", absl::StrJoin(JobDevices(next->job), ", ")));
      RefreshQueuePositionsLocked();
    }
    RunOne(*next);
  }
}

v1::Job JobManager::FinishedRecord(const Entry& e, const RunOutcome& out,
                                   std::string* stage) const {
  v1::Job job = e.job;
  job.set_finish_time_unix_ms(NowMs());
  for (const v1::AttachTarget& t : out.attach_targets) *job.add_attach_targets() = t;
  if (out.status.ok()) {
    for (const v1::Artifact& a : out.artifacts) *job.add_artifacts() = a;
    job.set_state(v1::JOB_STATE_SUCCEEDED);
    job.set_exit_code(kExitOk);
    job.set_error("");
    job.set_step_ms(out.step_ms);
    job.set_img_per_s(out.img_per_s);
    job.set_bound(out.bound);
    *stage = "done";
  } else if (absl::IsCancelled(out.status) || e.cancel.cancelled.load()) {
    job.set_state(v1::JOB_STATE_CANCELLED);
    job.set_exit_code(ExitCodeForStatus(absl::CancelledError("")));
    if (job.error().empty()) job.set_error(std::string(out.status.message()));
    if (!accepting_) job.set_error("libreyolod was stopped (SIGTERM) before the job finished");
    if (!out.cancel_note.empty()) job.set_error(absl::StrCat(job.error(), "; ", out.cancel_note));
    *stage = "cancelled";
  } else {
    job.set_state(v1::JOB_STATE_FAILED);
    job.set_exit_code(out.exit_code != kExitOk ? out.exit_code : kExitAnalysisFailed);
    job.set_error(std::string(out.status.message()));
    *stage = "failed";
  }
  return job;
}

void JobManager::RunOne(Entry& e) {
  v1::Job snapshot;
  {
    std::lock_guard<std::mutex> lock(mu_);
    snapshot = e.job;
  }
  std::string last_stage;
  auto last_emit = Clock::SteadyTime{};
  auto progress = [&](const JobProgress& p) {
    const auto now = clock_.SteadyNow();
    const bool boundary = p.stage != last_stage || p.done == p.total || !p.message.empty();
    if (!boundary && now - last_emit < kProgressInterval) return;
    last_stage = p.stage;
    last_emit = now;
    std::lock_guard<std::mutex> lock(mu_);
    AppendNoteLocked(e, p.stage, p.done, p.total, p.message);
  };
  RunOutcome out;
  RunGuarded(absl::StrCat("job worker (job ", snapshot.id(), ")"), "the job fails",
             [&] { out = runner_->Run(snapshot, progress, e.cancel); },
             [&](const std::string& what) {
               out = RunOutcome{};
               out.status = absl::InternalError(absl::StrCat("libreyolod: the job threw: ", what));
             });
  std::lock_guard<std::mutex> lock(mu_);
  std::string stage;
  const v1::Job finished = FinishedRecord(e, out, &stage);
  // On the monotonic clock: a wall-clock step while it ran changes neither its device time
  // nor its duration.
  const int64_t ran_ms = std::max<int64_t>(
      0, std::chrono::duration_cast<std::chrono::milliseconds>(clock_.SteadyNow() -
                                                               e.started_steady)
             .count());
  e.ran_ms = ran_ms;
  // Device time: a gang held each of its devices for the whole run; the attach lane holds none.
  const std::vector<std::string> slots = JobDevices(finished);
  fair_.Finished(finished.owner(), ran_ms,
                 finished.device() == kAttachLane ? 0 : static_cast<int64_t>(slots.size()));
  if (CommitLocked(e, finished)) {
    AppendEventLocked(e, stage, stage == "done" ? 1 : 0, stage == "done" ? 1 : 0,
                      stage == "done" ? "" : e.job.error());
  } else {
    // Still RUNNING on disk and to callers: a restart fails it (never runs it again); a
    // RetryStore that writes this shows the outcome.
    e.pending = finished;
    e.pending_stage = stage;
  }
  for (const std::string& d : slots) device_state_.at(d).running.clear();
  ReleaseGangLocked(e.job.id());
  events_cv_.notify_all();
  work_cv_.notify_all();  // the gang's other devices wait for this
}

}  // namespace libreyolo::daemon
