#include "common/time/clock.h"

#include <algorithm>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace libreyolo {
namespace {

class RealClock final : public Clock {
 public:
  int64_t NowUnixMs() const override { return absl::ToUnixMillis(absl::Now()); }
  SteadyTime SteadyNow() const override { return std::chrono::steady_clock::now(); }
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
