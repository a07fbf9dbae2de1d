// The client's whole command line run in-process (RunCli), its exit code and both streams
// kept: the helper every client test uses.
#ifndef LIBREYOLO_TESTS_SUPPORT_CLI_RUN_H_
#define LIBREYOLO_TESTS_SUPPORT_CLI_RUN_H_

#include <sstream>
#include <string>
#include <vector>

#include "client/app/cli.h"

namespace libreyolo::cli::testing {

struct CliResult {
  int code;
  std::string out, err;
};

inline CliResult Cli(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  const int code = RunCli(args, out, err);
  return {code, out.str(), err.str()};
}

}  // namespace libreyolo::cli::testing

#endif  // LIBREYOLO_TESTS_SUPPORT_CLI_RUN_H_
