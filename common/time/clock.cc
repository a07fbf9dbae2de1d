#include "common/time/clock.h"

#include <algorithm>
#include <fstream>
#include <utility>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace libreyolo {
namespace {

// The kernel's id of this boot (a UUID), "" when it cannot be read (not Linux, no /proc).
std::string ReadBootId() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  if (!std::getline(in, id)) return "";
  while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) id.pop_back();
  return id;
}

class RealClock final : public Clock {
 public:
  int64_t NowUnixMs() const override { return absl::ToUnixMillis(absl::Now()); }
  SteadyTime SteadyNow() const override { return std::chrono::steady_clock::now(); }
  std::string BootId() const override {
    static const std::string* const id = new std::string(ReadBootId());
    return *id;
  }
  void WaitUntil(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
                 SteadyTime deadline) const override {
    cv.wait_until(lock, deadline);
  }
};

// How long a ManualClock's waiter sleeps in real time before it looks at the clock again.
constexpr auto kManualWaitSlice = std::chrono::milliseconds(2);

}  // namespace

const Clock& Clock::Real() {
  static const RealClock* const clock = new RealClock();
  return *clock;
}

ManualClock::ManualClock(int64_t unix_ms) : unix_ms_(unix_ms) {}

Clock::SteadyTime ManualClock::SteadyNow() const {
  return SteadyTime(std::chrono::milliseconds(steady_ms_.load()));
}

std::string ManualClock::BootId() const {
  std::lock_guard<std::mutex> lock(boot_mu_);
  return boot_id_;
}

void ManualClock::SetBootId(std::string boot_id) {
  std::lock_guard<std::mutex> lock(boot_mu_);
  boot_id_ = std::move(boot_id);
}

void ManualClock::WaitUntil(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
                            SteadyTime deadline) const {
  {
    std::lock_guard<std::mutex> count(waits_mu_);
    ++waits_[std::chrono::duration_cast<std::chrono::milliseconds>(deadline.time_since_epoch())
                 .count()];
  }
  if (SteadyNow() >= deadline) return;
  cv.wait_for(lock, kManualWaitSlice);
}

int64_t ManualClock::WaitsUntil(SteadyTime deadline) const {
  std::lock_guard<std::mutex> count(waits_mu_);
  auto it = waits_.find(
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline.time_since_epoch()).count());
  return it == waits_.end() ? 0 : it->second;
}

void ManualClock::Advance(std::chrono::milliseconds d) {
  const int64_t ms = std::max<int64_t>(0, d.count());
  steady_ms_.fetch_add(ms);
  unix_ms_.fetch_add(ms);
}

}  // namespace libreyolo
