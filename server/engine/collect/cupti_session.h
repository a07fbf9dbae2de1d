// One CUPTI collection after another in one process. A daemon's engine worker runs many jobs in
// one process, and CUPTI's activity API is process-wide with a buffer-completed callback that
// carries no user data, so every collection's records pass through one sink. PyTorch's profiler
// is known to get the second session of a process wrong (callbacks re-registered per session,
// one clock conversion for all); ours keeps each collection to its own records and its own clock
// samples:
//  - the callbacks are registered once per process (the collector's part);
//  - a buffer that completes while no collection is open (after a Stop's forced flush) is
//    discarded;
//  - a record that began before the collection opened (a late buffer of the one before,
//    delivered after this one opened) is left out and counted, never added;
//  - each collection converts its times with the clock samples taken at its own Start and Stop.
// No CUPTI header: built and tested on every machine.
#ifndef LIBREYOLO_SERVER_ENGINE_COLLECT_CUPTI_SESSION_H_
#define LIBREYOLO_SERVER_ENGINE_COLLECT_CUPTI_SESSION_H_

#include <cstdint>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "server/engine/collect/collected_trace.h"
#include "server/engine/collect/cupti_convert.h"
#include "server/engine/collect/cupti_records.h"

namespace libreyolo::engine {

// What one collection gathered.
struct CuptiSessionRecords {
  CuptiRecords records;
  std::vector<ClockSample> clock_samples;  // its own: taken at its Open and its Close
  uint64_t stale = 0;      // records of an earlier collection that arrived during this one
  uint64_t discarded = 0;  // records delivered while no collection was open, since the last Open
  uint64_t ordinal = 0;    // 1 for the process's first collection, 2 for the next, ...
};

class CuptiSessionSink {
 public:
  // Opens a collection. `start_samples` pair the CPU clock with CUPTI's, taken just before the
  // activity kinds are enabled; the earliest CUPTI time among them is where the collection
  // begins. Whatever an earlier collection left behind is discarded.
  void Open(std::vector<ClockSample> start_samples);
  // Records from a completed buffer (CUPTI's thread). Thread-safe.
  void Deliver(CuptiRecords records);
  // Closes the collection, adding `stop_samples` (taken before the kinds are disabled), and
  // returns what it gathered. Records delivered after this are discarded until the next Open.
  CuptiSessionRecords Close(std::vector<ClockSample> stop_samples);

  bool open() const;

 private:
  mutable absl::Mutex mu_;
  bool open_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t start_ns_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t ordinal_ ABSL_GUARDED_BY(mu_) = 0;
  CuptiSessionRecords current_ ABSL_GUARDED_BY(mu_);
  uint64_t discarded_ ABSL_GUARDED_BY(mu_) = 0;
};

// The collection's trace: its records converted (ConvertCuptiRecords), its own clock samples,
// and a note for what was left out ("CUPTI: 3 records of an earlier collection in this process
// were left out"), so MergeGpuActivity aligns it on its own clock.
CollectedTrace ConvertCuptiSession(const CuptiSessionRecords& session,
                                   const CuptiApiNameFn& api_name);

}  // namespace libreyolo::engine

#endif  // LIBREYOLO_SERVER_ENGINE_COLLECT_CUPTI_SESSION_H_
