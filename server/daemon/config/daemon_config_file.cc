// libreyolod's YAML configuration file: parsing it into a DaemonConfig as the option rows say
// (daemon_options.cc: each key, its kind and where it lands), and a reload's merge.
#include <sys/stat.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <type_traits>
#include <variant>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "common/render/terminal_text.h"
#include "common/status/status_macros.h"
#include "server/daemon/config/daemon_config.h"
#include "server/daemon/config/daemon_config_internal.h"
#include "server/daemon/config/daemon_options.h"
#include "server/daemon/security/regular_file.h"

namespace libreyolo::daemon {

namespace config_internal {

// A permission mode, always octal: 0660, "660", 0o660.
absl::StatusOr<int> ParseMode(absl::string_view text) {
  absl::string_view digits = text;
  if (absl::StartsWith(digits, "0o") || absl::StartsWith(digits, "0O")) digits.remove_prefix(2);
  if (digits.empty() || digits.size() > 4) return absl::InvalidArgumentError("");
  int mode = 0;
  for (const char c : digits) {
    if (c < '0' || c > '7') return absl::InvalidArgumentError("");
    mode = mode * 8 + (c - '0');
  }
  if (mode > 0777) return absl::InvalidArgumentError("");
  return mode;
}

}  // namespace config_internal

namespace {

using config_internal::ParseMode;

// ---- YAML -----------------------------------------------------------------------------------

// "limits.max_batch: expected an integer (line 12)".
absl::Status KeyError(const std::string& key_path, const YAML::Node& node,
                      absl::string_view message) {
  const YAML::Mark mark = node.Mark();
  const std::string line = mark.is_null() ? "" : absl::StrCat(" (line ", mark.line + 1, ")");
  return absl::InvalidArgumentError(absl::StrCat(key_path, ": ", message, line));
}

absl::Status Expected(const std::string& key_path, const YAML::Node& node, const char* what) {
  return KeyError(key_path, node, absl::StrCat("expected ", what));
}

// Integers are decimal whatever their spelling ("010" is ten; YAML 1.1 octal is not guessed).
template <typename Int>
absl::Status ParseInt(const YAML::Node& node, const std::string& key_path, Int* out) {
  int64_t value = 0;
  if (!node.IsScalar() || !absl::SimpleAtoi(node.Scalar(), &value)) {
    return Expected(key_path, node, "an integer");
  }
  if (value < std::numeric_limits<Int>::min() || value > std::numeric_limits<Int>::max()) {
    return KeyError(key_path, node, absl::StrCat(value, " is out of range"));
  }
  *out = static_cast<Int>(value);
  return absl::OkStatus();
}

absl::Status ParseBool(const YAML::Node& node, const std::string& key_path, bool* out) {
  bool value = false;
  if (!node.IsScalar() || !YAML::convert<bool>::decode(node, value)) {
    return Expected(key_path, node, "true or false");
  }
  *out = value;
  return absl::OkStatus();
}

// An empty value ("key:" with nothing after it) is the empty string.
absl::Status ParseString(const YAML::Node& node, const std::string& key_path, std::string* out) {
  if (node.IsNull()) {
    out->clear();
    return absl::OkStatus();
  }
  if (!node.IsScalar()) return Expected(key_path, node, "a string");
  *out = node.Scalar();
  return absl::OkStatus();
}

absl::Status ParseStringList(const YAML::Node& node, const std::string& key_path,
                             std::vector<std::string>* out) {
  if (node.IsNull()) {
    out->clear();
    return absl::OkStatus();
  }
  if (!node.IsSequence()) return Expected(key_path, node, "a list of strings");
  std::vector<std::string> values;
  for (size_t i = 0; i < node.size(); ++i) {
    const YAML::Node item = node[i];
    if (!item.IsScalar()) {
      return Expected(absl::StrCat(key_path, "[", i, "]"), item, "a string");
    }
    values.push_back(item.Scalar());
  }
  *out = std::move(values);
  return absl::OkStatus();
}

absl::Status ParseModeNode(const YAML::Node& node, const std::string& key_path, int* out) {
  if (!node.IsScalar()) return Expected(key_path, node, "an octal mode such as 0660");
  absl::StatusOr<int> mode = ParseMode(node.Scalar());
  if (!mode.ok()) return Expected(key_path, node, "an octal mode such as 0660");
  *out = *mode;
  return absl::OkStatus();
}

// A value of `option` at `key_path`, parsed into `config` as its kind says.
absl::Status ParseValue(const DaemonOption& option, const YAML::Node& node,
                        const std::string& key_path, DaemonConfig* config) {
  return std::visit(
      [&](auto at) -> absl::Status {
        auto* field = &at(*config);
        using T = std::remove_pointer_t<decltype(field)>;
        if constexpr (std::is_same_v<T, bool>) {
          return ParseBool(node, key_path, field);
        } else if constexpr (std::is_same_v<T, std::string>) {
          return ParseString(node, key_path, field);
        } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
          return ParseStringList(node, key_path, field);
        } else {
          if constexpr (std::is_same_v<T, int32_t>) {
            if (option.kind == OptionKind::kMode) return ParseModeNode(node, key_path, field);
          }
          return ParseInt(node, key_path, field);
        }
      },
      option.field);
}

// The names one level below `prefix` ("" = the top level), in the rows' order: the last part of
// an option's key, or a section's name.
std::vector<std::string> NamesUnder(const std::string& prefix) {
  std::vector<std::string> names;
  for (const DaemonOption& option : DaemonOptions()) {
    absl::string_view key = option.key;
    if (!prefix.empty()) {
      if (!absl::StartsWith(key, prefix) || key.substr(prefix.size(), 1) != ".") continue;
      key.remove_prefix(prefix.size() + 1);
    }
    std::string name(key.substr(0, key.find('.')));
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  return names;
}

// The mapping at `prefix` ("" = the file): each key an option (its row parses it) or a section.
absl::Status ParseMapping(const YAML::Node& node, const std::string& prefix,
                          DaemonConfig* config) {
  const std::string what = prefix.empty() ? "the configuration" : prefix;
  if (node.IsNull()) return absl::OkStatus();  // an empty section keeps the defaults
  if (!node.IsMap()) return Expected(what, node, "a mapping of keys to values");
  const std::vector<std::string> names = NamesUnder(prefix);
  std::set<std::string> seen;
  for (const auto& item : node) {
    if (!item.first.IsScalar()) return Expected(what, item.first, "string keys");
    const std::string name = item.first.Scalar();
    const std::string key_path = prefix.empty() ? name : absl::StrCat(prefix, ".", name);
    if (!seen.insert(name).second) {
      return KeyError(key_path, item.first, "duplicate key");
    }
    if (std::find(names.begin(), names.end(), name) == names.end()) {
      return KeyError(
          Excerpt(key_path), item.first,
          absl::StrCat("unknown key (known keys of ", what, ": ", absl::StrJoin(names, ", "), ")"));
    }
    const DaemonOption* option = FindDaemonOption(key_path);
    RETURN_IF_ERROR(option != nullptr ? ParseValue(*option, item.second, key_path, config)
                                      : ParseMapping(item.second, key_path, config));
  }
  return absl::OkStatus();
}

// The top-level key or section of an option ("limits" for limits.max_batch).
std::string TopLevel(const DaemonOption& option) {
  const absl::string_view key = option.key;
  return std::string(key.substr(0, key.find('.')));
}

}  // namespace

absl::StatusOr<DaemonConfig> LoadDaemonConfig(const std::string& path) {
  // Opened without blocking and refused unless a regular file (issue 40 A.7).
  ASSIGN_OR_RETURN(std::string text, ReadRegularFile(path, "config file"));
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("config file ", path, ": line ", e.mark.line + 1, ": ", e.msg));
  }
  DaemonConfig config;
  try {
    if (absl::Status status = ParseMapping(root, "", &config); !status.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("config file ", path, ": ", status.message()));
    }
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("config file ", path, ": ", e.what()));
  }
  return config;
}

std::vector<std::string> DaemonConfigKeyPaths() {
  std::vector<std::string> paths;
  for (const DaemonOption& option : DaemonOptions()) paths.emplace_back(option.key);
  return paths;
}

std::vector<std::string> ReloadableKeys() {
  std::vector<std::string> names;
  for (const DaemonOption& option : DaemonOptions()) {
    const std::string top = TopLevel(option);
    if (option.reload == Reload::kLive &&
        std::find(names.begin(), names.end(), top) == names.end()) {
      names.push_back(top);
    }
  }
  return names;
}

std::vector<std::string> MergeReloadable(const DaemonConfig& running, const DaemonConfig& loaded,
                                         DaemonConfig* next) {
  *next = running;
  std::vector<std::string> changed;  // top-level keys and sections, in the file's order
  for (const DaemonOption& option : DaemonOptions()) {
    if (option.reload == Reload::kLive) {
      CopyOption(option, loaded, next);
    } else if (!SameOption(option, running, loaded)) {
      const std::string top = TopLevel(option);
      if (std::find(changed.begin(), changed.end(), top) == changed.end()) changed.push_back(top);
    }
  }
  std::vector<std::string> kept;
  for (const std::string& top : changed) {
    kept.push_back(absl::StrCat(top, " changed: restart libreyolod to apply it"));
  }
  return kept;
}

}  // namespace libreyolo::daemon
