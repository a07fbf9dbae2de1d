// Fair share of device time across users (fair_share.h).
#include "server/daemon/jobs/fair_share.h"

#include <algorithm>
#include <climits>
#include <tuple>
#include <utility>

namespace libreyolo::daemon {

int64_t FairShare::Used(const std::string& user) const {
  auto it = used_ms_.find(user);
  return it == used_ms_.end() ? 0 : it->second;
}

void FairShare::Join(const std::string& user, const std::set<std::string>& active,
                     const UsageFn& usage) {
  if (active.empty()) {
    used_ms_.clear();
  } else if (active.count(user) == 0) {
    int64_t floor = INT64_MAX;
    for (const std::string& u : active) floor = std::min(floor, usage(u));
    used_ms_[user] = std::max(used_ms_[user], floor);
  }
}

void FairShare::Started(const std::string& user) { last_start_[user] = ++starts_; }

void FairShare::Finished(const std::string& user, int64_t ran_ms, int64_t slots) {
  if (slots > 0) used_ms_[user] += ran_ms * slots;
  ++finished_runs_;
  finished_run_ms_ += ran_ms;
}

void FairShare::Rebuild(int64_t busy_since_unix_ms, const std::vector<PastRun>& runs) {
  used_ms_.clear();
  if (busy_since_unix_ms == INT64_MAX) return;  // idle: the next busy period starts level
  for (const PastRun& r : runs) {
    if (r.start_unix_ms <= 0 || r.finish_unix_ms <= 0 || r.ran_ms <= 0 || r.slots <= 0) continue;
    int64_t ms = r.ran_ms;
    if (r.start_unix_ms < busy_since_unix_ms) {
      ms = std::min(ms, std::max<int64_t>(0, r.finish_unix_ms - busy_since_unix_ms));
    }
    used_ms_[r.user] += ms * r.slots;
  }
}

int64_t FairShare::MeanRunMs() const {
  return finished_runs_ > 0 ? std::max<int64_t>(1, finished_run_ms_ / finished_runs_)
                            : kDefaultRunMs;
}

std::vector<size_t> FairShare::Order(const std::vector<Queued>& queued,
                                     const UsageFn& usage) const {
  // Each user's queued jobs, priority first, then in submission order.
  struct Turn {
    std::vector<size_t> jobs;
    size_t next = 0;
    int64_t usage = 0, last_start = -1;
  };
  std::map<std::string, Turn> turns;
  for (size_t i = 0; i < queued.size(); ++i) turns[queued[i].user].jobs.push_back(i);
  for (auto& [user, t] : turns) {
    std::sort(t.jobs.begin(), t.jobs.end(), [&](size_t a, size_t b) {
      if (queued[a].priority != queued[b].priority) return queued[a].priority > queued[b].priority;
      return queued[a].submit_order < queued[b].submit_order;
    });
    t.usage = usage(user);
    auto last = last_start_.find(user);
    if (last != last_start_.end()) t.last_start = last->second;
  }
  // The least used goes next (ties: least recently started, then the earliest job); later
  // turns are projected with the mean run.
  const int64_t mean_ms = MeanRunMs();
  std::vector<size_t> order;
  int64_t tick = starts_;
  for (;;) {
    Turn* best = nullptr;
    auto key = [&](const Turn& t) {
      return std::make_tuple(t.usage, t.last_start, queued[t.jobs[t.next]].submit_order);
    };
    for (auto& [user, t] : turns) {
      if (t.next == t.jobs.size()) continue;
      if (best == nullptr || key(t) < key(*best)) best = &t;
    }
    if (best == nullptr) break;
    order.push_back(best->jobs[best->next++]);
    best->usage += mean_ms;
    best->last_start = ++tick;
  }
  return order;
}

}  // namespace libreyolo::daemon
