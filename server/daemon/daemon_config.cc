#include "server/daemon/daemon_config.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <optional>
#include <set>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace libreyolo::daemon {
namespace {

// ---- YAML -----------------------------------------------------------------------------------

// A key's setter: parses `node` (found at `key_path`) into the config.
using Setter = std::function<absl::Status(const YAML::Node& node, const std::string& key_path)>;
struct Key {
  const char* name;
  Setter set;
  std::vector<Key> children;  // a section's keys (`set` then parses the mapping)
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
          key_path, item.first,
          absl::StrCat("unknown key (known keys of ", what, ": ", absl::StrJoin(names, ", "), ")"));
    }
    if (absl::Status status = key->set(item.second, key_path); !status.ok()) return status;
  }
  return absl::OkStatus();
}

template <typename Int>
Key IntKey(const char* name, Int* field) {
  return {name,
          [field](const YAML::Node& n, const std::string& p) { return ParseInt(n, p, field); },
          {}};
}
Key BoolKey(const char* name, bool* field) {
  return {name,
          [field](const YAML::Node& n, const std::string& p) { return ParseBool(n, p, field); },
          {}};
}
Key StringKey(const char* name, std::string* field) {
  return {name,
          [field](const YAML::Node& n, const std::string& p) { return ParseString(n, p, field); },
          {}};
}
Key ListKey(const char* name, std::vector<std::string>* field) {
  return {name, [field](const YAML::Node& n, const std::string& p) {
            return ParseStringList(n, p, field);
          },
          {}};
}

Key Section(const char* name, std::vector<Key> keys) {
  Key key{name, nullptr, std::move(keys)};
  key.set = [name, children = key.children](const YAML::Node& n, const std::string&) {
    return ParseMapping(n, name, children);
  };
  return key;
}

// Every key of the YAML file, bound to `config`: the one list of the file's keys.
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
      StringKey("tokens_file", &config->tokens_file),
      ListKey("admins", &config->admins),
      BoolKey("insecure_tcp", &config->insecure_tcp),
      BoolKey("allow_local_paths", &config->allow_local_paths),
      {"unix_socket_mode",
       [config](const YAML::Node& n, const std::string& p) {
         return ParseModeNode(n, p, &config->unix_socket_mode);
       },
       {}},
      Section("limits",
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
              }),
      Section("retention",
              {
                  IntKey("max_age_hours", &retention.max_age_hours),
                  IntKey("max_jobs", &retention.max_jobs),
              }),
      StringKey("metrics_textfile", &config->metrics_textfile),
      IntKey("drain_timeout_s", &config->drain_timeout_s),
      IntKey("cpu_threads", &config->cpu_threads),
      IntKey("cancel_grace_s", &config->cancel_grace_s),
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

// ---- Flags ----------------------------------------------------------------------------------

// Applies a flag's value to the config (`value` is "true" for a switch given alone).
using FlagSetter = std::function<absl::Status(absl::string_view flag, absl::string_view value,
                                              DaemonConfig* config)>;

struct Flag {
  const char* name;   // without the leading "--"
  const char* value;  // placeholder in --help; nullptr for a switch
  const char* help;
  const char* key;    // the config file's key it overrides, or nullptr (--config, --help)
  FlagSetter apply;   // nullptr for --config and --help (handled by the parser)
  // A repeatable flag's list: its first use replaces the file's list, later uses append.
  std::vector<std::string> DaemonConfig::*list = nullptr;
  bool clearable = false;   // an empty value clears an optional file
};

absl::Status BadFlagValue(absl::string_view flag, absl::string_view value, const char* what) {
  return absl::InvalidArgumentError(
      absl::StrCat("--", flag, ": expected ", what, ", got '", value, "'"));
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

// Setters for a field reached from the config (member pointers keep the table declarative).
template <typename Int>
FlagSetter IntFlag(Int Limits::*field) {
  return [field](absl::string_view flag, absl::string_view value, DaemonConfig* c) {
    return FlagInt(flag, value, &(c->limits.*field));
  };
}
template <typename Int>
FlagSetter IntFlag(Int Retention::*field) {
  return [field](absl::string_view flag, absl::string_view value, DaemonConfig* c) {
    return FlagInt(flag, value, &(c->retention.*field));
  };
}
template <typename Int>
FlagSetter IntFlag(Int DaemonConfig::*field) {
  return [field](absl::string_view flag, absl::string_view value, DaemonConfig* c) {
    return FlagInt(flag, value, &(c->*field));
  };
}
FlagSetter StringFlag(std::string DaemonConfig::*field) {
  return [field](absl::string_view, absl::string_view value, DaemonConfig* c) {
    c->*field = std::string(value);
    return absl::OkStatus();
  };
}
FlagSetter TlsFlag(std::string TlsConfig::*field) {
  return [field](absl::string_view, absl::string_view value, DaemonConfig* c) {
    c->tls.*field = std::string(value);
    return absl::OkStatus();
  };
}
FlagSetter ListFlag(std::vector<std::string> DaemonConfig::*field) {
  return [field](absl::string_view, absl::string_view value, DaemonConfig* c) {
    (c->*field).emplace_back(value);
    return absl::OkStatus();
  };
}
template <typename Owner>
FlagSetter BoolFlag(Owner* (*owner)(DaemonConfig*), bool Owner::*field) {
  return [owner, field](absl::string_view flag, absl::string_view value, DaemonConfig* c) {
    if (!absl::SimpleAtob(value, &(owner(c)->*field))) {
      return BadFlagValue(flag, value, "true or false");
    }
    return absl::OkStatus();
  };
}
DaemonConfig* Self(DaemonConfig* c) { return c; }
TlsConfig* Tls(DaemonConfig* c) { return &c->tls; }

// The one table of flags, in --help order. Every key of the config file has one
// (DaemonConfigKeyPaths; a test holds this).
const std::vector<Flag>& Flags() {
  static const std::vector<Flag> flags = {
      {"config", "FILE", "YAML configuration file; flags override its keys", nullptr, nullptr},
      {"listen", "ADDR",
       "listen address, repeatable: unix:/path, tcp:HOST:PORT or HOST:PORT ([::1]:PORT for "
       "IPv6); replaces the file's list",
       "listen", ListFlag(&DaemonConfig::listen), &DaemonConfig::listen},
      {"state-dir", "DIR", "job records and event logs; one daemon per state dir (it is locked)",
       "state_dir", StringFlag(&DaemonConfig::state_dir)},
      {"store-dir", "DIR", "job artifacts", "store_dir", StringFlag(&DaemonConfig::store_dir)},
      {"models-dir", "DIR", "weights files callers may name", "models_dir",
       StringFlag(&DaemonConfig::models_dir)},
      {"datasets-dir", "DIR", "datasets callers may name", "datasets_dir",
       StringFlag(&DaemonConfig::datasets_dir)},
      {"images-dir", "DIR", "images callers may name", "images_dir",
       StringFlag(&DaemonConfig::images_dir)},
      {"device", "D",
       "device to serve, repeatable: cpu or a CUDA index (0, 1, ...); cpu:1, cpu:2, ... add "
       "CPU slots (each its own engine worker); default every CUDA device, and cpu",
       "devices", ListFlag(&DaemonConfig::devices), &DaemonConfig::devices},
      {"tls-cert", "FILE", "PEM server certificate chain; enables TLS on TCP", "tls.cert",
       TlsFlag(&TlsConfig::cert_file), nullptr, true},
      {"tls-key", "FILE", "PEM private key of --tls-cert", "tls.key",
       TlsFlag(&TlsConfig::key_file), nullptr, true},
      {"tls-client-ca", "FILE", "PEM CA that signs client certificates", "tls.client_ca",
       TlsFlag(&TlsConfig::client_ca_file), nullptr, true},
      {"require-client-cert", nullptr,
       "refuse TLS clients without a certificate signed by --tls-client-ca",
       "tls.require_client_cert", BoolFlag(&Tls, &TlsConfig::require_client_cert)},
      {"tokens-file", "FILE",
       "bearer tokens, one '<token> <user> [admin]' per line, mode 600; required with TCP; "
       "re-read on SIGHUP",
       "tokens_file", StringFlag(&DaemonConfig::tokens_file), nullptr, true},
      {"admin", "USER", "user with admin rights, repeatable; replaces the file's list", "admins",
       ListFlag(&DaemonConfig::admins), &DaemonConfig::admins},
      {"insecure-tcp", nullptr, "allow TCP without TLS (loopback tests, trusted networks)",
       "insecure_tcp", BoolFlag(&Self, &DaemonConfig::insecure_tcp)},
      {"allow-local-paths", nullptr,
       "private daemon: callers with the daemon's uid on the Unix socket may name their own "
       "paths",
       "allow_local_paths", BoolFlag(&Self, &DaemonConfig::allow_local_paths)},
      {"unix-socket-mode", "OCTAL", "permissions of the Unix socket, default 0660",
       "unix_socket_mode",
       [](absl::string_view flag, absl::string_view value, DaemonConfig* c) {
         absl::StatusOr<int> mode = ParseMode(value);
         if (!mode.ok()) return BadFlagValue(flag, value, "an octal mode such as 0660");
         c->unix_socket_mode = *mode;
         return absl::OkStatus();
       }},
      {"max-queue-length", "N", "queued jobs per device", "limits.max_queue_length",
       IntFlag(&Limits::max_queue_length)},
      {"max-jobs-per-user", "N", "queued + running jobs per user", "limits.max_jobs_per_user",
       IntFlag(&Limits::max_jobs_per_user)},
      {"max-steps", "N", "largest run: (warmup + steps) x cycles", "limits.max_steps",
       IntFlag(&Limits::max_steps)},
      {"max-runs", "N", "largest infer: warmup + runs", "limits.max_runs",
       IntFlag(&Limits::max_runs)},
      {"max-repeat", "N", "largest --repeat (trials of one job)", "limits.max_repeat",
       IntFlag(&Limits::max_repeat)},
      {"max-batch", "N", "largest batch a job may ask for", "limits.max_batch",
       IntFlag(&Limits::max_batch)},
      {"max-imgsz", "PIXELS", "largest image size a job may ask for", "limits.max_imgsz",
       IntFlag(&Limits::max_imgsz)},
      {"max-inline-image-bytes", "BYTES", "all inline images of one request together",
       "limits.max_inline_image_bytes", IntFlag(&Limits::max_inline_image_bytes)},
      {"max-artifact-bytes", "BYTES", "largest artifact a job may store",
       "limits.max_artifact_bytes", IntFlag(&Limits::max_artifact_bytes)},
      {"max-watchers", "N", "concurrent WatchJob streams", "limits.max_watchers",
       IntFlag(&Limits::max_watchers)},
      {"retention-max-age-hours", "HOURS", "finished jobs older than this are deleted; 0 = keep",
       "retention.max_age_hours", IntFlag(&Retention::max_age_hours)},
      {"retention-max-jobs", "N", "finished jobs kept at most, oldest go first; 0 = no cap",
       "retention.max_jobs", IntFlag(&Retention::max_jobs)},
      {"metrics-textfile", "FILE",
       "write Prometheus metrics there for node_exporter's textfile collector",
       "metrics_textfile", StringFlag(&DaemonConfig::metrics_textfile), nullptr, true},
      {"drain-timeout", "SECONDS",
       "on SIGTERM, how long a running job may take to stop, default 60", "drain_timeout_s",
       [](absl::string_view flag, absl::string_view value, DaemonConfig* c) {
         absl::string_view seconds = value;
         if (absl::EndsWith(seconds, "s")) seconds.remove_suffix(1);  // "90s" reads as 90
         return FlagInt(flag, seconds, &c->drain_timeout_s);
       }},
      {"threads", "N", "engine CPU threads for cpu jobs, 0 = all cores", "cpu_threads",
       IntFlag(&DaemonConfig::cpu_threads)},
      {"cancel-grace", "SECONDS",
       "after a cancel, how long an engine worker may take to stop before it is killed, "
       "default 30 (1..86400)",
       "cancel_grace_s", IntFlag(&DaemonConfig::cancel_grace_s)},
      {"help", nullptr, "print this help and exit", nullptr, nullptr},
  };
  return flags;
}

// ---- Validation helpers ---------------------------------------------------------------------

bool AllDigits(absl::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return absl::ascii_isdigit(static_cast<unsigned char>(c));
  });
}

// Empty when `path` is a regular file we can open, else why not.
std::string Readable(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::strerror(errno);
  struct stat info {};
  const bool regular = fstat(fd, &info) == 0 && S_ISREG(info.st_mode);
  close(fd);
  return regular ? "" : "not a regular file";
}

}  // namespace

absl::StatusOr<DaemonConfig> LoadDaemonConfig(const std::string& path) {
  if (struct stat info{}; stat(path.c_str(), &info) != 0 && errno == ENOENT) {
    return absl::NotFoundError(absl::StrCat("config file ", path, " not found"));
  }
  if (const std::string error = Readable(path); !error.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("config file ", path, " cannot be read: ", error));
  }
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  YAML::Node root;
  try {
    root = YAML::Load(text.str());
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

absl::StatusOr<FlagParseResult> ApplyDaemonFlags(const std::vector<std::string>& args,
                                                 DaemonConfig* config) {
  FlagParseResult result;
  std::set<std::string> lists_replaced;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "-h") {
      result.help = true;
      continue;
    }
    if (!absl::StartsWith(arg, "--")) {
      const size_t eq = arg.find('=');
      if (eq != std::string::npos && eq > 0) {
        const std::string flag = absl::StrReplaceAll(arg.substr(0, eq), {{"_", "-"}, {".", "-"}});
        return absl::InvalidArgumentError(
            absl::StrCat("unexpected argument '", arg, "': flags start with --, e.g. --", flag, "=",
                         arg.substr(eq + 1), " (see libreyolod --help)"));
      }
      return absl::InvalidArgumentError(absl::StrCat(
          "unexpected argument '", arg, "': libreyolod takes only flags (see libreyolod --help)"));
    }
    absl::string_view name = absl::string_view(arg).substr(2);
    std::optional<std::string> value;
    if (const size_t eq = name.find('='); eq != absl::string_view::npos) {
      value = std::string(name.substr(eq + 1));
      name = name.substr(0, eq);
    }
    const Flag* flag = nullptr;
    for (const Flag& candidate : Flags()) {
      if (name == candidate.name) flag = &candidate;
    }
    if (flag == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown flag --", name, " (see libreyolod --help)"));
    }
    if (!value.has_value()) {
      if (flag->value == nullptr) {
        value = "true";  // a switch given alone
      } else if (i + 1 < args.size()) {
        value = args[++i];
      } else {
        return absl::InvalidArgumentError(
            absl::StrCat("--", name, " needs a value (--", name, " ", flag->value, ")"));
      }
    }
    // Optional files may be cleared with an empty value (--tls-cert= turns the file's TLS off).
    if (flag->value != nullptr && value->empty() && !flag->clearable) {
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
    if (flag->list != nullptr && lists_replaced.insert(std::string(name)).second) {
      (config->*(flag->list)).clear();  // the first use replaces the file's list
    }
    if (absl::Status status = flag->apply(name, *value, config); !status.ok()) {
      return status;
    }
  }
  return result;
}

std::vector<std::string> DaemonConfigKeyPaths() {
  DaemonConfig scratch;
  std::vector<std::string> paths;
  CollectKeyPaths(ConfigKeys(&scratch), "", &paths);
  return paths;
}

std::string DaemonFlagForKey(const std::string& key_path) {
  for (const Flag& flag : Flags()) {
    if (flag.key != nullptr && key_path == flag.key) return absl::StrCat("--", flag.name);
  }
  return "";
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
  constexpr size_t kIndent = 28;
  constexpr size_t kWidth = 90;
  for (const Flag& flag : Flags()) {
    std::string line = absl::StrCat("  --", flag.name);
    if (flag.value != nullptr) absl::StrAppend(&line, " ", flag.value);
    if (line.size() + 2 > kIndent) {
      absl::StrAppend(&help, line, "\n");
      line.clear();
    }
    line.resize(kIndent, ' ');
    const std::string description =
        flag.key == nullptr ? flag.help : absl::StrCat(flag.help, " (", flag.key, ")");
    // The description, wrapped at kWidth columns under the indent.
    bool first_word = true;
    for (absl::string_view word : absl::StrSplit(description, ' ', absl::SkipEmpty())) {
      if (!first_word && line.size() + 1 + word.size() > kWidth) {
        absl::StrAppend(&help, line, "\n");
        line.assign(kIndent, ' ');
        first_word = true;
      }
      absl::StrAppend(&line, first_word ? "" : " ", word);
      first_word = false;
    }
    absl::StrAppend(&help, line, "\n");
  }
  absl::StrAppend(
      &help,
      "\n"
      "Security: TCP listeners need TLS (--tls-cert/--tls-key) or --insecure-tcp, and a\n"
      "tokens file (--tokens-file); TCP callers send 'authorization: Bearer <token>'.\n"
      "Unix-socket callers are identified by their uid (uid 0 and --admin users are\n"
      "admins).\n");
  return help;
}

std::vector<std::string> MergeReloadable(const DaemonConfig& running, const DaemonConfig& loaded,
                                         DaemonConfig* next) {
  *next = running;
  next->tokens_file = loaded.tokens_file;
  next->admins = loaded.admins;
  next->limits = loaded.limits;
  next->retention = loaded.retention;
  next->drain_timeout_s = loaded.drain_timeout_s;
  next->metrics_textfile = loaded.metrics_textfile;
  std::vector<std::string> kept;
  auto check = [&kept](const char* key, bool same) {
    if (!same) kept.push_back(absl::StrCat(key, " changed: restart libreyolod to apply it"));
  };
  check("listen", running.listen == loaded.listen);
  check("state_dir", running.state_dir == loaded.state_dir);
  check("store_dir", running.store_dir == loaded.store_dir);
  check("models_dir", running.models_dir == loaded.models_dir);
  check("datasets_dir", running.datasets_dir == loaded.datasets_dir);
  check("images_dir", running.images_dir == loaded.images_dir);
  check("devices", running.devices == loaded.devices);
  check("tls", running.tls.cert_file == loaded.tls.cert_file &&
                   running.tls.key_file == loaded.tls.key_file &&
                   running.tls.client_ca_file == loaded.tls.client_ca_file &&
                   running.tls.require_client_cert == loaded.tls.require_client_cert);
  check("insecure_tcp", running.insecure_tcp == loaded.insecure_tcp);
  check("allow_local_paths", running.allow_local_paths == loaded.allow_local_paths);
  check("unix_socket_mode", running.unix_socket_mode == loaded.unix_socket_mode);
  check("cpu_threads", running.cpu_threads == loaded.cpu_threads);
  check("cancel_grace_s", running.cancel_grace_s == loaded.cancel_grace_s);
  return kept;
}

absl::StatusOr<DaemonConfig> LoadConfigFromArgs(const std::vector<std::string>& args) {
  DaemonConfig scratch;
  absl::StatusOr<FlagParseResult> flags = ApplyDaemonFlags(args, &scratch);
  if (!flags.ok()) return flags.status();
  DaemonConfig config;
  if (!flags->config_file.empty()) {
    absl::StatusOr<DaemonConfig> loaded = LoadDaemonConfig(flags->config_file);
    if (!loaded.ok()) return loaded.status();
    config = *std::move(loaded);
  }
  // Flags win over the file.
  if (absl::StatusOr<FlagParseResult> again = ApplyDaemonFlags(args, &config); !again.ok()) {
    return again.status();
  }
  if (absl::Status valid = ValidateDaemonConfig(config); !valid.ok()) return valid;
  return config;
}

absl::StatusOr<ListenAddress> ParseListenAddress(const std::string& address) {
  auto bad = [&address]() {
    return absl::InvalidArgumentError(
        absl::StrCat("listen '", address,
                     "': expected unix:/path, tcp:HOST:PORT or HOST:PORT ([::1]:PORT for IPv6)"));
  };
  ListenAddress result;
  absl::string_view rest = address;
  if (absl::StartsWith(rest, "unix:")) {
    rest.remove_prefix(5);
    if (rest.empty()) return bad();
    result.unix_socket = true;
    result.target = std::string(rest);
    return result;
  }
  if (absl::StartsWith(rest, "tcp:")) rest.remove_prefix(4);
  const size_t colon = rest.rfind(':');
  if (colon == absl::string_view::npos || colon == 0) return bad();
  const absl::string_view host = rest.substr(0, colon);
  const absl::string_view port = rest.substr(colon + 1);
  int port_number = 0;
  if (!AllDigits(port) || !absl::SimpleAtoi(port, &port_number) || port_number > 65535) {
    return bad();
  }
  const bool bracketed = absl::StartsWith(host, "[") && absl::EndsWith(host, "]");
  if (!bracketed && host.find(':') != absl::string_view::npos) return bad();  // bare IPv6
  if (host.find('/') != absl::string_view::npos) return bad();
  result.target = std::string(rest);
  return result;
}

absl::Status ValidateDaemonConfig(const DaemonConfig& config) {
  std::vector<std::string> problems;
  if (config.listen.empty()) {
    problems.push_back(
        "no listen address: set `listen` in the config file or pass --listen (e.g. --listen "
        "unix:/run/libreyolod/libreyolod.sock)");
  }
  bool tcp = false;
  std::string first_tcp;
  for (const std::string& address : config.listen) {
    absl::StatusOr<ListenAddress> parsed = ParseListenAddress(address);
    if (!parsed.ok()) {
      problems.emplace_back(parsed.status().message());
    } else if (!parsed->unix_socket && !tcp) {
      tcp = true;
      first_tcp = address;
    }
  }
  const TlsConfig& tls = config.tls;
  const bool has_tls = !tls.cert_file.empty();
  if (!tls.cert_file.empty() && tls.key_file.empty()) {
    problems.push_back("tls.cert is set but tls.key is not: set tls.key (--tls-key)");
  }
  if (tls.cert_file.empty() && !tls.key_file.empty()) {
    problems.push_back("tls.key is set but tls.cert is not: set tls.cert (--tls-cert)");
  }
  if (!tls.client_ca_file.empty() && !has_tls) {
    problems.push_back(
        "tls.client_ca is set without tls.cert: client certificates need TLS, set "
        "tls.cert/tls.key (--tls-cert/--tls-key)");
  }
  if (tls.require_client_cert && tls.client_ca_file.empty()) {
    problems.push_back(
        "tls.require_client_cert needs tls.client_ca (--tls-client-ca) to verify client "
        "certificates");
  }
  const std::pair<const char*, const std::string*> tls_files[] = {
      {"tls.cert", &tls.cert_file},
      {"tls.key", &tls.key_file},
      {"tls.client_ca", &tls.client_ca_file}};
  for (const auto& [key, file] : tls_files) {
    if (file->empty()) continue;
    if (const std::string error = Readable(*file); !error.empty()) {
      problems.push_back(absl::StrCat(key, " ", *file, ": cannot read: ", error));
    }
  }
  if (tcp && !has_tls && !config.insecure_tcp) {
    problems.push_back(absl::StrCat("listen ", first_tcp,
                                    " without TLS: set tls.cert/tls.key, or --insecure-tcp for a "
                                    "trusted network"));
  }
  if (tcp && config.tokens_file.empty()) {
    problems.push_back(absl::StrCat("listen ", first_tcp,
                                    ": TCP callers authenticate with bearer tokens: set "
                                    "tokens_file (--tokens-file)"));
  }
  const std::pair<const char*, const std::string*> dirs[] = {
      {"state_dir", &config.state_dir},   {"store_dir", &config.store_dir},
      {"models_dir", &config.models_dir}, {"datasets_dir", &config.datasets_dir},
      {"images_dir", &config.images_dir},
  };
  for (const auto& [key, dir] : dirs) {
    if (dir->empty()) {
      problems.push_back(
          absl::StrCat(key, " is empty: set it (--", absl::StrReplaceAll(key, {{"_", "-"}}), ")"));
    }
  }
  std::set<std::string> devices;
  for (const std::string& device : config.devices) {
    int slot = 0;
    const bool cpu_slot = absl::StartsWith(device, "cpu:") && AllDigits(device.substr(4)) &&
                          absl::SimpleAtoi(device.substr(4), &slot) && slot >= 1 && slot <= 63;
    if (device != "cpu" && !cpu_slot && !AllDigits(device)) {
      problems.push_back(absl::StrCat("devices: '", device,
                                      "' is not a device: use cpu, a CUDA index such as 0, or "
                                      "cpu:N (N = 1..63) for a further CPU slot"));
    } else if (!devices.insert(device).second) {
      problems.push_back(absl::StrCat("devices: '", device, "' is listed twice"));
    }
  }
  for (const std::string& admin : config.admins) {
    if (admin.empty()) problems.push_back("admins: an empty user name");
  }
  if (config.unix_socket_mode < 0 || config.unix_socket_mode > 0777) {
    problems.push_back("unix_socket_mode: expected an octal mode between 0 and 0777");
  } else if ((config.unix_socket_mode & 0600) != 0600) {
    problems.push_back(
        "unix_socket_mode: the owner needs read and write permission (e.g. 0600 or 0660)");
  }
  if (config.cancel_grace_s < 1 || config.cancel_grace_s > 86400) {
    problems.push_back(absl::StrCat("cancel_grace_s (--cancel-grace): expected 1..86400 seconds, got ",
                                    config.cancel_grace_s));
  }
  const Limits& limits = config.limits;
  const std::pair<const char*, int64_t> positive[] = {
      {"limits.max_queue_length (--max-queue-length)", limits.max_queue_length},
      {"limits.max_jobs_per_user (--max-jobs-per-user)", limits.max_jobs_per_user},
      {"limits.max_steps (--max-steps)", limits.max_steps},
      {"limits.max_runs (--max-runs)", limits.max_runs},
      {"limits.max_repeat", limits.max_repeat},
      {"limits.max_batch (--max-batch)", limits.max_batch},
      {"limits.max_imgsz", limits.max_imgsz},
      {"limits.max_inline_image_bytes", limits.max_inline_image_bytes},
      {"limits.max_artifact_bytes", limits.max_artifact_bytes},
      {"limits.max_watchers", limits.max_watchers},
  };
  for (const auto& [key, value] : positive) {
    if (value <= 0) problems.push_back(absl::StrCat(key, " must be positive, got ", value));
  }
  const std::pair<const char*, int64_t> non_negative[] = {
      {"retention.max_age_hours", config.retention.max_age_hours},
      {"retention.max_jobs", config.retention.max_jobs},
      {"drain_timeout_s (--drain-timeout)", config.drain_timeout_s},
      {"cpu_threads (--threads)", config.cpu_threads},
  };
  for (const auto& [key, value] : non_negative) {
    if (value < 0) {
      problems.push_back(absl::StrCat(key, " must be 0 or more, got ", value));
    }
  }
  if (problems.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrJoin(problems, "; "));
}

}  // namespace libreyolo::daemon
