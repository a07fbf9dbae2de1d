// The documented exit codes of `libreyolo profile` (shared/spec/cli.md, README.md "Exit codes"):
// common/status/exit_code.h's, by their client names.
#ifndef LIBREYOLO_CLIENT_CLI_EXIT_CODES_H_
#define LIBREYOLO_CLIENT_CLI_EXIT_CODES_H_

#include "common/status/exit_code.h"

namespace libreyolo::cli {

using ::libreyolo::ExitCodeForStatus;
using ::libreyolo::kExitAnalysisFailed;
using ::libreyolo::kExitCompareFail;
using ::libreyolo::kExitCompareInconclusive;
using ::libreyolo::kExitInterrupted;
using ::libreyolo::kExitNoProfile;
using ::libreyolo::kExitOk;
using ::libreyolo::kExitUsage;

}  // namespace libreyolo::cli

#endif  // LIBREYOLO_CLIENT_CLI_EXIT_CODES_H_
