// The reader subcommands of `libreyolo profile`: summary, get, phases, kernels, ops, modules,
// compare, what-if (one row each, over common/readers/run_reader.h's Readers()), and report.
// Each loads its input(s), builds the common/readers view and renders text or --json.
#ifndef LIBREYOLO_CLIENT_COMMANDS_READER_COMMANDS_H_
#define LIBREYOLO_CLIENT_COMMANDS_READER_COMMANDS_H_

#include <functional>
#include <ostream>
#include <vector>

#include "client/cli/args.h"

namespace libreyolo::cli {

struct ReaderCommand {
  CommandSpec spec;
  std::function<int(const ParsedArgs& args, std::ostream& out, std::ostream& err)> run;
};

// In the order `libreyolo profile` lists them.
const std::vector<ReaderCommand>& ReaderCommands();

}  // namespace libreyolo::cli

#endif  // LIBREYOLO_CLIENT_COMMANDS_READER_COMMANDS_H_
