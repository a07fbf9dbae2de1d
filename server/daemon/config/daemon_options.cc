// The rows of libreyolod's options (daemon_options.h), their single-option checks, and what is
// made from them: bound checks, a reload's comparison and copy, docs/deploy.md's table.
#include "server/daemon/config/daemon_options.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/render/terminal_text.h"
#include "server/daemon/config/daemon_config_internal.h"
#include "server/daemon/security/auth.h"
#include "server/daemon/security/regular_file.h"

namespace libreyolo::daemon {
namespace {

// ---- Single-option checks ---------------------------------------------------------------------

bool AllDigits(absl::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return absl::ascii_isdigit(static_cast<unsigned char>(c));
  });
}

// The value of a row's field in a config the caller does not change.
template <typename T>
const T& Value(const DaemonOption& option, const DaemonConfig& config) {
  return std::get<T& (*)(DaemonConfig&)>(option.field)(const_cast<DaemonConfig&>(config));
}

void CheckListen(const DaemonOption&, const DaemonConfig& config,
                 std::vector<std::string>* problems) {
  if (config.listen.empty()) {
    problems->push_back(
        "no listen address: set `listen` in the config file or pass --listen (e.g. --listen "
        "unix:/run/libreyolod/libreyolod.sock)");
  }
  if (config.listen.size() > kMaxListenAddresses) {
    // Each address would hold a socket: thousands end in "Too many open files" (exit 1).
    problems->push_back(absl::StrCat("listen: ", config.listen.size(), " addresses; at most ",
                                     kMaxListenAddresses,
                                     " (one Unix socket and a TCP address or two are usual; --listen)"));
    return;
  }
  for (const std::string& address : config.listen) {
    absl::StatusOr<ListenAddress> parsed = ParseListenAddress(address);
    if (!parsed.ok()) problems->emplace_back(parsed.status().message());
  }
}

void CheckNotEmpty(const DaemonOption& option, const DaemonConfig& config,
                   std::vector<std::string>* problems) {
  if (Value<std::string>(option, config).empty()) {
    problems->push_back(absl::StrCat(option.key, " is empty: set it (--", option.flag, ")"));
  }
}

void CheckDevices(const DaemonOption&, const DaemonConfig& config,
                  std::vector<std::string>* problems) {
  if (config.devices.size() > kMaxDevices) {
    problems->push_back(
        absl::StrCat("devices (--device): ", config.devices.size(), " entries; at most ",
                     kMaxDevices));
    return;
  }
  std::set<std::string> devices;
  for (const std::string& device : config.devices) {
    int slot = 0;
    const bool cpu_slot = absl::StartsWith(device, "cpu:") && AllDigits(device.substr(4)) &&
                          absl::SimpleAtoi(device.substr(4), &slot) && slot >= 1 && slot <= 63;
    if (device != "cpu" && !cpu_slot && !AllDigits(device)) {
      problems->push_back(absl::StrCat("devices (--device): '", Excerpt(device),
                                       "' is not a device: use cpu, a CUDA index such as 0, or "
                                       "cpu:N (N = 1..63) for a further CPU slot"));
    } else if (!devices.insert(device).second) {
      problems->push_back(absl::StrCat("devices (--device): '", Excerpt(device), "' is listed twice"));
    }
  }
}

void CheckAdmins(const DaemonOption&, const DaemonConfig& config,
                 std::vector<std::string>* problems) {
  if (config.admins.size() > kMaxAdmins) {
    problems->push_back(
        absl::StrCat("admins: ", config.admins.size(), " names; at most ", kMaxAdmins, " (--admin)"));
    return;
  }
  for (const std::string& admin : config.admins) {
    if (admin.empty()) {
      problems->push_back("admins: an empty user name (--admin)");
    } else if (!IsValidUserName(admin)) {
      problems->push_back(absl::StrCat("admins: '", Excerpt(admin),
                                       "' is not a user name: user names hold 1..",
                                       kMaxUserNameBytes, " letters, digits, _ - . @ (--admin)"));
    }
  }
}

// A TLS file, when set, is a regular file we can open.
void CheckReadable(const DaemonOption& option, const DaemonConfig& config,
                   std::vector<std::string>* problems) {
  const std::string& file = Value<std::string>(option, config);
  if (file.empty()) return;
  if (const std::string error = RegularFileProblem(file); !error.empty()) {
    problems->push_back(absl::StrCat(OptionName(option), " ", file, ": cannot read: ", error));
  }
}

// Why the metrics textfile can never be written (its folder is missing, not a folder or not
// writable), or "". The daemon writes it atomically: a temp file and a rename in that folder.
std::string MetricsFolderProblem(const std::string& path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  const std::string folder = parent.empty() ? std::string(".") : parent.string();
  const std::string prefix = absl::StrCat("metrics_textfile ", Excerpt(path, 4096), ": ");
  constexpr absl::string_view fix =
      "; create it (node_exporter's --collector.textfile.directory) or choose another path "
      "(--metrics-textfile)";
  struct stat info {};
  if (::stat(folder.c_str(), &info) != 0) {
    return absl::StrCat(prefix, "the folder ", Excerpt(folder, 4096), " does not exist (",
                        std::strerror(errno), ")", fix);
  }
  if (!S_ISDIR(info.st_mode)) {
    return absl::StrCat(prefix, Excerpt(folder, 4096), " is not a folder", fix);
  }
  if (::access(folder.c_str(), W_OK | X_OK) != 0) {
    return absl::StrCat(prefix, "the folder ", Excerpt(folder, 4096),
                        " is not writable by this user (", std::strerror(errno),
                        "); give libreyolod write access to it or choose another path "
                        "(--metrics-textfile)");
  }
  if (::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode)) {
    return absl::StrCat(prefix, "is a folder; name a file in it, e.g. ", Excerpt(path, 4096),
                        "/libreyolod.prom (--metrics-textfile)");
  }
  return "";
}

void CheckMetricsFile(const DaemonOption&, const DaemonConfig& config,
                      std::vector<std::string>* problems) {
  if (config.metrics_textfile.empty()) return;
  if (std::string why = MetricsFolderProblem(config.metrics_textfile); !why.empty()) {
    problems->push_back(std::move(why));
  }
}

void CheckPythonTool(const DaemonOption&, const DaemonConfig& config,
                     std::vector<std::string>* problems) {
  if (config.python_tool.empty() || config.python_tool == "off") return;
  struct stat st {};
  if (::stat(config.python_tool.c_str(), &st) != 0 || !S_ISREG(st.st_mode) ||
      ::access(config.python_tool.c_str(), X_OK) != 0) {
    problems->push_back(absl::StrCat("python_tool (--python-tool) ",
                                     Excerpt(config.python_tool, 4096),
                                     " is not an executable file: give the Python LibreYOLO's "
                                     "bin/libreyolo, \"off\", or leave it unset for the "
                                     "project's Python environment"));
  }
}

void CheckSocketMode(const DaemonOption&, const DaemonConfig& config,
                     std::vector<std::string>* problems) {
  if (config.unix_socket_mode < 0 || config.unix_socket_mode > 0777) {
    problems->push_back(
        "unix_socket_mode (--unix-socket-mode): expected an octal mode between 0 and 0777");
  } else if ((config.unix_socket_mode & 0600) != 0600) {
    problems->push_back(
        "unix_socket_mode (--unix-socket-mode): the owner needs read and write permission "
        "(e.g. 0600 or 0660)");
  }
}

// attach_unix_users: each entry TOKEN_USER=UNIX_USER, one entry per token user, every Unix user
// on this host and not root (issue 37 §4).
void CheckAttachUnixUsers(const DaemonOption& option, const DaemonConfig& config,
                          std::vector<std::string>* problems) {
  const std::string name = OptionName(option);
  if (config.attach_unix_users.size() > kMaxAttachUnixUsers) {
    problems->push_back(absl::StrCat(name, ": ", config.attach_unix_users.size(),
                                     " entries; at most ", kMaxAttachUnixUsers));
    return;
  }
  std::set<std::string> seen;
  for (const std::string& entry : config.attach_unix_users) {
    absl::StatusOr<AttachUnixUser> m = ParseAttachUnixUser(entry);
    if (!m.ok()) {
      problems->push_back(absl::StrCat(name, ": ", m.status().message()));
    } else if (!seen.insert(m->token_user).second) {
      problems->push_back(absl::StrCat(name, ": token user '", m->token_user,
                                       "' is mapped twice: keep one entry"));
    } else if (absl::StatusOr<uid_t> uid = AttachUnixUid(m->unix_user); !uid.ok()) {
      problems->push_back(absl::StrCat(name, ": ", entry, ": ", uid.status().message(),
                                       absl::IsNotFound(uid.status())
                                           ? " (create it, or remove the entry)"
                                           : ""));
    }
  }
}

// ---- The rows ---------------------------------------------------------------------------------

// Where a row lands: DaemonConfig's member `path`.
#define LANDS(path) [](DaemonConfig& c) -> auto& { return c.path; }

constexpr OptionKind kInt = OptionKind::kInt;
constexpr OptionKind kSeconds = OptionKind::kSeconds;
constexpr OptionKind kString = OptionKind::kString;
constexpr OptionKind kOptional = OptionKind::kOptional;
constexpr OptionKind kList = OptionKind::kList;
constexpr OptionKind kSwitch = OptionKind::kSwitch;
constexpr Reload kLive = Reload::kLive;
constexpr OptionBound kPositive = OptionBound::kPositive;
constexpr OptionBound kNonNegative = OptionBound::kNonNegative;
constexpr OptionBound kRange = OptionBound::kRange;

// The daemon's job limits (the job spec's JobLimits that Limits holds) and its own caps: each
// positive, applied by a reload.
std::vector<DaemonOption> LimitRows() {
  return {
      {"limits.max_queue_length", "max-queue-length", "N", "queued jobs per device", kInt,
       LANDS(limits.max_queue_length), kLive, kPositive, 1},
      {"limits.max_jobs_per_user", "max-jobs-per-user", "N", "queued + running jobs per user", kInt,
       LANDS(limits.max_jobs_per_user), kLive, kPositive, 1},
      {"limits.max_steps", "max-steps", "N", "largest run: (warmup + steps) x cycles", kInt,
       LANDS(limits.max_steps), kLive, kPositive, 1},
      {"limits.max_runs", "max-runs", "N", "largest infer: warmup + runs", kInt,
       LANDS(limits.max_runs), kLive, kPositive, 1},
      {"limits.max_repeat", "max-repeat", "N", "largest --repeat (trials of one job)", kInt,
       LANDS(limits.max_repeat), kLive, kPositive, 1},
      {"limits.max_batch", "max-batch", "N", "largest batch a job may ask for", kInt,
       LANDS(limits.max_batch), kLive, kPositive, 1},
      {"limits.max_imgsz", "max-imgsz", "PIXELS", "largest image size a job may ask for", kInt,
       LANDS(limits.max_imgsz), kLive, kPositive, 1},
      {"limits.max_inline_image_bytes", "max-inline-image-bytes", "BYTES",
       "all inline images of one request together", kInt, LANDS(limits.max_inline_image_bytes),
       kLive, kPositive, 1},
      {"limits.max_artifact_bytes", "max-artifact-bytes", "BYTES",
       "largest artifact a job may store", kInt, LANDS(limits.max_artifact_bytes), kLive,
       kPositive, 1},
      {"limits.max_watchers", "max-watchers", "N", "concurrent WatchJob streams", kInt,
       LANDS(limits.max_watchers), kLive, kPositive, 1},
      {"limits.max_watchers_per_user", "max-watchers-per-user", "N",
       "concurrent WatchJob streams of one user", kInt, LANDS(limits.max_watchers_per_user),
       kLive, kPositive, 1},
      {"limits.max_reads", "max-reads", "N",
       "reader calls in flight (each parses a stored profile or trace)", kInt,
       LANDS(limits.max_reads), kLive, kPositive, 1},
      {"limits.max_reads_per_user", "max-reads-per-user", "N", "reader calls in flight of one user",
       kInt, LANDS(limits.max_reads_per_user), kLive, kPositive, 1},
      {"limits.max_downloads", "max-downloads", "N", "ReadArtifact streams in flight", kInt,
       LANDS(limits.max_downloads), kLive, kPositive, 1},
      {"limits.max_downloads_per_user", "max-downloads-per-user", "N",
       "ReadArtifact streams in flight of one user", kInt, LANDS(limits.max_downloads_per_user),
       kLive, kPositive, 1},
      {"limits.max_job_seconds", "max-job-seconds", "SECONDS",
       "a job's wall-time limit from its start (the submitter's is capped at it)", kInt,
       LANDS(limits.max_job_seconds), kLive, kPositive, 1, kMaxJobSeconds, "seconds"},
      {"limits.max_decoded_pixels", "max-decoded-pixels", "PIXELS",
       "most pixels (width x height) the engine decodes from one image; a bigger one fails "
       "the job",
       kInt, LANDS(limits.max_decoded_pixels), kLive, kPositive, 1, kMaxDecodedPixelsBound,
       "pixels"},
      {"limits.max_attach_duration_ms", "max-attach-duration-ms", "MS",
       "longest trace an attach job may ask of a running process (attach --duration-ms)", kInt,
       LANDS(limits.max_attach_duration_ms), kLive, kPositive, 1,
       jobspec::bounds::kMaxAttachDurationMs, "ms"},
      {"retention.max_age_hours", "retention-max-age-hours", "HOURS",
       "finished jobs older than this are deleted; 0 = keep", kInt,
       LANDS(retention.max_age_hours), kLive, kNonNegative},
      {"retention.max_jobs", "retention-max-jobs", "N",
       "finished jobs kept at most, oldest go first; 0 = no cap", kInt, LANDS(retention.max_jobs),
       kLive, kNonNegative},
  };
}

// Where the daemon listens, what it serves, who may call it.
std::vector<DaemonOption> ServingRows() {
  return {
      {"listen", "listen", "ADDR",
       "listen address, repeatable: unix:/path, tcp:HOST:PORT or HOST:PORT ([::1]:PORT for "
       "IPv6); replaces the file's list",
       kList, LANDS(listen), {}, {}, 0, kNoMax, "", CheckListen},
      {"state_dir", "state-dir", "DIR",
       "job records and event logs; one daemon per state dir (it is locked)", kString,
       LANDS(state_dir), {}, {}, 0, kNoMax, "", CheckNotEmpty},
      {"store_dir", "store-dir", "DIR", "job artifacts", kString, LANDS(store_dir), {}, {}, 0,
       kNoMax, "", CheckNotEmpty},
      {"models_dir", "models-dir", "DIR", "weights files callers may name", kString,
       LANDS(models_dir), {}, {}, 0, kNoMax, "", CheckNotEmpty},
      {"datasets_dir", "datasets-dir", "DIR", "datasets callers may name", kString,
       LANDS(datasets_dir), {}, {}, 0, kNoMax, "", CheckNotEmpty},
      {"images_dir", "images-dir", "DIR", "images callers may name", kString, LANDS(images_dir),
       {}, {}, 0, kNoMax, "", CheckNotEmpty},
      {"devices", "device", "D",
       "device to serve, repeatable: cpu or a CUDA index (0, 1, ...); cpu:1, cpu:2, ... add "
       "CPU slots (each its own engine worker); default every CUDA device, and cpu",
       kList, LANDS(devices), {}, {}, 0, kNoMax, "", CheckDevices},
      {"tls.cert", "tls-cert", "FILE", "PEM server certificate chain; enables TLS on TCP",
       kOptional, LANDS(tls.cert_file), {}, {}, 0, kNoMax, "", CheckReadable},
      {"tls.key", "tls-key", "FILE", "PEM private key of --tls-cert", kOptional,
       LANDS(tls.key_file), {}, {}, 0, kNoMax, "", CheckReadable},
      {"tls.client_ca", "tls-client-ca", "FILE", "PEM CA that signs client certificates",
       kOptional, LANDS(tls.client_ca_file), {}, {}, 0, kNoMax, "", CheckReadable},
      {"tls.require_client_cert", "require-client-cert", nullptr,
       "refuse TLS clients without a certificate signed by --tls-client-ca", kSwitch,
       LANDS(tls.require_client_cert)},
      {"tokens_file", "tokens-file", "FILE",
       "bearer tokens, one '<token> <user> [admin]' per line, mode 600; required with TCP; "
       "re-read on SIGHUP",
       kOptional, LANDS(tokens_file), kLive},
      {"admins", "admin", "USER", "user with admin rights, repeatable; replaces the file's list",
       kList, LANDS(admins), kLive, {}, 0, kNoMax, "", CheckAdmins},
      {"insecure_tcp", "insecure-tcp", nullptr,
       "allow TCP without TLS (loopback tests, trusted networks)", kSwitch, LANDS(insecure_tcp)},
      {"allow_local_paths", "allow-local-paths", nullptr,
       "private daemon: callers with the daemon's uid on the Unix socket may name their own "
       "paths",
       kSwitch, LANDS(allow_local_paths)},
      {"unix_socket_mode", "unix-socket-mode", "OCTAL", "permissions of the Unix socket",
       OptionKind::kMode, LANDS(unix_socket_mode), {}, {}, 0, kNoMax, "", CheckSocketMode},
  };
}

// How jobs and connections run, and where the daemon's helpers are.
std::vector<DaemonOption> RunningRows() {
  return {
      {"metrics_textfile", "metrics-textfile", "FILE",
       "write Prometheus metrics there for node_exporter's textfile collector", kOptional,
       LANDS(metrics_textfile), kLive, {}, 0, kNoMax, "", CheckMetricsFile},
      {"drain_timeout_s", "drain-timeout", "SECONDS",
       "on SIGTERM, how long a running job may take to stop", kSeconds, LANDS(drain_timeout_s),
       kLive, kNonNegative},
      {"cpu_threads", "threads", "N", "engine CPU threads for cpu jobs, 0 = all cores", kInt,
       LANDS(cpu_threads), {}, kNonNegative},
      {"cpu_slots", "cpu-slots", "N",
       "CPU slots to serve: cpu, cpu:1, ..., cpu:N-1 (each its own engine worker, started at "
       "its first job)",
       kInt, LANDS(cpu_slots), {}, kRange, 1, 64},
      {"cancel_grace_s", "cancel-grace", "SECONDS",
       "after a cancel, how long an engine worker may take to stop before it is killed", kInt,
       LANDS(cancel_grace_s), {}, kRange, 1, 86400, "seconds"},
      {"connection_idle_timeout_s", "connection-idle-timeout", "SECONDS",
       "a connection with no RPC in flight for this long is closed (clients reconnect)", kInt,
       LANDS(connection_idle_timeout_s), {}, kRange, 1, 86400, "seconds"},
      {"handshake_timeout_s", "handshake-timeout", "SECONDS",
       "a TCP connection not through its handshake within this long is closed", kInt,
       LANDS(handshake_timeout_s), {}, kRange, 1, 3600, "seconds"},
      {"max_connections", "max-connections", "N",
       "connections to the Unix socket and plaintext TCP in all; past it a connection is "
       "closed at once",
       kInt, LANDS(max_connections), kLive, kRange, 1, 1000000},
      {"max_connections_per_peer", "max-connections-per-peer", "N",
       "connections per peer (a uid on the Unix socket, an address on TCP), at most "
       "max-connections",
       kInt, LANDS(max_connections_per_peer), kLive, kPositive, 1},
      {"reserved_descriptors", "reserved-descriptors", "N",
       "descriptors TCP connections never take (the store, the workers, the Unix socket keep "
       "them)",
       kInt, LANDS(reserved_descriptors), kLive, kRange, 0, 65536},
      {"progress_timeout_s", "progress-timeout", "SECONDS",
       "a running job whose worker reports no progress for this long is stopped and fails", kInt,
       LANDS(progress_timeout_s), kLive, kRange, 1, 86400, "seconds"},
      {"lease_dir", "lease-dir", "DIR",
       "stop (as on SIGTERM) once no job is queued or running and no live process holds a "
       "lease in DIR; the private daemon libreyolo starts runs with it",
       kString, LANDS(lease_dir)},
      {"worker_binary", "worker-binary", "PATH",
       "the engine worker executable; default: libreyolod-worker beside this daemon", kString,
       LANDS(worker_binary)},
      {"attach_dir", "attach-dir", "DIR",
       "libreyolo profile attach: a Kineto socket directory per user under DIR (DIR/<uid>), "
       "made when the user first asks; empty = no attach endpoint",
       kOptional, LANDS(attach_dir)},
      {"attach_dynolog_compat", "attach-dynolog-compat", nullptr,
       "also bind Kineto's default abstract address (dynolog's; any local user reaches it); "
       "refused when dynolog holds it",
       kSwitch, LANDS(attach_dynolog_compat)},
      {"attach_unix_users", "attach-unix-user", "TOKEN_USER=UNIX_USER",
       "profile attach: the Unix user a token user attaches as (only that user's processes), "
       "repeatable; a token user without one may not attach; replaces the file's list",
       kList, LANDS(attach_unix_users), kLive, {}, 0, kNoMax, "", CheckAttachUnixUsers},
      {"python_tool", "python-tool", "PATH",
       "the Python LibreYOLO's bin/libreyolo, which runs profile run|infer of a native checkpoint "
       "of a family the engine lacks; default: the project's Python environment "
       "($LIBREYOLO_PYTHON_ENV, else the one this daemon was built with); off = none",
       kString, LANDS(python_tool), {}, {}, 0, kNoMax, "", CheckPythonTool},
  };
}

#undef LANDS

std::vector<DaemonOption> AllRows() {
  std::vector<DaemonOption> rows = ServingRows();
  // The file's order: the serving keys up to unix_socket_mode, the limits and retention, the rest.
  for (std::vector<DaemonOption> part : {LimitRows(), RunningRows()}) {
    rows.insert(rows.end(), part.begin(), part.end());
  }
  return rows;
}

// The message of a value outside its row's bound, or "".
std::string BoundProblem(const DaemonOption& option, int64_t v) {
  const std::string name = OptionName(option);
  const std::string unit = option.unit[0] == '\0' ? "" : absl::StrCat(" ", option.unit);
  switch (option.bound) {
    case OptionBound::kNone:
      return "";
    case OptionBound::kPositive:
    case OptionBound::kNonNegative:
      if (v < option.min) {
        return absl::StrCat(name, option.min == 1 ? " must be positive" : " must be 0 or more",
                            ", got ", v);
      }
      if (v > option.max) return absl::StrCat(name, ": at most ", option.max, unit, ", got ", v);
      return "";
    case OptionBound::kRange:
      if (v >= option.min && v <= option.max) return "";
      return absl::StrCat(name, ": expected ", option.min, "..", option.max, unit, ", got ", v);
  }
  return "";
}

}  // namespace

const std::vector<DaemonOption>& DaemonOptions() {
  static const std::vector<DaemonOption> rows = AllRows();
  return rows;
}

const DaemonOption* FindDaemonOption(const std::string& key) {
  for (const DaemonOption& option : DaemonOptions()) {
    if (key == option.key) return &option;
  }
  return nullptr;
}

const DaemonOption* FindDaemonFlag(const std::string& flag) {
  for (const DaemonOption& option : DaemonOptions()) {
    if (flag == option.flag) return &option;
  }
  return nullptr;
}

std::string OptionName(const DaemonOption& option) {
  return absl::StrCat(option.key, " (--", option.flag, ")");
}

std::string OptionDefault(const DaemonOption& option) {
  DaemonConfig defaults;
  return std::visit(
      [&option, &defaults](auto at) -> std::string {
        const auto& value = at(defaults);
        using T = std::decay_t<decltype(value)>;
        if constexpr (std::is_same_v<T, bool>) {
          return value ? "true" : "false";
        } else if constexpr (std::is_same_v<T, std::string>) {
          return value;
        } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
          return absl::StrJoin(value, ", ");
        } else {
          if (option.kind == OptionKind::kMode) return absl::StrFormat("%04o", value);
          return absl::StrCat(value);
        }
      },
      option.field);
}

std::string OptionRange(const DaemonOption& option) {
  switch (option.bound) {
    case OptionBound::kNone:
      return "";
    case OptionBound::kPositive:
    case OptionBound::kNonNegative:
      if (option.max != kNoMax) return absl::StrCat(option.min, "..", option.max);
      return absl::StrCat(">= ", option.min);
    case OptionBound::kRange:
      return absl::StrCat(option.min, "..", option.max);
  }
  return "";
}

void OptionProblems(const DaemonConfig& config, std::vector<std::string>* problems) {
  for (const DaemonOption& option : DaemonOptions()) {
    if (option.check != nullptr) option.check(option, config, problems);
    if (option.bound == OptionBound::kNone) continue;
    const int64_t value = std::visit(
        [&config](auto at) -> int64_t {
          const auto& v = at(const_cast<DaemonConfig&>(config));
          if constexpr (std::is_integral_v<std::decay_t<decltype(v)>>) {
            return static_cast<int64_t>(v);
          } else {
            return 0;  // a bound on a string or a list is a row's mistake (a test holds it)
          }
        },
        option.field);
    if (std::string problem = BoundProblem(option, value); !problem.empty()) {
      problems->push_back(std::move(problem));
    }
  }
}

std::string DaemonOptionsMarkdown() {
  std::string table =
      "| key | flag | default | bounds | SIGHUP |\n"
      "|---|---|---|---|---|\n";
  for (const DaemonOption& option : DaemonOptions()) {
    const std::string flag = option.value == nullptr
                                 ? absl::StrCat("`--", option.flag, "`")
                                 : absl::StrCat("`--", option.flag, " ", option.value, "`");
    const std::string fallback = OptionDefault(option);
    std::string range = OptionRange(option);
    if (!range.empty() && option.unit[0] != '\0') absl::StrAppend(&range, " ", option.unit);
    absl::StrAppend(&table, "| `", option.key, "` | ", flag, " | ",
                    fallback.empty() ? "" : absl::StrCat("`", fallback, "`"), " | ", range, " | ",
                    option.reload == Reload::kLive ? "applied" : "restart", " |\n");
  }
  return table;
}

bool SameOption(const DaemonOption& option, const DaemonConfig& a, const DaemonConfig& b) {
  return std::visit(
      [&](auto at) {
        return at(const_cast<DaemonConfig&>(a)) == at(const_cast<DaemonConfig&>(b));
      },
      option.field);
}

void CopyOption(const DaemonOption& option, const DaemonConfig& from, DaemonConfig* to) {
  std::visit([&](auto at) { at(*to) = at(const_cast<DaemonConfig&>(from)); }, option.field);
}

}  // namespace libreyolo::daemon
