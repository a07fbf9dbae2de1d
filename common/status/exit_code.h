// The exit codes of `libreyolo profile` and `libreyolo jobs` (README.md "Exit codes"), and the
// one mapping from a failed absl::Status to them, shared by the client, the engine tool and the
// daemon's job records (a job's exit_code is what the local command would have returned).
#ifndef LIBREYOLO_COMMON_STATUS_EXIT_CODE_H_
#define LIBREYOLO_COMMON_STATUS_EXIT_CODE_H_

#include "absl/status/status.h"

namespace libreyolo {

inline constexpr int kExitOk = 0;
inline constexpr int kExitAnalysisFailed = 1;  // cannot be analysed, or an internal failure
inline constexpr int kExitUsage = 2;           // what the user fixes: arguments, files, setup
inline constexpr int kExitNoProfile = 3;       // `run` produced no profile
// `profile compare BEFORE AFTER --fail-if-slower PCT` (common/analysis/compare_gate.h): PASS
// is kExitOk; the other two verdicts have codes of their own, so that CI can tell "slower
// beyond the threshold" from "the numbers cannot decide" and both from an error (1, 2).
inline constexpr int kExitCompareFail = 4;          // FAIL: slower than the threshold
inline constexpr int kExitCompareInconclusive = 5;  // INCONCLUSIVE: n < 2, or the interval
                                                    // straddles the threshold

// OK -> 0.
// OUT_OF_RANGE -> 3: the run ended before its profiled window (too few steps for the dataset).
// INVALID_ARGUMENT, NOT_FOUND, FAILED_PRECONDITION, ALREADY_EXISTS, PERMISSION_DENIED,
// UNAUTHENTICATED, UNAVAILABLE (no daemon at the address, a write the disk refused),
// DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED (a limit, a full disk, device memory) -> 2.
// Everything else (DATA_LOSS, INTERNAL, UNKNOWN, CANCELLED, ABORTED, UNIMPLEMENTED) -> 1.
int ExitCodeForStatus(const absl::Status& status);

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_STATUS_EXIT_CODE_H_
