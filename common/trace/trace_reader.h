// Streaming reader for PyTorch/Kineto Chrome traces (.json / .json.gz, object or bare list).
#ifndef LIBREYOLO_COMMON_TRACE_TRACE_READER_H_
#define LIBREYOLO_COMMON_TRACE_TRACE_READER_H_

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "common/trace/trace_data.h"

namespace libreyolo {

// kSimdjson (the default): simdjson's on-demand parser; any input it rejects is decided by the
// RapidJSON reader, so both give the same result and the same errors on every input.
// kRapidJson: the RapidJSON SAX reader alone, kept as the reference and the benchmark's peer.
enum class TraceParser { kSimdjson, kRapidJson };

// Parses without a DOM: memory is bounded by the kept events, not the file.
// Errors: NOT_FOUND (missing file), DATA_LOSS (truncated gzip), INVALID_ARGUMENT (bad JSON,
// with the byte offset, or JSON that is not a trace). Malformed events are counted, not fatal.
absl::StatusOr<TraceData> ReadTraceFile(const std::string& path,
                                        TraceParser parser = TraceParser::kSimdjson);
absl::StatusOr<TraceData> ReadTraceText(std::string_view json,
                                        TraceParser parser = TraceParser::kSimdjson);

// Whether two readings of a trace are the same, field by field (events, string table, side
// tables, steps, device, counters); else false with the first difference in `why`. For the
// parity test and the fuzz target.
bool SameTraceData(const TraceData& a, const TraceData& b, std::string* why);

namespace internal {
// The simdjson reader over `json` fed in blocks of `block_bytes`, events parsed in documents of
// about `batch_bytes`: small sizes put every cut the splitter makes to the test (tests, fuzz).
// nullopt where the input is left to the RapidJSON reader (which ReadTraceText then calls).
std::optional<absl::StatusOr<TraceData>> ReadTraceTextSimdjson(std::string_view json,
                                                                size_t block_bytes,
                                                                size_t batch_bytes);
}  // namespace internal

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_TRACE_TRACE_READER_H_
