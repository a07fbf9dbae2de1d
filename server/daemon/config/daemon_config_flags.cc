// libreyolod's command-line flags: the one table (each overriding a key of the config file),
// applying them over a DaemonConfig, and --help.
#include <functional>
#include <limits>
#include <optional>
#include <set>
#include <string>
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
#include "server/daemon/config/daemon_config.h"
#include "server/daemon/config/daemon_config_internal.h"

namespace libreyolo::daemon {
namespace {

using config_internal::ParseMode;

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
      {"tls-key", "FILE", "PEM private key of --tls-cert", "tls.key", TlsFlag(&TlsConfig::key_file),
       nullptr, true},
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
      {"max-watchers-per-user", "N", "concurrent WatchJob streams of one user",
       "limits.max_watchers_per_user", IntFlag(&Limits::max_watchers_per_user)},
      {"max-reads", "N", "reader calls in flight (each parses a stored profile or trace)",
       "limits.max_reads", IntFlag(&Limits::max_reads)},
      {"max-reads-per-user", "N", "reader calls in flight of one user", "limits.max_reads_per_user",
       IntFlag(&Limits::max_reads_per_user)},
      {"max-downloads", "N", "ReadArtifact streams in flight", "limits.max_downloads",
       IntFlag(&Limits::max_downloads)},
      {"max-downloads-per-user", "N", "ReadArtifact streams in flight of one user",
       "limits.max_downloads_per_user", IntFlag(&Limits::max_downloads_per_user)},
      {"max-job-seconds", "SECONDS",
       "a job's wall-time limit from its start (the submitter's is capped at it), default 86400",
       "limits.max_job_seconds", IntFlag(&Limits::max_job_seconds)},
      {"retention-max-age-hours", "HOURS", "finished jobs older than this are deleted; 0 = keep",
       "retention.max_age_hours", IntFlag(&Retention::max_age_hours)},
      {"retention-max-jobs", "N", "finished jobs kept at most, oldest go first; 0 = no cap",
       "retention.max_jobs", IntFlag(&Retention::max_jobs)},
      {"metrics-textfile", "FILE",
       "write Prometheus metrics there for node_exporter's textfile collector", "metrics_textfile",
       StringFlag(&DaemonConfig::metrics_textfile), nullptr, true},
      {"drain-timeout", "SECONDS",
       "on SIGTERM, how long a running job may take to stop, default 60", "drain_timeout_s",
       [](absl::string_view flag, absl::string_view value, DaemonConfig* c) {
         absl::string_view seconds = value;
         if (absl::EndsWith(seconds, "s")) seconds.remove_suffix(1);  // "90s" reads as 90
         return FlagInt(flag, seconds, &c->drain_timeout_s);
       }},
      {"threads", "N", "engine CPU threads for cpu jobs, 0 = all cores", "cpu_threads",
       IntFlag(&DaemonConfig::cpu_threads)},
      {"cpu-slots", "N",
       "CPU slots to serve: cpu, cpu:1, ..., cpu:N-1 (each its own engine worker, started at "
       "its first job), default 1 (1..64)",
       "cpu_slots", IntFlag(&DaemonConfig::cpu_slots)},
      {"cancel-grace", "SECONDS",
       "after a cancel, how long an engine worker may take to stop before it is killed, "
       "default 30 (1..86400)",
       "cancel_grace_s", IntFlag(&DaemonConfig::cancel_grace_s)},
      {"connection-idle-timeout", "SECONDS",
       "a connection with no RPC in flight for this long is closed (clients reconnect), "
       "default 120 (1..86400)",
       "connection_idle_timeout_s", IntFlag(&DaemonConfig::connection_idle_timeout_s)},
      {"handshake-timeout", "SECONDS",
       "a TCP connection not through its handshake within this long is closed, default 10 "
       "(1..3600)",
       "handshake_timeout_s", IntFlag(&DaemonConfig::handshake_timeout_s)},
      {"max-connections", "N",
       "connections to the Unix socket and plaintext TCP in all; past it a connection is "
       "closed at once, default 512 (1..1000000)",
       "max_connections", IntFlag(&DaemonConfig::max_connections)},
      {"max-connections-per-peer", "N",
       "connections per peer (a uid on the Unix socket, an address on TCP), default 64 "
       "(1..max-connections)",
       "max_connections_per_peer", IntFlag(&DaemonConfig::max_connections_per_peer)},
      {"reserved-descriptors", "N",
       "descriptors TCP connections never take (the store, the workers, the Unix socket keep "
       "them), default 64 (0..65536)",
       "reserved_descriptors", IntFlag(&DaemonConfig::reserved_descriptors)},
      {"progress-timeout", "SECONDS",
       "a running job whose worker reports no progress for this long is stopped and fails, "
       "default 600 (1..86400)",
       "progress_timeout_s", IntFlag(&DaemonConfig::progress_timeout_s)},
      {"lease-dir", "DIR",
       "stop (as on SIGTERM) once no job is queued or running and no live process holds a "
       "lease in DIR; the private daemon libreyolo starts runs with it",
       "lease_dir", StringFlag(&DaemonConfig::lease_dir)},
      {"worker-binary", "PATH",
       "the engine worker executable; default: libreyolod-worker beside this daemon",
       "worker_binary", StringFlag(&DaemonConfig::worker_binary)},
      {"attach-dir", "DIR",
       "libreyolo profile attach: a Kineto socket directory per user under DIR (DIR/<uid>), "
       "made when the user first asks; empty = no attach endpoint, default "
       "/run/libreyolod/attach",
       "attach_dir", StringFlag(&DaemonConfig::attach_dir), nullptr, true},
      {"attach-dynolog-compat", nullptr,
       "also bind Kineto's default abstract address (dynolog's; any local user reaches it); "
       "refused when dynolog holds it",
       "attach_dynolog_compat", BoolFlag(&Self, &DaemonConfig::attach_dynolog_compat)},
      {"python-tool", "PATH",
       "the Python LibreYOLO's bin/libreyolo, which runs profile run|infer of a native checkpoint "
       "of a family the engine lacks; default: the project's Python environment "
       "($LIBREYOLO_PYTHON_ENV, else the one this daemon was built with); off = none",
       "python_tool", StringFlag(&DaemonConfig::python_tool)},
      {"help", nullptr, "print this help and exit", nullptr, nullptr},
  };
  return flags;
}

}  // namespace

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
        return absl::InvalidArgumentError(absl::StrCat(
            "unexpected argument '", Excerpt(arg), "': flags start with --, e.g. --", Excerpt(flag),
            "=", Excerpt(arg.substr(eq + 1)), " (see libreyolod --help)"));
      }
      return absl::InvalidArgumentError(
          absl::StrCat("unexpected argument '", Excerpt(arg),
                       "': libreyolod takes only flags (see libreyolod --help)"));
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
          absl::StrCat("unknown flag --", Excerpt(std::string(name)), " (see libreyolod --help)"));
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

}  // namespace libreyolo::daemon
