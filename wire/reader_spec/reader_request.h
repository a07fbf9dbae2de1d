// A reader's call on the wire, in one place for both ends: the client turns the invocation its
// command line built into a ReadRequest, the daemon turns any reader request (the generic Read
// and every v1 reader RPC, which it wraps into one) back into the same invocation, and the
// shared RunReader (common/readers/run_reader.h) renders it. Torch-free, gRPC-free (messages
// only).
#ifndef LIBREYOLO_WIRE_READER_SPEC_READER_REQUEST_H_
#define LIBREYOLO_WIRE_READER_SPEC_READER_REQUEST_H_

#include <vector>

#include "absl/status/statusor.h"
#include "common/readers/run_reader.h"
#include "libreyolo/profiler/v1/profiler.pb.h"

namespace libreyolo::readerspec {

namespace v1 = ::libreyolo::profiler::v1;

// The request for `inv.reader` over `refs` (compare: before, after). INVALID_ARGUMENT for the
// wrong number of refs. Every reader has a request (a switch over ReaderId: a reader added to
// the table and not here does not compile cleanly).
absl::StatusOr<v1::ReadRequest> ToReadRequest(const ReaderInvocation& inv,
                                              const std::vector<v1::ProfileRef>& refs);

struct ReadCall {
  ReaderInvocation invocation;       // reader and options; inputs left to the caller
  std::vector<v1::ProfileRef> refs;  // what to read, in the reader's order
};

// The call a request asks for; INVALID_ARGUMENT when it names no reader.
absl::StatusOr<ReadCall> FromReadRequest(const v1::ReadRequest& req);

}  // namespace libreyolo::readerspec

#endif  // LIBREYOLO_WIRE_READER_SPEC_READER_REQUEST_H_
