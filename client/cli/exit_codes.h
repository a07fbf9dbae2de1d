// The documented exit codes of `libreyolo profile` (shared/spec/cli.md).
#ifndef LIBREYOLO_CLIENT_CLI_EXIT_CODES_H_
#define LIBREYOLO_CLIENT_CLI_EXIT_CODES_H_

namespace libreyolo::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitAnalysisFailed = 1;  // a trace or profile that cannot be analysed
inline constexpr int kExitUsage = 2;           // missing file, bad argument, unknown field/phase
inline constexpr int kExitNoProfile = 3;       // `run` produced no profile

}  // namespace libreyolo::cli

#endif  // LIBREYOLO_CLIENT_CLI_EXIT_CODES_H_
