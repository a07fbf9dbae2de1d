// The one source of time of a component that keeps records and waits (the job manager): the
// wall clock for the times it records, the steady clock for the intervals it measures and the
// waits it times out. Real() is the process's clocks; tests give a ManualClock and drive time
// instead of sleeping (issue 22 §5). Torch- and gRPC-free.
#ifndef LIBREYOLO_COMMON_TIME_CLOCK_H_
#define LIBREYOLO_COMMON_TIME_CLOCK_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace libreyolo {

class Clock {
 public:
  using SteadyTime = std::chrono::steady_clock::time_point;

  virtual ~Clock() = default;
  // Wall time, Unix milliseconds (what records say).
  virtual int64_t NowUnixMs() const = 0;
  // Monotonic time (intervals, deadlines).
  virtual SteadyTime SteadyNow() const = 0;
  // Names the boot whose monotonic clock SteadyNow() reads: two steady times compare (across
  // processes too: CLOCK_MONOTONIC counts from the boot) only when taken under the same boot
  // id. "" when unknown, which matches none.
  virtual std::string BootId() const = 0;
  // Waits on `cv` (with `lock` held, as condition_variable::wait_until) until notified or until
  // SteadyNow() reaches `deadline`; may return early (a spurious wake-up): callers re-check
  // their condition and the deadline, as with any condition variable.
  virtual void WaitUntil(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
                         SteadyTime deadline) const = 0;

  // The process's clocks (absl::Now, std::chrono::steady_clock; the boot id from
  // /proc/sys/kernel/random/boot_id). Never destroyed.
  static const Clock& Real();
};

// A clock that moves only when told (tests). Its steady time starts at an arbitrary epoch and
// its wall time at `unix_ms`; Advance moves both. A WaitUntil on it returns within a few real
// milliseconds, so that a waiter re-checks its deadline against the clock soon after Advance.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(int64_t unix_ms = 1'767'225'600'000);  // 2026-01-01T00:00:00Z
  int64_t NowUnixMs() const override { return unix_ms_.load(); }
  SteadyTime SteadyNow() const override;
  std::string BootId() const override;
  void WaitUntil(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
                 SteadyTime deadline) const override;
  void Advance(std::chrono::milliseconds d);
  // How many WaitUntil calls have been made with `deadline`, in all. A test that needs a waiter
  // to have seen the clock after an Advance reads this after it and waits for two more calls:
  // the second's re-check of the deadline came after the Advance.
  int64_t WaitsUntil(SteadyTime deadline) const;
  // Sets the wall time only (a clock stepped by NTP: records' times may go back; intervals do
  // not).
  void SetUnixMs(int64_t unix_ms) { unix_ms_.store(unix_ms); }
  // A reboot: a new boot id (steady times taken before no longer compare with SteadyNow()).
  void SetBootId(std::string boot_id);

 private:
  std::atomic<int64_t> unix_ms_;
  std::atomic<int64_t> steady_ms_{0};
  mutable std::mutex boot_mu_;
  std::string boot_id_ = "manual-boot";
  mutable std::mutex waits_mu_;
  mutable std::map<int64_t, int64_t> waits_;  // deadline (steady ms) -> WaitUntil calls
};

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_TIME_CLOCK_H_
