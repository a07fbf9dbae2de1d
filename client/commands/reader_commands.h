// The reader subcommands of `libreyolo profile`: summary, get, phases, kernels, ops, compare,
// what-if. Each loads its input(s), builds the common/readers view and renders text or --json.
#ifndef LIBREYOLO_CLIENT_COMMANDS_READER_COMMANDS_H_
#define LIBREYOLO_CLIENT_COMMANDS_READER_COMMANDS_H_

#include <ostream>
#include <vector>

#include "client/cli/args.h"

namespace libreyolo::cli {

struct ReaderCommand {
  CommandSpec spec;
  int (*run)(const ParsedArgs& args, std::ostream& out, std::ostream& err);
};

// In the order `libreyolo profile` lists them.
const std::vector<ReaderCommand>& ReaderCommands();

}  // namespace libreyolo::cli

#endif  // LIBREYOLO_CLIENT_COMMANDS_READER_COMMANDS_H_
