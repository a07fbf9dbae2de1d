// libreyolo: the command-line client. All logic lives in libreyolo_cli (tested directly).
#include <iostream>
#include <string>
#include <vector>

#include "client/cli/cli.h"

int main(int argc, char** argv) {
  std::ios::sync_with_stdio(false);
  std::vector<std::string> args(argv + 1, argv + argc);
  return libreyolo::cli::RunCli(args, std::cout, std::cerr);
}
