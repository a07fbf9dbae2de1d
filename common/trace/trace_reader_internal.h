// The simdjson reader's internals, for its tests: which walker read the events.
#ifndef LIBREYOLO_COMMON_TRACE_TRACE_READER_INTERNAL_H_
#define LIBREYOLO_COMMON_TRACE_TRACE_READER_INTERNAL_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "absl/status/statusor.h"
#include "common/trace/trace_data.h"

namespace libreyolo::internal {

// Elements of the events lists read by the events' own walker (ElementWalker), and elements it
// declined (each hands the rest of its batch to simdjson's on-demand walk).
struct EventWalkCounts {
  int64_t walked = 0;
  int64_t declined = 0;
};

// ReadTraceTextSimdjson (trace_reader.h), counting into `counts`.
std::optional<absl::StatusOr<TraceData>> ReadTraceTextSimdjson(std::string_view json,
                                                                size_t block_bytes,
                                                                size_t batch_bytes,
                                                                EventWalkCounts* counts);

// The same with `workers` threads walking batches of events besides the caller's, each into a
// partial result merged in file order (what ReadTraceFile does with one per core beyond two);
// 0: the caller walks everything in order.
std::optional<absl::StatusOr<TraceData>> ReadTraceTextSimdjson(std::string_view json,
                                                                size_t block_bytes,
                                                                size_t batch_bytes,
                                                                EventWalkCounts* counts,
                                                                int workers);

// Set by a test: that many batches taken by a batch walker's thread (not the caller's) throw
// instead of being walked, each taking one off (the throw injection of the catch-all at the
// threads' top, common/status/thread_guard.h: the read then fails naming it).
extern std::atomic<int> g_batch_walker_throws_for_test;

}  // namespace libreyolo::internal

#endif  // LIBREYOLO_COMMON_TRACE_TRACE_READER_INTERNAL_H_
