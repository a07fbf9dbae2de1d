#include "server/daemon/attach/attach_registry.h"

#include <signal.h>

#include <cerrno>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/daemon/attach/kineto_wire.h"

namespace libreyolo::daemon::attach {
namespace {

bool KillZeroAlive(pid_t pid) { return ::kill(pid, 0) == 0 || errno == EPERM; }

}  // namespace

const char* AttachStateName(AttachState state) {
  switch (state) {
    case AttachState::kIdle:
      return "idle";
    case AttachState::kBusy:
      return "busy";
    case AttachState::kPending:
      return "pending";
  }
  return "unknown";
}

AttachRegistry::AttachRegistry(const Clock& clock, size_t max_per_uid,
                               std::function<bool(pid_t)> alive)
    : clock_(clock),
      max_per_uid_(max_per_uid),
      alive_(alive ? std::move(alive) : std::function<bool(pid_t)>(KillZeroAlive)) {}

size_t AttachRegistry::CountForUid(uid_t uid) const {
  size_t n = 0;
  for (const auto& [pid, e] : processes_) n += e.process.uid == uid ? 1 : 0;
  return n;
}

PollOutcome AttachRegistry::Poll(const PollInput& in,
                                 const std::function<ProcessFacts()>& read_facts) {
  PollOutcome out;
  std::unique_lock<std::mutex> lock(mu_);
  auto it = processes_.find(in.pid);
  // A pid now polling for another user, or from another chain, is another process (the old one
  // died and its pid was reused before a sweep noticed).
  if (it != processes_.end() &&
      (it->second.process.uid != in.uid || it->second.process.reported_pids.empty() ||
       in.reported_pids.empty() || it->second.process.reported_pids[0] != in.reported_pids[0])) {
    if (it->second.pending_ticket) tickets_.erase(*it->second.pending_ticket);
    processes_.erase(it);
    it = processes_.end();
  }
  const int64_t now_ms = clock_.NowUnixMs();
  if (it == processes_.end()) {
    if (CountForUid(in.uid) >= max_per_uid_) SweepLocked();
    if (CountForUid(in.uid) >= max_per_uid_) {
      out.kind = PollOutcome::Kind::kCapped;
      return out;
    }
    lock.unlock();  // /proc reads outside the lock
    ProcessFacts facts = read_facts ? read_facts() : ProcessFacts{};
    lock.lock();
    Entry e;
    e.process.pid = in.pid;
    e.process.uid = in.uid;
    e.process.facts = std::move(facts);
    e.process.first_poll_unix_ms = now_ms;
    it = processes_.insert_or_assign(in.pid, std::move(e)).first;
    out.kind = PollOutcome::Kind::kRegistered;
  }
  Entry& e = it->second;
  AttachableProcess& p = e.process;
  p.reported_pids = in.reported_pids;
  p.job_id = in.job_id;
  p.endpoint = in.endpoint;
  p.activity_bits = in.activity_bits;
  p.last_poll_unix_ms = now_ms;
  ++p.polls;
  e.last_poll = clock_.SteadyNow();
  const bool idle = (in.activity_bits & kActivitiesBit) != 0;
  if (e.pending_ticket && idle) {
    out.config = std::move(e.pending_config);
    e.pending_config.clear();
    auto t = tickets_.find(*e.pending_ticket);
    if (t != tickets_.end()) t->second.delivery = Delivery{in.pid, now_ms};
    e.pending_ticket.reset();
    delivered_cv_.notify_all();
  }
  p.state =
      e.pending_ticket ? AttachState::kPending : (idle ? AttachState::kIdle : AttachState::kBusy);
  return out;
}

bool AttachRegistry::IsRegistered(pid_t pid, uid_t uid) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = processes_.find(pid);
  return it != processes_.end() && it->second.process.uid == uid;
}

std::vector<AttachableProcess> AttachRegistry::List(std::optional<uid_t> uid) {
  std::lock_guard<std::mutex> lock(mu_);
  SweepLocked();
  std::vector<AttachableProcess> out;
  for (const auto& [pid, e] : processes_) {
    if (!uid || e.process.uid == *uid) out.push_back(e.process);
  }
  return out;
}

int32_t AttachRegistry::CountForJob(uid_t uid, int64_t job_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  int32_t n = 0;
  for (const auto& [pid, e] : processes_) {
    n += e.process.uid == uid && e.process.job_id == job_id ? 1 : 0;
  }
  return n;
}

size_t AttachRegistry::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return processes_.size();
}

size_t AttachRegistry::Sweep() {
  std::lock_guard<std::mutex> lock(mu_);
  return SweepLocked();
}

size_t AttachRegistry::SweepLocked() {
  const Clock::SteadyTime now = clock_.SteadyNow();
  size_t gone = 0;
  for (auto it = processes_.begin(); it != processes_.end();) {
    const bool stale = now - it->second.last_poll >= kStalePolls * kPollInterval;
    if (stale || !alive_(it->first)) {
      if (it->second.pending_ticket) tickets_.erase(*it->second.pending_ticket);
      it = processes_.erase(it);
      ++gone;
    } else {
      ++it;
    }
  }
  if (gone > 0) delivered_cv_.notify_all();  // a waiter's process may have left
  return gone;
}

absl::StatusOr<uint64_t> AttachRegistry::SetPendingConfig(pid_t pid, std::string config) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = processes_.find(pid);
  if (it == processes_.end()) {
    return absl::NotFoundError(absl::StrCat("process ", pid, " is not polling this daemon"));
  }
  Entry& e = it->second;
  if (e.pending_ticket) {
    return absl::FailedPreconditionError(
        absl::StrCat("process ", pid, " already has a trace request pending"));
  }
  const uint64_t ticket = next_ticket_++;
  e.pending_ticket = ticket;
  e.pending_config = std::move(config);
  e.process.state = AttachState::kPending;
  tickets_[ticket] = Ticket{pid, std::nullopt};
  return ticket;
}

bool AttachRegistry::CancelPending(uint64_t ticket) {
  std::lock_guard<std::mutex> lock(mu_);
  auto t = tickets_.find(ticket);
  if (t == tickets_.end() || t->second.delivery) return false;
  auto it = processes_.find(t->second.pid);
  if (it != processes_.end() && it->second.pending_ticket == ticket) {
    it->second.pending_ticket.reset();
    it->second.pending_config.clear();
    const bool idle = (it->second.process.activity_bits & kActivitiesBit) != 0;
    it->second.process.state = idle ? AttachState::kIdle : AttachState::kBusy;
  }
  tickets_.erase(t);
  delivered_cv_.notify_all();
  return true;
}

std::optional<Delivery> AttachRegistry::DeliveryOf(uint64_t ticket) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto t = tickets_.find(ticket);
  return t == tickets_.end() ? std::nullopt : t->second.delivery;
}

std::optional<Delivery> AttachRegistry::WaitForDelivery(uint64_t ticket,
                                                        Clock::SteadyTime deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    auto t = tickets_.find(ticket);
    if (t == tickets_.end()) return std::nullopt;  // withdrawn, or its process left
    if (t->second.delivery) return t->second.delivery;
    if (clock_.SteadyNow() >= deadline) return std::nullopt;
    clock_.WaitUntil(delivered_cv_, lock, deadline);
  }
}

void AttachRegistry::Forget(uint64_t ticket) {
  std::lock_guard<std::mutex> lock(mu_);
  tickets_.erase(ticket);
}

}  // namespace libreyolo::daemon::attach
