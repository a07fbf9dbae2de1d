// POSIX-style argument parsing for `libreyolo` subcommands (no global flags: Abseil tip #103).
#ifndef LIBREYOLO_CLIENT_CLI_ARGS_H_
#define LIBREYOLO_CLIENT_CLI_ARGS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace libreyolo::cli {

struct FlagSpec {
  std::string name;        // without dashes: "top"
  std::string value_name;  // "N"; empty for a switch (--json, --tensorcore)
  std::string default_value;
  std::string help;
  bool negatable = false;  // a switch that also has --no-<name>
  char short_name = '\0';  // a one-letter alias spelled -x ('\0': none), e.g. -o for --output
};

struct PositionalSpec {
  std::string name;  // "trace"
  bool required = true;
  std::string help;
};

struct CommandSpec {
  std::string name;     // "kernels"
  std::string summary;  // one line for the subcommand list
  std::string description;
  std::vector<PositionalSpec> positionals;
  std::vector<FlagSpec> flags;
};

struct ParsedArgs {
  std::vector<std::string> positionals;
  std::map<std::string, std::string> values;  // flags that take a value (the last one given)
  std::map<std::string, std::vector<std::string>> all_values;  // every value, for repeatable flags
  std::map<std::string, bool> switches;       // switches given (true, or false for --no-x)
  bool help = false;

  bool Switch(const std::string& name, bool def = false) const;
  std::optional<std::string> Value(const std::string& name) const;
  std::string ValueOr(const std::string& name, const std::string& def) const;
  std::vector<std::string> Values(const std::string& name) const;  // repeatable flags
};

// INVALID_ARGUMENT (exit 2) for an unknown flag, a missing value, a key=value argument, or a
// wrong number of positionals; the message says what to write instead.
absl::StatusOr<ParsedArgs> ParseArgs(const CommandSpec& spec, const std::vector<std::string>& args);

// Parses an integer given by `source` (a flag, "--top", or a variable, "$WORLD_SIZE"); the error
// names the source and tells text that is no integer ("needs an integer, got 'x'") from an
// integer past 64 bits ("is out of range"), so that 2^63 is not called "not an integer". The
// caller checks its own bounds on the int64_t.
absl::StatusOr<int64_t> ParseInteger(const std::string& source, const std::string& value);
// ParseInteger for a flag named without its dashes.
absl::StatusOr<int64_t> ParseIntFlag(const std::string& flag, const std::string& value);
absl::StatusOr<double> ParseDoubleFlag(const std::string& flag, const std::string& value);

// `--help` text: usage line, description, positionals and every flag with its default.
std::string HelpText(const std::string& program, const CommandSpec& spec);

}  // namespace libreyolo::cli

#endif  // LIBREYOLO_CLIENT_CLI_ARGS_H_
