// One `libreyolo` on the PATH: this binary answers `profile` and `jobs`; every other command
// (train, predict, val, export, info, ...) is the Python LibreYOLO's, handed to its CLI with
// execv so that argv, stdin/stdout/stderr and the exit code are the Python tool's own.
//
// The Python CLI is $LIBREYOLO_PYTHON_CLI when set, else the next `libreyolo` on PATH that is
// not this binary (same file: same device and inode, so symlinks and hard links to us are
// skipped). A different copy of this binary found first (an installed one and a build tree on
// the same PATH) is handed over to like any other; it skips every copy already passed through,
// which $LIBREYOLO_HANDOFF_SKIP lists, so the chain ends at the Python tool or at "not found".
#ifndef LIBREYOLO_CLIENT_CLI_PYTHON_CLI_H_
#define LIBREYOLO_CLIENT_CLI_PYTHON_CLI_H_

#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace libreyolo::cli {

inline constexpr char kPythonCliEnv[] = "LIBREYOLO_PYTHON_CLI";
inline constexpr char kHandoffSkipEnv[] = "LIBREYOLO_HANDOFF_SKIP";
// Set while this binary asks the Python CLI for its version: a copy of this binary reached on
// the way answers `--version` with the Python CLI it finds itself, after kProbeMarker.
inline constexpr char kVersionProbeEnv[] = "LIBREYOLO_VERSION_PROBE";
inline constexpr char kProbeMarker[] = "libreyolo-python-cli:";

// The install hint every "not found" message carries.
inline constexpr char kPythonCliInstallHint[] =
    "install it with 'pip install libreyolo' (its libreyolo must come after this one on PATH), "
    "or set LIBREYOLO_PYTHON_CLI to the Python LibreYOLO's libreyolo script";

// Whether this binary answers `libreyolo <args...>` itself: no arguments, --help/-h,
// --version, `profile`, `jobs`, or a close misspelling of `profile`/`jobs` (answered with
// "did you mean"). Everything else goes to the Python CLI.
bool IsOwnCommand(const std::vector<std::string>& args);

struct PythonCliSearch {
  std::string override_path;          // $LIBREYOLO_PYTHON_CLI ("" when unset)
  std::string path_env;               // $PATH
  std::string self;                   // this binary (/proc/self/exe)
  std::vector<std::string> skip;      // copies of this binary already passed through
};

// The search as this process sees it (environment and /proc/self/exe).
PythonCliSearch CurrentPythonCliSearch();

// The Python CLI to hand over to. NOT_FOUND (with kPythonCliInstallHint) when there is none;
// FAILED_PRECONDITION when $LIBREYOLO_PYTHON_CLI is not an executable file or is this binary,
// or when the chain of copies of this binary is implausibly long.
absl::StatusOr<std::string> FindPythonCli(const PythonCliSearch& search);

// execv()s the Python CLI with argv (argv[0] kept), $LIBREYOLO_HANDOFF_SKIP extended by this
// binary. Returns only when it could not: the exit code (2) after a message on `err`.
int HandOffToPythonCli(char** argv, std::ostream& err);

struct PythonCliInfo {
  std::string path;     // the Python LibreYOLO's CLI
  std::string version;  // the first line its --version prints ("1.6.0")
};

// Finds the Python CLI and runs `<cli> --version` (stdin and stderr /dev/null, at most 30 s).
// A copy of this binary on the way answers for the one it finds (kProbeMarker), so the path
// is the Python tool's. NOT_FOUND as FindPythonCli.
absl::StatusOr<PythonCliInfo> ProbePythonCli();

// `libreyolo --version`: this binary's version and the Python LibreYOLO's (or "not found");
// under kVersionProbeEnv, the answer for the copy of this binary that asked (kProbeMarker).
std::string VersionText();

}  // namespace libreyolo::cli

#endif  // LIBREYOLO_CLIENT_CLI_PYTHON_CLI_H_
