// libreyolod's command-line flags: parsing argv once (ParsedFlags), applying them over a
// DaemonConfig, and --help, all loops over the option rows (daemon_options.cc: each row's flag
// overrides its key of the file).
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "common/render/terminal_text.h"
#include "common/status/status_macros.h"
#include "server/daemon/config/daemon_config.h"
#include "server/daemon/config/daemon_config_internal.h"
#include "server/daemon/config/daemon_options.h"

namespace libreyolo::daemon {
namespace {

using config_internal::ParseMode;

// ---- Flags ----------------------------------------------------------------------------------

absl::Status BadFlagValue(absl::string_view flag, absl::string_view value, const char* what) {
  return absl::InvalidArgumentError(
      absl::StrCat("--", flag, ": expected ", what, ", got '", Excerpt(std::string(value)), "'"));
}

template <typename Int>
absl::Status FlagInt(absl::string_view flag, absl::string_view value, Int* out) {
  int64_t parsed = 0;
  if (!absl::SimpleAtoi(value, &parsed)) return BadFlagValue(flag, value, "an integer");
  if (parsed < std::numeric_limits<Int>::min() || parsed > std::numeric_limits<Int>::max()) {
    return absl::InvalidArgumentError(absl::StrCat("--", flag, ": ", value, " is out of range"));
  }
  *out = static_cast<Int>(parsed);
  return absl::OkStatus();
}

// Applies a row's flag value to the config as its kind says (`value` is "true" for a switch
// given alone; a list's value is appended: the caller clears the file's list first).
absl::Status ApplyFlag(const DaemonOption& option, absl::string_view flag, absl::string_view value,
                       DaemonConfig* config) {
  return std::visit(
      [&](auto at) -> absl::Status {
        auto* field = &at(*config);
        using T = std::remove_pointer_t<decltype(field)>;
        if constexpr (std::is_same_v<T, bool>) {
          if (!absl::SimpleAtob(value, field)) return BadFlagValue(flag, value, "true or false");
          return absl::OkStatus();
        } else if constexpr (std::is_same_v<T, std::string>) {
          *field = std::string(value);
          return absl::OkStatus();
        } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
          field->emplace_back(value);
          return absl::OkStatus();
        } else {
          if (option.kind == OptionKind::kMode) {
            absl::StatusOr<int> mode = ParseMode(value);
            if (!mode.ok()) return BadFlagValue(flag, value, "an octal mode such as 0660");
            *field = static_cast<T>(*mode);
            return absl::OkStatus();
          }
          absl::string_view number = value;
          if (option.kind == OptionKind::kSeconds && absl::EndsWith(number, "s")) {
            number.remove_suffix(1);  // "90s" reads as 90
          }
          return FlagInt(flag, number, field);
        }
      },
      option.field);
}

// --config and --help: the parser's own flags, not options (first and last in --help).
constexpr const char* kConfigHelp = "YAML configuration file; flags override its keys";
constexpr const char* kHelpHelp = "print this help and exit";

// A flag's --help words: the row's, its default and bounds, and the key it overrides.
std::string Description(const DaemonOption& option) {
  std::string text = option.help;
  if (const std::string fallback = OptionDefault(option);
      !fallback.empty() && option.kind != OptionKind::kSwitch) {
    absl::StrAppend(&text, ", default ", fallback);
  }
  if (option.bound == OptionBound::kRange) {
    absl::StrAppend(&text, " (", option.min, "..", option.max, ")");
  }
  return absl::StrCat(text, " (", option.key, ")");
}

// One flag's lines of --help: the flag and its placeholder, the description wrapped at kWidth
// columns under the indent.
void AppendFlagHelp(absl::string_view name, const char* value, const std::string& description,
                    std::string* help) {
  constexpr size_t kIndent = 28;
  constexpr size_t kWidth = 90;
  std::string line = absl::StrCat("  --", name);
  if (value != nullptr) absl::StrAppend(&line, " ", value);
  if (line.size() + 2 > kIndent) {
    absl::StrAppend(help, line, "\n");
    line.clear();
  }
  line.resize(kIndent, ' ');
  bool first_word = true;
  for (absl::string_view word : absl::StrSplit(description, ' ', absl::SkipEmpty())) {
    if (!first_word && line.size() + 1 + word.size() > kWidth) {
      absl::StrAppend(help, line, "\n");
      line.assign(kIndent, ' ');
      first_word = true;
    }
    absl::StrAppend(&line, first_word ? "" : " ", word);
    first_word = false;
  }
  absl::StrAppend(help, line, "\n");
}

// "unexpected argument ...": a word that is not a flag, with the flag it may have meant.
absl::Status NotAFlag(const std::string& arg) {
  const size_t eq = arg.find('=');
  if (eq != std::string::npos && eq > 0) {
    const std::string flag = absl::StrReplaceAll(arg.substr(0, eq), {{"_", "-"}, {".", "-"}});
    return absl::InvalidArgumentError(absl::StrCat(
        "unexpected argument '", Excerpt(arg), "': flags start with --, e.g. --", Excerpt(flag),
        "=", Excerpt(arg.substr(eq + 1)), " (see libreyolod --help)"));
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unexpected argument '", Excerpt(arg), "': libreyolod takes only flags (see libreyolod --help)"));
}

}  // namespace

absl::StatusOr<ParsedFlags> ParseDaemonFlags(const std::vector<std::string>& args) {
  ParsedFlags result;
  DaemonConfig scratch;  // each value is checked by applying it as its row's kind says
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "-h") {
      result.help = true;
      continue;
    }
    if (!absl::StartsWith(arg, "--")) return NotAFlag(arg);
    absl::string_view name = absl::string_view(arg).substr(2);
    std::optional<std::string> value;
    if (const size_t eq = name.find('='); eq != absl::string_view::npos) {
      value = std::string(name.substr(eq + 1));
      name = name.substr(0, eq);
    }
    const bool own = name == "config" || name == "help";
    const DaemonOption* option = own ? nullptr : FindDaemonFlag(std::string(name));
    if (!own && option == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown flag --", Excerpt(std::string(name)), " (see libreyolod --help)"));
    }
    const char* placeholder =
        name == "config" ? "FILE" : (option != nullptr ? option->value : nullptr);
    if (!value.has_value()) {
      if (placeholder == nullptr) {
        value = "true";  // a switch given alone
      } else if (i + 1 < args.size()) {
        value = args[++i];
      } else {
        return absl::InvalidArgumentError(
            absl::StrCat("--", name, " needs a value (--", name, " ", placeholder, ")"));
      }
    }
    // Optional files may be cleared with an empty value (--tls-cert= turns the file's TLS off).
    const bool clearable = option != nullptr && option->kind == OptionKind::kOptional;
    if (placeholder != nullptr && value->empty() && !clearable) {
      return absl::InvalidArgumentError(absl::StrCat("--", name, ": empty value"));
    }
    if (name == "config") {
      result.config_file = *value;
      continue;
    }
    if (name == "help") {
      if (!absl::SimpleAtob(*value, &result.help)) {
        return BadFlagValue(name, *value, "true or false");
      }
      continue;
    }
    RETURN_IF_ERROR(ApplyFlag(*option, name, *value, &scratch));
    result.values.push_back({option, *std::move(value)});
  }
  return result;
}

absl::Status ApplyParsedFlags(const ParsedFlags& flags, DaemonConfig* config) {
  std::set<const DaemonOption*> lists_replaced;
  for (const ParsedFlags::Value& v : flags.values) {
    const DaemonOption& option = *v.option;
    if (option.kind == OptionKind::kList && lists_replaced.insert(&option).second) {
      std::get<std::vector<std::string>& (*)(DaemonConfig&)>(option.field)(*config).clear();
    }
    RETURN_IF_ERROR(ApplyFlag(option, option.flag, v.value, config));
  }
  return absl::OkStatus();
}

absl::StatusOr<ParsedFlags> ApplyDaemonFlags(const std::vector<std::string>& args,
                                             DaemonConfig* config) {
  ASSIGN_OR_RETURN(ParsedFlags flags, ParseDaemonFlags(args));
  RETURN_IF_ERROR(ApplyParsedFlags(flags, config));
  return flags;
}

std::string DaemonFlagForKey(const std::string& key_path) {
  const DaemonOption* option = FindDaemonOption(key_path);
  return option == nullptr ? "" : absl::StrCat("--", option->flag);
}

std::string DaemonFlagsHelp() {
  std::string help =
      "Usage: libreyolod [--config FILE] [flags]\n"
      "\n"
      "The libreyolo profiling daemon: runs profiling jobs that clients submit over gRPC, one\n"
      "device at a time, and keeps their profiles. Flags override the YAML file's keys (named\n"
      "in parentheses). Flags take a value as --flag VALUE or --flag=VALUE; switches may be\n"
      "given as --flag or --flag=true|false.\n"
      "\n"
      "Flags:\n";
  AppendFlagHelp("config", "FILE", kConfigHelp, &help);
  for (const DaemonOption& option : DaemonOptions()) {
    AppendFlagHelp(option.flag, option.value, Description(option), &help);
  }
  AppendFlagHelp("help", nullptr, kHelpHelp, &help);
  absl::StrAppend(
      &help,
      "\n"
      "Security: TCP listeners need TLS (--tls-cert/--tls-key) or --insecure-tcp, and a\n"
      "tokens file (--tokens-file); TCP callers send 'authorization: Bearer <token>'.\n"
      "Unix-socket callers are identified by their uid (uid 0 and --admin users are\n"
      "admins).\n");
  return help;
}

}  // namespace libreyolo::daemon
