// Streaming reader for PyTorch/Kineto Chrome traces (.json / .json.gz, object or bare list).
#ifndef LIBREYOLO_COMMON_TRACE_TRACE_READER_H_
#define LIBREYOLO_COMMON_TRACE_TRACE_READER_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "common/trace/trace_data.h"

namespace libreyolo {

// Parses with a SAX handler (no DOM): memory is bounded by the kept events, not the file.
// Errors: NOT_FOUND (missing file), DATA_LOSS (truncated gzip), INVALID_ARGUMENT (bad JSON,
// with the byte offset, or JSON that is not a trace). Malformed events are counted, not fatal.
absl::StatusOr<TraceData> ReadTraceFile(const std::string& path);
absl::StatusOr<TraceData> ReadTraceText(std::string_view json);

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_TRACE_TRACE_READER_H_
