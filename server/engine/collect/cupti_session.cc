#include "server/engine/collect/cupti_session.h"

#include <algorithm>
#include <iterator>
#include <utility>

#include "absl/strings/str_cat.h"

namespace libreyolo::engine {
namespace {

// Moves the records that began at or after `start_ns` into `to`; returns how many did not.
template <typename T, typename Start>
uint64_t MoveFrom(std::vector<T>& from, uint64_t start_ns, Start start, std::vector<T>& to) {
  uint64_t stale = 0;
  for (T& r : from) {
    if (start(r) < start_ns) {
      ++stale;
    } else {
      to.push_back(std::move(r));
    }
  }
  return stale;
}

uint64_t CountOf(const CuptiRecords& r) {
  return r.kernels.size() + r.memcpys.size() + r.memsets.size() + r.api_calls.size() +
         r.devices.size() + r.memory.size() + r.other;
}

}  // namespace

void CuptiSessionSink::Open(std::vector<ClockSample> start_samples) {
  absl::MutexLock lock(&mu_);
  current_ = CuptiSessionRecords();
  current_.ordinal = ++ordinal_;
  current_.discarded = std::exchange(discarded_, 0);
  start_ns_ = 0;
  bool first = true;
  for (const ClockSample& s : start_samples) {
    const uint64_t t = static_cast<uint64_t>(std::max<int64_t>(s.other_ns, 0));
    start_ns_ = first ? t : std::min(start_ns_, t);
    first = false;
  }
  current_.clock_samples = std::move(start_samples);
  open_ = true;
}

void CuptiSessionSink::Deliver(CuptiRecords records) {
  absl::MutexLock lock(&mu_);
  if (!open_) {
    discarded_ += CountOf(records);
    return;
  }
  CuptiRecords& to = current_.records;
  uint64_t stale = 0;
  stale += MoveFrom(records.kernels, start_ns_, [](const auto& k) { return k.start_ns; },
                    to.kernels);
  stale += MoveFrom(records.memcpys, start_ns_, [](const auto& m) { return m.start_ns; },
                    to.memcpys);
  stale += MoveFrom(records.memsets, start_ns_, [](const auto& m) { return m.start_ns; },
                    to.memsets);
  stale += MoveFrom(records.api_calls, start_ns_, [](const auto& a) { return a.start_ns; },
                    to.api_calls);
  stale += MoveFrom(records.memory, start_ns_, [](const auto& m) { return m.timestamp_ns; },
                    to.memory);
  // Device records carry no time: they describe the hardware, whichever collection asked.
  to.devices.insert(to.devices.end(), std::make_move_iterator(records.devices.begin()),
                    std::make_move_iterator(records.devices.end()));
  to.dropped += records.dropped;
  to.other += records.other;
  current_.stale += stale;
}

CuptiSessionRecords CuptiSessionSink::Close(std::vector<ClockSample> stop_samples) {
  absl::MutexLock lock(&mu_);
  open_ = false;
  CuptiSessionRecords out = std::move(current_);
  current_ = CuptiSessionRecords();
  out.clock_samples.insert(out.clock_samples.end(), stop_samples.begin(), stop_samples.end());
  return out;
}

bool CuptiSessionSink::open() const {
  absl::MutexLock lock(&mu_);
  return open_;
}

CollectedTrace ConvertCuptiSession(const CuptiSessionRecords& session,
                                   const CuptiApiNameFn& api_name) {
  CollectedTrace trace = ConvertCuptiRecords(session.records, api_name);
  trace.clock_samples = session.clock_samples;
  if (session.stale > 0) {
    trace.notes.push_back(absl::StrCat("CUPTI: ", session.stale,
                                       " records of an earlier collection in this process "
                                       "arrived late and were left out"));
  }
  return trace;
}

}  // namespace libreyolo::engine
