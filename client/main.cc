// libreyolo: the command-line client. All logic lives in libreyolo_cli (tested directly).
// `profile` and `jobs` are ours; every other command is the Python LibreYOLO's, exec()ed in
// place of this process (client/cli/python_cli.h).
#include <iostream>
#include <string>
#include <vector>

#include "client/app/cli.h"
#include "client/cli/python_cli.h"

int main(int argc, char** argv) {
  std::ios::sync_with_stdio(false);
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!libreyolo::cli::IsOwnCommand(args)) {
    return libreyolo::cli::HandOffToPythonCli(argv, std::cerr);  // returns only on failure
  }
  return libreyolo::cli::RunCli(args, std::cout, std::cerr);
}
