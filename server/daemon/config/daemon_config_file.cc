// libreyolod's YAML configuration file: the one tree of its keys (each top-level key marked
// reloadable or restart-only), parsing it into a DaemonConfig, and a reload's merge.
#include <sys/stat.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <functional>
#include <limits>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "common/render/terminal_text.h"
#include "server/daemon/config/daemon_config.h"
#include "server/daemon/config/daemon_config_internal.h"

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

// A key's setter: parses `node` (found at `key_path`) into the config.
using Setter = std::function<absl::Status(const YAML::Node& node, const std::string& key_path)>;
// Whether SIGHUP applies a key to the running daemon, or only a restart does.
enum class Reload { kRestart, kLive };

struct Key {
  const char* name = "";
  Setter set;
  std::vector<Key> children;  // a section's keys (`set` then parses the mapping)
  Reload reload = Reload::kRestart;  // marked on top-level keys and sections (Live below)
  // A leaf's bound field, compared with / copied from the same key bound to another config.
  std::function<bool(const Key& other)> same;
  std::function<void(const Key& other)> take;
  const void* field = nullptr;
};

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

absl::Status ParseMapping(const YAML::Node& node, const std::string& prefix,
                          const std::vector<Key>& keys) {
  const std::string what = prefix.empty() ? "the configuration" : prefix;
  if (node.IsNull()) return absl::OkStatus();  // an empty section keeps the defaults
  if (!node.IsMap()) return Expected(what, node, "a mapping of keys to values");
  std::set<std::string> seen;
  for (const auto& item : node) {
    if (!item.first.IsScalar()) return Expected(what, item.first, "string keys");
    const std::string name = item.first.Scalar();
    const std::string key_path = prefix.empty() ? name : absl::StrCat(prefix, ".", name);
    if (!seen.insert(name).second) {
      return KeyError(key_path, item.first, "duplicate key");
    }
    const Key* key = nullptr;
    for (const Key& candidate : keys) {
      if (name == candidate.name) key = &candidate;
    }
    if (key == nullptr) {
      std::vector<std::string> names;
      for (const Key& candidate : keys) names.push_back(candidate.name);
      return KeyError(
          Excerpt(key_path), item.first,
          absl::StrCat("unknown key (known keys of ", what, ": ", absl::StrJoin(names, ", "), ")"));
    }
    if (absl::Status status = key->set(item.second, key_path); !status.ok()) return status;
  }
  return absl::OkStatus();
}

// A leaf bound to `field`, parsed by `parse`.
template <typename T, typename Parse>
Key Leaf(const char* name, T* field, Parse parse) {
  Key key;
  key.name = name;
  key.set = [field, parse](const YAML::Node& n, const std::string& p) {
    return parse(n, p, field);
  };
  key.field = field;
  key.same = [field](const Key& other) { return *field == *static_cast<const T*>(other.field); };
  key.take = [field](const Key& other) { *field = *static_cast<const T*>(other.field); };
  return key;
}

template <typename Int>
Key IntKey(const char* name, Int* field) {
  return Leaf(name, field, [](const YAML::Node& n, const std::string& p, Int* f) {
    return ParseInt(n, p, f);
  });
}
Key BoolKey(const char* name, bool* field) { return Leaf(name, field, ParseBool); }
Key StringKey(const char* name, std::string* field) { return Leaf(name, field, ParseString); }
Key ListKey(const char* name, std::vector<std::string>* field) {
  return Leaf(name, field, ParseStringList);
}
Key ModeKey(const char* name, int* field) { return Leaf(name, field, ParseModeNode); }

Key Section(const char* name, std::vector<Key> keys) {
  Key key;
  key.name = name;
  key.children = std::move(keys);
  key.set = [name, children = key.children](const YAML::Node& n, const std::string&) {
    return ParseMapping(n, name, children);
  };
  return key;
}

// A key (or a whole section) that a reload applies without a restart.
Key Live(Key key) {
  key.reload = Reload::kLive;
  return key;
}

// Every key of the YAML file, bound to `config`: the one list of the file's keys, and of which
// of them a reload (SIGHUP) applies (Live); every other key needs a restart.
std::vector<Key> ConfigKeys(DaemonConfig* config) {
  TlsConfig& tls = config->tls;
  Limits& limits = config->limits;
  Retention& retention = config->retention;
  return {
      ListKey("listen", &config->listen),
      StringKey("state_dir", &config->state_dir),
      StringKey("store_dir", &config->store_dir),
      StringKey("models_dir", &config->models_dir),
      StringKey("datasets_dir", &config->datasets_dir),
      StringKey("images_dir", &config->images_dir),
      ListKey("devices", &config->devices),
      Section("tls",
              {
                  StringKey("cert", &tls.cert_file),
                  StringKey("key", &tls.key_file),
                  StringKey("client_ca", &tls.client_ca_file),
                  BoolKey("require_client_cert", &tls.require_client_cert),
              }),
      Live(StringKey("tokens_file", &config->tokens_file)),
      Live(ListKey("admins", &config->admins)),
      BoolKey("insecure_tcp", &config->insecure_tcp),
      BoolKey("allow_local_paths", &config->allow_local_paths),
      ModeKey("unix_socket_mode", &config->unix_socket_mode),
      Live(Section("limits",
                   {
                       IntKey("max_queue_length", &limits.max_queue_length),
                       IntKey("max_jobs_per_user", &limits.max_jobs_per_user),
                       IntKey("max_steps", &limits.max_steps),
                       IntKey("max_runs", &limits.max_runs),
                       IntKey("max_repeat", &limits.max_repeat),
                       IntKey("max_batch", &limits.max_batch),
                       IntKey("max_imgsz", &limits.max_imgsz),
                       IntKey("max_inline_image_bytes", &limits.max_inline_image_bytes),
                       IntKey("max_artifact_bytes", &limits.max_artifact_bytes),
                       IntKey("max_watchers", &limits.max_watchers),
                       IntKey("max_watchers_per_user", &limits.max_watchers_per_user),
                       IntKey("max_reads", &limits.max_reads),
                       IntKey("max_reads_per_user", &limits.max_reads_per_user),
                       IntKey("max_downloads", &limits.max_downloads),
                       IntKey("max_downloads_per_user", &limits.max_downloads_per_user),
                       IntKey("max_job_seconds", &limits.max_job_seconds),
                   })),
      Live(Section("retention",
                   {
                       IntKey("max_age_hours", &retention.max_age_hours),
                       IntKey("max_jobs", &retention.max_jobs),
                   })),
      Live(StringKey("metrics_textfile", &config->metrics_textfile)),
      Live(IntKey("drain_timeout_s", &config->drain_timeout_s)),
      IntKey("cpu_threads", &config->cpu_threads),
      IntKey("cpu_slots", &config->cpu_slots),
      IntKey("cancel_grace_s", &config->cancel_grace_s),
      IntKey("connection_idle_timeout_s", &config->connection_idle_timeout_s),
      IntKey("handshake_timeout_s", &config->handshake_timeout_s),
      Live(IntKey("max_connections", &config->max_connections)),
      Live(IntKey("max_connections_per_peer", &config->max_connections_per_peer)),
      Live(IntKey("reserved_descriptors", &config->reserved_descriptors)),
      Live(IntKey("progress_timeout_s", &config->progress_timeout_s)),
      StringKey("lease_dir", &config->lease_dir),
      StringKey("worker_binary", &config->worker_binary),
      StringKey("attach_dir", &config->attach_dir),
      BoolKey("attach_dynolog_compat", &config->attach_dynolog_compat),
      StringKey("python_tool", &config->python_tool),
  };
}

absl::Status ParseConfig(const YAML::Node& root, DaemonConfig* config) {
  return ParseMapping(root, "", ConfigKeys(config));
}

void CollectKeyPaths(const std::vector<Key>& keys, const std::string& prefix,
                     std::vector<std::string>* out) {
  for (const Key& key : keys) {
    const std::string path = prefix.empty() ? key.name : absl::StrCat(prefix, ".", key.name);
    if (key.children.empty()) {
      out->push_back(path);
    } else {
      CollectKeyPaths(key.children, path, out);
    }
  }
}

bool Same(const Key& a, const Key& b) {
  if (a.children.empty()) return a.same(b);
  for (size_t i = 0; i < a.children.size(); ++i) {
    if (!Same(a.children[i], b.children[i])) return false;
  }
  return true;
}

void Take(const Key& to, const Key& from) {
  if (to.children.empty()) return to.take(from);
  for (size_t i = 0; i < to.children.size(); ++i) Take(to.children[i], from.children[i]);
}

}  // namespace

absl::StatusOr<DaemonConfig> LoadDaemonConfig(const std::string& path) {
  // Opened without blocking and refused unless a regular file (issue 40 A.7).
  absl::StatusOr<std::string> text = config_internal::ReadRegularFile(path, "config file");
  if (!text.ok()) return text.status();
  YAML::Node root;
  try {
    root = YAML::Load(*text);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("config file ", path, ": line ", e.mark.line + 1, ": ", e.msg));
  }
  DaemonConfig config;
  try {
    if (absl::Status status = ParseConfig(root, &config); !status.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("config file ", path, ": ", status.message()));
    }
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("config file ", path, ": ", e.what()));
  }
  return config;
}

std::vector<std::string> DaemonConfigKeyPaths() {
  DaemonConfig scratch;
  std::vector<std::string> paths;
  CollectKeyPaths(ConfigKeys(&scratch), "", &paths);
  return paths;
}

std::vector<std::string> ReloadableKeys() {
  DaemonConfig scratch;
  std::vector<std::string> names;
  for (const Key& key : ConfigKeys(&scratch)) {
    if (key.reload == Reload::kLive) names.push_back(key.name);
  }
  return names;
}

std::vector<std::string> MergeReloadable(const DaemonConfig& running, const DaemonConfig& loaded,
                                         DaemonConfig* next) {
  *next = running;
  DaemonConfig from = loaded;
  const std::vector<Key> to_keys = ConfigKeys(next);
  const std::vector<Key> from_keys = ConfigKeys(&from);  // the same tree, bound to `from`
  std::vector<std::string> kept;
  for (size_t i = 0; i < to_keys.size(); ++i) {
    if (to_keys[i].reload == Reload::kLive) {
      Take(to_keys[i], from_keys[i]);
    } else if (!Same(to_keys[i], from_keys[i])) {
      kept.push_back(absl::StrCat(to_keys[i].name, " changed: restart libreyolod to apply it"));
    }
  }
  return kept;
}

}  // namespace libreyolo::daemon
