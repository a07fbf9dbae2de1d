// The one table of libreyolod's options (issue 39 §1): a row per option names its YAML key, its
// flag, its --help text, its bounds, whether a SIGHUP reload applies it, and the DaemonConfig
// field it lands in (its default is that field's initializer; the job spec's five limits take
// theirs in Limits()). The YAML reader
// (daemon_config_file.cc), the flag parser and --help (daemon_config_flags.cc), the bound checks
// and reload rule (daemon_options.cc) and docs/deploy.md's option table (checked by
// daemon_config_test) are loops over these rows; ValidateDaemonConfig keeps only the rules
// across options. Adding an option: a field in daemon_config.h, a row in daemon_options.cc, the
// line the test prints for docs/deploy.md.
#ifndef LIBREYOLO_SERVER_DAEMON_CONFIG_DAEMON_OPTIONS_H_
#define LIBREYOLO_SERVER_DAEMON_CONFIG_DAEMON_OPTIONS_H_

#include <cstdint>
#include <limits>
#include <string>
#include <variant>
#include <vector>

#include "server/daemon/config/daemon_config.h"

namespace libreyolo::daemon {

// How an option's value is spelled (in the file and as a flag).
enum class OptionKind {
  kInt,         // a decimal integer ("010" is ten)
  kSeconds,     // an integer of seconds; the flag also reads "90s"
  kMode,        // an octal permission mode: 0660, "660", 0o660
  kSwitch,      // true or false; the flag alone means true
  kString,      // a non-empty flag value
  kOptional,    // a string the flag may clear with an empty value (--tls-cert=)
  kList,        // a list; the flag repeats, its first use replaces the file's list
};

// The bound a value is checked against (ValidateDaemonConfig), and the words of its message:
// kPositive "KEY (--FLAG) must be positive, got V" (and, with `max`, "KEY (--FLAG): at most MAX
// UNIT, got V"); kNonNegative "... must be 0 or more, got V"; kRange "KEY (--FLAG): expected
// MIN..MAX UNIT, got V".
enum class OptionBound { kNone, kPositive, kNonNegative, kRange };

// Whether SIGHUP applies an option to the running daemon, or only a restart does. The rows of
// one section share it (a reload's note names the section).
enum class Reload { kRestart, kLive };

// Where an option lands: a function from the config to its field (a captureless lambda).
using OptionField =
    std::variant<int32_t& (*)(DaemonConfig&), int64_t& (*)(DaemonConfig&), bool& (*)(DaemonConfig&),
                 std::string& (*)(DaemonConfig&), std::vector<std::string>& (*)(DaemonConfig&)>;

struct DaemonOption;
// A single option's rule beyond a bound (a list's entries, a file that must be readable):
// appends one line per problem.
using OptionCheck = void (*)(const DaemonOption& option, const DaemonConfig& config,
                             std::vector<std::string>* problems);

inline constexpr int64_t kNoMax = std::numeric_limits<int64_t>::max();

struct DaemonOption {
  const char* key;    // the YAML path: "limits.max_batch"
  const char* flag;   // without "--": "max-batch"
  const char* value;  // --help's placeholder ("N", "FILE"); nullptr for a switch
  const char* help;   // --help's words; the default, the bounds and the key are appended
  OptionKind kind;
  OptionField field;
  Reload reload = Reload::kRestart;
  OptionBound bound = OptionBound::kNone;
  int64_t min = 0;
  int64_t max = kNoMax;
  const char* unit = "";  // "seconds": in a bound's message
  OptionCheck check = nullptr;
};

// Every option, in the file's and --help's order.
const std::vector<DaemonOption>& DaemonOptions();
// The row of a YAML key path, or nullptr.
const DaemonOption* FindDaemonOption(const std::string& key);
// The row of a flag name (without "--"), or nullptr.
const DaemonOption* FindDaemonFlag(const std::string& flag);

// "limits.max_batch (--max-batch)": how a message names an option.
std::string OptionName(const DaemonOption& option);
// The option's built-in default as docs show it ("256", "0660", "(empty)", "false").
std::string OptionDefault(const DaemonOption& option);
// Its bound as docs show it ("1..64", ">= 1", ">= 0", "1..2147483647"), "" for none.
std::string OptionRange(const DaemonOption& option);

// The bound of every row and its check: one line per problem.
void OptionProblems(const DaemonConfig& config, std::vector<std::string>* problems);

// docs/deploy.md's option table (between its "daemon-options" markers), made from the rows.
std::string DaemonOptionsMarkdown();

// Whether two configs hold the same value of `option`; copies it from `from` into `to`.
bool SameOption(const DaemonOption& option, const DaemonConfig& a, const DaemonConfig& b);
void CopyOption(const DaemonOption& option, const DaemonConfig& from, DaemonConfig* to);

}  // namespace libreyolo::daemon

#endif  // LIBREYOLO_SERVER_DAEMON_CONFIG_DAEMON_OPTIONS_H_
