// libreyolod's configuration: a YAML file (deploy/libreyolod.example.yaml) overridden by flags.
#ifndef LIBREYOLO_SERVER_DAEMON_CONFIG_DAEMON_CONFIG_H_
#define LIBREYOLO_SERVER_DAEMON_CONFIG_DAEMON_CONFIG_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "wire/job_spec/job_spec.h"
#include "server/daemon/security/tls_config.h"

namespace libreyolo::daemon {

// The daemon's limits. Its base is the job spec's JobLimits (max_batch, max_imgsz, max_runs,
// max_steps, max_repeat), which the job spec's validator takes at submission as they are, with
// this daemon's defaults; then the daemon's own caps. Each is one row of daemon_options.cc.
struct Limits : jobspec::JobLimits {
  Limits()
      : jobspec::JobLimits{.max_batch = 256,
                           .max_imgsz = 1536,
                           .max_runs = 10000,  // infer: warmup + runs
                           .max_steps = 1000,  // run: warmup + steps per cycle, x cycles
                           .max_repeat = 20} {}
  int32_t max_queue_length = 100;  // queued jobs per device
  int32_t max_jobs_per_user = 10;  // queued + running, per user
  int64_t max_inline_image_bytes = 16 << 20;  // all inline images of one request
  int64_t max_artifact_bytes = int64_t{2} << 30;
  int32_t max_watchers = 256;  // concurrent WatchJob streams
  int32_t max_watchers_per_user = 32;  // concurrent WatchJob streams of one user
  // Reader calls (Summary, Get, Phases, Kernels, Ops, Compare, WhatIf) in flight: each parses
  // a stored profile or trace on the daemon's cores.
  int32_t max_reads = 16;
  int32_t max_reads_per_user = 4;
  int32_t max_downloads = 64;  // ReadArtifact streams in flight
  int32_t max_downloads_per_user = 8;
  // A job's wall-time limit, from its start (seconds): the submitter's max_wall_seconds is
  // capped at it, and 0 there means this. A job still running then is stopped and FAILED.
  int64_t max_job_seconds = 86400;
  // The most pixels (width x height) the engine decodes from one image of a job (an inline
  // image, a source folder's, a dataset's): a bigger one fails the job naming its size. The
  // engine's own bound by default (server/engine/data/image_header.h, kMaxDecodedPixels).
  int64_t max_decoded_pixels = int64_t{1} << 26;
  // The longest trace an attach job may ask of a running process (duration_ms): the traced
  // process pays the profiler's cost for that long. The job spec's own bound by default.
  int64_t max_attach_duration_ms = jobspec::bounds::kMaxAttachDurationMs;
};

struct Retention {
  int64_t max_age_hours = 24 * 30;  // finished jobs older than this are deleted; 0 = keep
  int64_t max_jobs = 1000;          // finished jobs kept at most (oldest go first); 0 = no cap
};

// Bounds of the configuration's lists (ValidateDaemonConfig): each listen address holds a
// socket and each device a worker process, so a config with thousands is a mistake, refused
// with exit 2 before anything is opened.
inline constexpr size_t kMaxListenAddresses = 64;
inline constexpr size_t kMaxDevices = 128;
inline constexpr size_t kMaxAdmins = 1024;
// The largest wall-time limit, the daemon's or a job's (2^31-1 s, 68 years: any larger one
// would overflow the clock arithmetic that enforces it).
inline constexpr int64_t kMaxJobSeconds = 2147483647;
// The largest limits.max_decoded_pixels: OpenCV's own bound (OPENCV_IO_MAX_IMAGE_PIXELS, 2^30),
// past which it refuses to decode whatever this says.
inline constexpr int64_t kMaxDecodedPixelsBound = int64_t{1} << 30;

// The wall-time limit a job runs under: the one it asked for (0 = none asked) capped at the
// daemon's `cap` (limits.max_job_seconds).
inline int64_t JobWallSeconds(int64_t requested, int64_t cap) {
  return requested <= 0 || requested > cap ? cap : requested;
}

struct DaemonConfig {
  // "tcp:HOST:PORT" / "HOST:PORT" / "unix:/path". 1..kMaxListenAddresses of them.
  std::vector<std::string> listen;
  std::string state_dir = "/var/lib/libreyolod/state";
  std::string store_dir = "/var/lib/libreyolod/store";
  std::string models_dir = "/var/lib/libreyolod/models";
  std::string datasets_dir = "/var/lib/libreyolod/datasets";
  std::string images_dir = "/var/lib/libreyolod/images";
  std::vector<std::string> devices;  // "cpu", "0", "1"; empty = every CUDA device, else cpu
  TlsConfig tls;
  std::string tokens_file;          // "<token> <user> [admin]" lines; sha256:<hex> tokens ok
  std::vector<std::string> admins;  // user names with admin rights (uid 0 always is)
  bool insecure_tcp = false;        // allow TCP without TLS (loopback tests, trusted networks)
  bool allow_local_paths = false;   // private daemons: callers with our uid may name paths
  int unix_socket_mode = 0660;      // permissions of the Unix socket
  Limits limits;
  Retention retention;
  std::string metrics_textfile;  // node_exporter textfile in an existing folder; empty = none
  int64_t drain_timeout_s = 60;  // SIGTERM: how long a running job may take to stop
  int32_t cpu_threads = 0;       // engine CPU threads for cpu jobs; 0 = all cores
  // CPU slots served: cpu, cpu:1, ..., cpu:(N-1) (beside any in `devices`), for CPU jobs side
  // by side and the ranks of a data-parallel CPU run. A slot's engine worker starts at its
  // first job. 1..64.
  int32_t cpu_slots = 1;
  // After a cancel (CancelJob, a drain's deadline), how long an engine worker may take to stop
  // before it is killed (a job stuck inside one step: a hung kernel, a dead data loader).
  int64_t cancel_grace_s = 30;
  // The progress watchdog: a running job whose engine worker sends no event (a step, a stage)
  // for this long is stopped (the worker killed: a stopped or hung process, a dead data loader)
  // and FAILED "no progress for N s during measuring, step k/n". 1..86400.
  int64_t progress_timeout_s = 600;
  // Connections (issue 23 item 2). A connection with no RPC in flight for this long is closed
  // (gRPC's GOAWAY; a client reconnects on its next call): a connection that sent only the
  // HTTP/2 preface, or a caller that went quiet, does not keep a descriptor. 1..86400.
  int64_t connection_idle_timeout_s = 120;
  // A TCP connection whose TLS (or HTTP/2 connection) handshake is not done within this long
  // is closed. 1..3600.
  int64_t handshake_timeout_s = 10;
  // Connections to the daemon's own listeners (the Unix socket, plaintext TCP; not TLS, which
  // gRPC 1.51 accepts itself): at most max_connections in all and max_connections_per_peer per
  // peer (a uid, an address); a connection past a cap is closed at once (server/daemon/
  // connection_gate.h). TCP never takes the last reserved_descriptors of the process's limit.
  int64_t max_connections = 512;
  int64_t max_connections_per_peer = 64;
  int64_t reserved_descriptors = 64;
  // A lease directory (common/io/lease_dir.h): once no job is queued or running and no live
  // process holds a lease there, the daemon stops as on SIGTERM. Empty = never. The private
  // daemon that `libreyolo` starts on demand runs with it (docs/cli.md, "Private daemon").
  std::string lease_dir;
  // The engine worker executable (libreyolod-worker, the only one that links LibTorch). Empty:
  // the one installed beside this daemon's binary (or, in a build tree, server/worker/'s);
  // FindWorkerExecutable in server/daemon/workers/engine_worker.h.
  std::string worker_binary;
  // `libreyolo profile attach` (issue 37): Kineto's daemon socket for each Unix user who asks,
  // <attach_dir>/<uid>/dynolog in a directory of that user's (mode 0700), bound again at
  // start-up for the users already there. "" = no attach endpoint.
  std::string attach_dir = "/run/libreyolod/attach";
  // Also bind Kineto's default abstract address `\0dynolog\0` (dynolog's), so processes that
  // set only KINETO_USE_DAEMON=1 register; any local user's process reaches it. Start-up fails
  // when another daemon (dynolog) holds it.
  bool attach_dynolog_compat = false;
  // Which Unix user a token user attaches as, "TOKEN_USER=UNIX_USER" entries (issue 37 §4): a
  // token user without one may not attach (it has no Unix user here). Reloaded on SIGHUP.
  std::vector<std::string> attach_unix_users;
  // Issue 38 §4: the Python LibreYOLO CLI (its bin/libreyolo) that runs the `profile run|infer`
  // jobs of a native checkpoint of a family the engine lacks (server/daemon/workers/
  // python_runner.h). "" = the project's Python environment: $LIBREYOLO_PYTHON_ENV/bin/libreyolo,
  // else the one this daemon was built against; "off" = none (such jobs fail, saying how to set
  // it). A path must be an executable file (ValidateDaemonConfig).
  std::string python_tool;
};

// Reads the YAML file. NOT_FOUND names the file; INVALID_ARGUMENT names the key and what is
// wrong with it (unknown keys are errors, not ignored).
absl::StatusOr<DaemonConfig> LoadDaemonConfig(const std::string& path);

struct DaemonOption;

// libreyolod's argv[1..] (without the program name), parsed once by the option rows
// (daemon_options.cc): --config's file, --help, and each option flag's value in argv order.
// "--flag value" and "--flag=value" both work; --listen, --device and --admin repeat, and when
// given replace the file's list.
struct ParsedFlags {
  struct Value {
    const DaemonOption* option = nullptr;  // a row of DaemonOptions()
    std::string value;                     // "true" for a switch given alone
  };
  bool help = false;
  std::string config_file;
  std::vector<Value> values;
};
// Parses `args`; every value is checked as its row's kind says. INVALID_ARGUMENT naming the
// first bad flag (unknown, missing or bad value, a word that is not a flag).
absl::StatusOr<ParsedFlags> ParseDaemonFlags(const std::vector<std::string>& args);
// Applies parsed flags over `config` (flags win over the file's keys).
absl::Status ApplyParsedFlags(const ParsedFlags& flags, DaemonConfig* config);
// ParseDaemonFlags then ApplyParsedFlags over `config`.
absl::StatusOr<ParsedFlags> ApplyDaemonFlags(const std::vector<std::string>& args,
                                             DaemonConfig* config);
std::string DaemonFlagsHelp();

// Every key path of the config file ("limits.max_batch"), in file order.
std::vector<std::string> DaemonConfigKeyPaths();
// The flag ("--max-batch") that overrides a key path, or "" when none does.
std::string DaemonFlagForKey(const std::string& key_path);

// The checks after flags: each option's bound and rule (its row in daemon_options.cc: listen
// addresses, TLS files readable, admins are user names, the metrics textfile's folder exists,
// limits positive, ...), then the rules across options (a TCP listener has TLS or
// insecure_tcp and a tokens file, TLS files come in pairs, ...). Every problem found
// is reported, joined by "; " (the first kMaxReportedProblems, then how many more); values are
// echoed as excerpts (common/render/terminal_text.h).
inline constexpr size_t kMaxReportedProblems = 10;
absl::Status ValidateDaemonConfig(const DaemonConfig& config);

// One `listen` entry, split: "unix:/path" -> {unix_socket, "/path"}; "tcp:HOST:PORT" and
// "HOST:PORT" (IPv6 as "[::1]:PORT") -> {tcp, "HOST:PORT"}, ready for grpc AddListeningPort.
struct ListenAddress {
  bool unix_socket = false;
  std::string target;  // socket path, or HOST:PORT
};
absl::StatusOr<ListenAddress> ParseListenAddress(const std::string& address);

// The configuration as a running daemon sees it: SIGHUP swaps in a reloaded one (tokens,
// admins, limits, retention, drain timeout, metrics file), readers take a snapshot per call.
class LiveConfig {
 public:
  explicit LiveConfig(DaemonConfig config)
      : config_(std::make_shared<const DaemonConfig>(std::move(config))) {}
  std::shared_ptr<const DaemonConfig> Get() const {
    std::lock_guard<std::mutex> lock(mu_);
    return config_;
  }
  void Set(DaemonConfig config) {
    auto next = std::make_shared<const DaemonConfig>(std::move(config));
    std::lock_guard<std::mutex> lock(mu_);
    config_ = std::move(next);
  }

 private:
  mutable std::mutex mu_;
  std::shared_ptr<const DaemonConfig> config_;
};

// What a reload may change without a restart. Fills `next` from `running` with the keys of
// `loaded` whose rows (daemon_options.cc) are marked reloadable (ReloadableKeys) and
// returns one line per other top-level key or section that differs ("listen changed: restart
// libreyolod to apply it"); those keep their running values.
std::vector<std::string> MergeReloadable(const DaemonConfig& running, const DaemonConfig& loaded,
                                         DaemonConfig* next);
// The top-level keys and sections a reload applies, in the file's order (what the SIGHUP log
// line names).
std::vector<std::string> ReloadableKeys();

// The whole start-up sequence of a configuration: --config's file (the defaults without one),
// the parsed flags over it, then ValidateDaemonConfig. INVALID_ARGUMENT / NOT_FOUND /
// FAILED_PRECONDITION naming the problem. A SIGHUP reload runs it again with the same flags.
absl::StatusOr<DaemonConfig> LoadDaemonConfigWithFlags(const ParsedFlags& flags);

}  // namespace libreyolo::daemon

#endif  // LIBREYOLO_SERVER_DAEMON_CONFIG_DAEMON_CONFIG_H_
