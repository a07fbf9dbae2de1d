// A reader's call on the wire, in one place for both ends: the client turns the invocation its
// command line built into a ReadRequest, the daemon turns any reader request (the generic Read
// and every v1 reader RPC, which it wraps into one) back into the same invocation, and the
// shared RunReader (common/readers/run_reader.h) renders it. Torch-free, gRPC-free (messages
// only).
#ifndef LIBREYOLO_WIRE_READER_SPEC_READER_REQUEST_H_
#define LIBREYOLO_WIRE_READER_SPEC_READER_REQUEST_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/readers/run_reader.h"
#include "libreyolo/profiler/v1/profiler.pb.h"

namespace libreyolo::readerspec {

namespace v1 = ::libreyolo::profiler::v1;

// A reader's row on the wire: which field of ReadRequest's `reader` oneof carries it, and its
// two conversions. One row per reader of Readers(), in ReaderId order; the field is named as
// the reader with '-' -> '_' (what-if: what_if). reader_request_test walks Readers() and the
// oneof's descriptor, so a reader without a row, or a row naming another field, fails it.
struct ReaderWire {
  ReaderId id;
  v1::ReadRequest::ReaderCase wire_case;
  // The invocation's options and `refs` (as many as the reader reads) into the request.
  void (*to)(const ReaderInvocation& inv, const std::vector<v1::ProfileRef>& refs,
             v1::ReadRequest& out);
  // The request's options into `inv` (only the reader's own); returns the refs in the
  // reader's order.
  std::vector<v1::ProfileRef> (*from)(const v1::ReadRequest& req, ReaderInvocation& inv);
};

const std::vector<ReaderWire>& ReaderWires();
// The row of a reader, or of a oneof case; nullptr where there is none.
const ReaderWire* FindReaderWire(ReaderId id);
const ReaderWire* FindReaderWire(v1::ReadRequest::ReaderCase wire_case);
// The oneof field's name for a case ("what_if"), from the message's descriptor.
std::string WireFieldName(v1::ReadRequest::ReaderCase wire_case);
// "reader: set one of summary, get, ...": the refusal of a request naming no reader (or one
// this build does not know), listing the rows' fields.
std::string ReaderNotSetMessage();

// The request for `inv.reader` over `refs` (compare: before, after): a lookup of the reader's
// row. INVALID_ARGUMENT for the wrong number of refs.
absl::StatusOr<v1::ReadRequest> ToReadRequest(const ReaderInvocation& inv,
                                              const std::vector<v1::ProfileRef>& refs);

struct ReadCall {
  ReaderInvocation invocation;       // reader and options; inputs left to the caller
  std::vector<v1::ProfileRef> refs;  // what to read, in the reader's order
};

// The call a request asks for (a lookup of the oneof case's row); INVALID_ARGUMENT
// (ReaderNotSetMessage) when it names no reader.
absl::StatusOr<ReadCall> FromReadRequest(const v1::ReadRequest& req);

}  // namespace libreyolo::readerspec

#endif  // LIBREYOLO_WIRE_READER_SPEC_READER_REQUEST_H_
