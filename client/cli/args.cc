#include "client/cli/args.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "client/cli/suggest.h"
#include "common/render/terminal_text.h"

namespace libreyolo::cli {
namespace {

const FlagSpec* FindFlag(const CommandSpec& spec, const std::string& name) {
  for (const FlagSpec& f : spec.flags) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

bool LooksLikeKeyValue(const std::string& arg) {
  const size_t eq = arg.find('=');
  if (eq == std::string::npos || eq == 0 || absl::StartsWith(arg, "-")) return false;
  for (size_t i = 0; i < eq; ++i) {
    const char c = arg[i];
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-')) return false;
  }
  return true;
}

// "; did you mean --device?" when a known flag of the command is close to `name`, else "".
std::string FlagSuggestion(const CommandSpec& spec, const std::string& name) {
  std::vector<std::string> names = {"help"};
  for (const FlagSpec& f : spec.flags) {
    names.push_back(f.name);
    if (f.negatable) names.push_back("no-" + f.name);
  }
  const std::optional<std::string> best = ClosestName(name, names);
  return best ? absl::StrCat("; did you mean --", *best, "?") : "";
}

}  // namespace

bool ParsedArgs::Switch(const std::string& name, bool def) const {
  auto it = switches.find(name);
  return it == switches.end() ? def : it->second;
}

std::optional<std::string> ParsedArgs::Value(const std::string& name) const {
  auto it = values.find(name);
  if (it == values.end()) return std::nullopt;
  return it->second;
}

std::vector<std::string> ParsedArgs::Values(const std::string& name) const {
  auto it = all_values.find(name);
  return it == all_values.end() ? std::vector<std::string>{} : it->second;
}

std::string ParsedArgs::ValueOr(const std::string& name, const std::string& def) const {
  return Value(name).value_or(def);
}

absl::StatusOr<ParsedArgs> ParseArgs(const CommandSpec& spec,
                                     const std::vector<std::string>& args) {
  ParsedArgs out;
  bool only_positionals = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (only_positionals || a == "-" || !absl::StartsWith(a, "-")) {
      if (!only_positionals && LooksLikeKeyValue(a)) {
        const std::string key = a.substr(0, a.find('='));
        const std::string value = a.substr(a.find('=') + 1);
        if (FindFlag(spec, key) != nullptr) {
          return absl::InvalidArgumentError(absl::StrCat(
              "'", Excerpt(a), "' looks like key=value; this command takes POSIX flags: write --",
              Excerpt(key), " ", Excerpt(value), " (see --help)"));
        }
        // No such flag: the key is most likely a positional's name (summary trace=x).
        std::string positional;
        for (const PositionalSpec& p : spec.positionals) {
          if (p.name == key) positional = p.name;
        }
        return absl::InvalidArgumentError(absl::StrCat(
            "'", Excerpt(a), "' looks like key=value; this command takes POSIX arguments",
            positional.empty() ? absl::StrCat(" and has no --", Excerpt(key), " flag (see --help)")
                               : absl::StrCat(": give the ", positional, " as it is: '", spec.name,
                                              " ", Excerpt(value), "'")));
      }
      out.positionals.push_back(a);
      continue;
    }
    if (a == "--") {
      only_positionals = true;
      continue;
    }
    if (a == "-h" || a == "--help") {
      out.help = true;
      continue;
    }
    std::string name;
    if (a.size() == 2 && a[0] == '-') {
      for (const FlagSpec& f : spec.flags) {
        if (f.short_name != '\0' && f.short_name == a[1]) name = f.name;
      }
    }
    if (name.empty() && !absl::StartsWith(a, "--")) {
      std::string hint = FlagSuggestion(spec, a.substr(1));
      if (hint.empty()) hint = " (see --help)";
      return absl::InvalidArgumentError(
          absl::StrCat("unknown option '", Excerpt(a), "': flags are spelled --name", hint));
    }
    if (name.empty()) name = a.substr(2);
    std::optional<std::string> inline_value;
    if (const size_t eq = name.find('='); eq != std::string::npos) {
      inline_value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    const FlagSpec* f = FindFlag(spec, name);
    bool negated = false;
    if (f == nullptr && absl::StartsWith(name, "no-")) {
      f = FindFlag(spec, name.substr(3));
      if (f != nullptr && !f->negatable) f = nullptr;
      negated = f != nullptr;
    }
    if (f == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag --", Excerpt(name), " for '",
                                                     spec.name, "'", FlagSuggestion(spec, name),
                                                     " (see --help for its flags)"));
    }
    if (f->value_name.empty()) {
      if (inline_value.has_value()) {
        return absl::InvalidArgumentError(
            absl::StrCat("--", f->name, " is a switch and takes no value"));
      }
      out.switches[f->name] = !negated;
      continue;
    }
    if (inline_value.has_value()) {
      out.values[f->name] = *inline_value;
      out.all_values[f->name].push_back(*inline_value);
    } else if (i + 1 < args.size()) {
      out.values[f->name] = args[++i];
      out.all_values[f->name].push_back(args[i]);
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("--", f->name, " needs a value (", f->value_name, ")"));
    }
  }
  if (out.help) return out;
  size_t required = 0;
  for (const PositionalSpec& p : spec.positionals) required += p.required ? 1 : 0;
  if (out.positionals.size() < required) {
    std::vector<std::string> names, missing;
    for (size_t k = 0; k < spec.positionals.size(); ++k) {
      if (!spec.positionals[k].required) continue;
      names.push_back(spec.positionals[k].name);
      if (k >= out.positionals.size()) missing.push_back(spec.positionals[k].name);
    }
    return absl::InvalidArgumentError(
        required == 1
            ? absl::StrCat("'", spec.name, "' needs a ", names.front(), " argument (see --help)")
            : absl::StrCat("'", spec.name, "' needs ", required, " arguments (",
                           absl::StrJoin(names, " "), "); missing: ",
                           absl::StrJoin(missing, ", "), " (see --help)"));
  }
  if (out.positionals.size() > spec.positionals.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("unexpected argument '", Excerpt(out.positionals[spec.positionals.size()]),
                     "' for '", spec.name, "' (see --help)"));
  }
  return out;
}

absl::StatusOr<int64_t> ParseInteger(const std::string& source, const std::string& value) {
  int64_t v = 0;
  if (absl::SimpleAtoi(value, &v)) return v;
  const size_t sign = !value.empty() && (value[0] == '-' || value[0] == '+') ? 1 : 0;
  if (value.size() > sign && std::all_of(value.begin() + static_cast<long>(sign), value.end(),
                                         [](char c) { return absl::ascii_isdigit(
                                                          static_cast<unsigned char>(c)); })) {
    return absl::InvalidArgumentError(absl::StrCat(
        source, ": ", Excerpt(value), " is out of range (an integer of 64 bits, ",
        std::numeric_limits<int64_t>::min(), "..", std::numeric_limits<int64_t>::max(), ")"));
  }
  return absl::InvalidArgumentError(
      absl::StrCat(source, " needs an integer, got '", Excerpt(value), "'"));
}

absl::StatusOr<int64_t> ParseIntFlag(const std::string& flag, const std::string& value) {
  return ParseInteger(absl::StrCat("--", flag), value);
}

absl::StatusOr<double> ParseDoubleFlag(const std::string& flag, const std::string& value) {
  double v = 0;
  if (!absl::SimpleAtod(value, &v) || !std::isfinite(v)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, " needs a number, got '", Excerpt(value), "'"));
  }
  return v;
}

std::string HelpText(const std::string& program, const CommandSpec& spec) {
  std::string usage = absl::StrCat("usage: ", program, " ", spec.name);
  for (const PositionalSpec& p : spec.positionals) {
    absl::StrAppend(&usage, p.required ? " <" : " [<", p.name, p.required ? ">" : ">]");
  }
  if (!spec.flags.empty()) absl::StrAppend(&usage, " [flags]");
  std::string out = absl::StrCat(usage, "\n\n", spec.description, "\n");
  if (!spec.positionals.empty()) {
    out += "\narguments:\n";
    for (const PositionalSpec& p : spec.positionals) {
      absl::StrAppendFormat(&out, "  %-26s %s\n", p.name, p.help);
    }
  }
  out += "\nflags:\n";
  for (const FlagSpec& f : spec.flags) {
    std::string left = absl::StrCat("--", f.name);
    if (f.short_name != '\0') left = absl::StrCat("-", std::string(1, f.short_name), ", ", left);
    if (!f.value_name.empty()) absl::StrAppend(&left, " ", f.value_name);
    if (f.negatable) absl::StrAppend(&left, " / --no-", f.name);
    std::string help = f.help;
    if (!f.default_value.empty()) absl::StrAppend(&help, " (default: ", f.default_value, ")");
    absl::StrAppendFormat(&out, "  %-26s %s\n", left, help);
  }
  absl::StrAppendFormat(&out, "  %-26s %s\n", "-h, --help", "show this help");
  return out;
}

}  // namespace libreyolo::cli
