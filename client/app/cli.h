// The `libreyolo` command line: dispatch to subcommands, help, exit codes.
#ifndef LIBREYOLO_CLIENT_APP_CLI_H_
#define LIBREYOLO_CLIENT_APP_CLI_H_

#include <ostream>
#include <string>
#include <vector>

namespace libreyolo::cli {

// Runs `libreyolo <args...>` (args excludes the program name). Results go to `out`, diagnostics
// to `err`; returns the exit code. No global state: tests call this directly.
int RunCli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace libreyolo::cli

#endif  // LIBREYOLO_CLIENT_APP_CLI_H_
