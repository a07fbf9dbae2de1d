// Every exit code of the project, in one place: those of `libreyolo profile` and `libreyolo
// jobs` (README.md "Exit codes") with the one mapping from a failed absl::Status to them,
// shared by the client, the engine tool and the daemon's job records (a job's exit_code is what
// the local command would have returned); and those of the libreyolod process itself
// (docs/deploy.md "Start-up errors"), a different program with a code space of its own.
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

inline constexpr int kExitInterrupted = 130;  // Ctrl-C (SIGINT), as a shell reports it

// OK -> 0.
// OUT_OF_RANGE -> 3: the run ended before its profiled window (too few steps for the dataset).
// INVALID_ARGUMENT, NOT_FOUND, FAILED_PRECONDITION, ALREADY_EXISTS, PERMISSION_DENIED,
// UNAUTHENTICATED, UNAVAILABLE (no daemon at the address, a write the disk refused),
// DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED (a limit, a full disk, device memory) -> 2.
// Everything else (DATA_LOSS, INTERNAL, UNKNOWN, CANCELLED, ABORTED, UNIMPLEMENTED) -> 1.
int ExitCodeForStatus(const absl::Status& status);

// libreyolod's own exit codes: 0 stopped cleanly; 1 an unexpected failure; 2 a configuration or
// flag error (fix the config); 3 something it needs is in use (a port, a Unix socket, the state
// or store dir held by another libreyolod). Never a signal.
inline constexpr int kDaemonExitOk = 0;
inline constexpr int kDaemonExitUnexpected = 1;
inline constexpr int kDaemonExitConfig = 2;
inline constexpr int kDaemonExitInUse = 3;

// The daemon's exit code for a failed start: ALREADY_EXISTS (in use) -> 3; INVALID_ARGUMENT,
// NOT_FOUND, FAILED_PRECONDITION, PERMISSION_DENIED, OUT_OF_RANGE (the config's to fix) -> 2;
// anything else -> 1.
int DaemonExitCodeForStartStatus(const absl::Status& status);

}  // namespace libreyolo

#endif  // LIBREYOLO_COMMON_STATUS_EXIT_CODE_H_
