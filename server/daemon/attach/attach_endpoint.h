// libreyolod's side of Kineto's on-demand protocol (issue 37 §1): the sockets that processes
// started with KINETO_USE_DAEMON=1 poll, one loop thread answering every datagram within the
// client's ~90 ms wait, and the registry of who polls (attach_registry.h).
//
// By default a socket per Unix user, `<socket_root>/<uid>/dynolog`, made when that user first
// asks (PrepareUser: `libreyolo profile attach --env`) and bound again at start-up for every
// directory already there. Every datagram's sender is checked (SO_PASSCRED): a user's socket
// takes only that user's processes, and the pid a process sends must be the kernel's pid for
// it (as its own pid namespace numbers it). Opt-in, the abstract name `dynolog` that dynolog
// uses (any local user can reach it: the uid recorded is the kernel's). Malformed datagrams,
// senders of another user, floods and registrations past the per-user cap are dropped and
// counted, never answered with a configuration. No gRPC here; the RPC adapter reads it.
#ifndef LIBREYOLO_SERVER_DAEMON_ATTACH_ATTACH_ENDPOINT_H_
#define LIBREYOLO_SERVER_DAEMON_ATTACH_ATTACH_ENDPOINT_H_

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "common/time/clock.h"
#include "server/daemon/attach/attach_registry.h"
#include "server/daemon/attach/attach_sockets.h"

namespace libreyolo::daemon::attach {

// Datagrams one Unix user's processes may send per second (a process polls every 5 s);
// past it they are dropped as a flood.
inline constexpr int64_t kMaxDatagramsPerUidPerSecond = 200;
// After PrepareUser, how long the endpoint keeps a daemon that stops when idle (the private
// daemon) serving, so the process started with the printed environment can register.
inline constexpr std::chrono::seconds kPrepareGrace{120};

struct AttachEndpointOptions {
  std::string socket_root;                     // per-user directories under it; "" = none
  bool abstract_name = false;                  // also bind `\0<abstract_name_text>\0`
  std::string abstract_name_text = "dynolog";  // tests use their own
  const Clock* clock = nullptr;                // default Clock::Real()
  size_t max_per_uid = kMaxProcessesPerUid;
  std::string proc_root = "/proc";
};

// Datagrams seen, by outcome (drop reasons by name: kineto_wire.h's and the endpoint's own:
// no_credentials, wrong_user, flood, pid_mismatch, capped, reply_failed).
struct EndpointCounters {
  int64_t received = 0;
  int64_t replied = 0;
  int64_t registered = 0;
  std::map<std::string, int64_t> dropped;
};

class AttachEndpoint {
 public:
  // Binds the abstract name when asked (ALREADY_EXISTS when it is taken) and every user
  // directory already under socket_root (one that fails is a line in `warnings`), then starts
  // the loop thread.
  static absl::StatusOr<std::unique_ptr<AttachEndpoint>> Start(AttachEndpointOptions options,
                                                               std::vector<std::string>* warnings);
  ~AttachEndpoint();
  AttachEndpoint(const AttachEndpoint&) = delete;
  AttachEndpoint& operator=(const AttachEndpoint&) = delete;

  // Stops the loop thread and closes the sockets (their files stay: processes keep polling a
  // path the next daemon binds again). Idempotent.
  void Stop();

  // `<socket_root>/<uid>`, its socket bound (now, when this is the user's first ask). The
  // environment a process needs is then KINETO_USE_DAEMON=1 and KINETO_IPC_SOCKET_DIR=<it>.
  absl::StatusOr<std::string> PrepareUser(uid_t uid);
  // The user's directory when it is served already, else "".
  std::string UserDir(uid_t uid) const;

  AttachRegistry& registry() { return registry_; }
  EndpointCounters counters() const;
  const AttachEndpointOptions& options() const { return options_; }
  // Whether a daemon that stops when idle should keep serving: a process is registered, or a
  // user prepared within kPrepareGrace.
  bool KeepsDaemon();

 private:
  struct Socket {
    int fd = -1;
    std::string dir;             // "" for the abstract name
    std::optional<uid_t> owner;  // the only uid it takes (a user directory's)
    std::string label;           // the registry's `endpoint`
  };
  explicit AttachEndpoint(AttachEndpointOptions options);
  absl::Status AddSocket(Socket socket);
  void Loop();
  void Drain(const Socket& socket);
  void Handle(const Socket& socket, const uint8_t* data, size_t size, const Sender& from);
  bool Admit(uid_t uid);  // the per-user flood budget
  void Count(const std::string& reason);

  AttachEndpointOptions options_;
  const Clock& clock_;
  AttachRegistry registry_;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;  // eventfd: Stop
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  mutable std::mutex mu_;
  std::map<int, Socket> sockets_ ABSL_GUARDED_BY(mu_);  // by fd
  std::vector<int> retired_ ABSL_GUARDED_BY(mu_);       // replaced sockets, closed by Stop
  std::map<uid_t, std::string> user_dirs_ ABSL_GUARDED_BY(mu_);
  std::optional<Clock::SteadyTime> last_prepare_ ABSL_GUARDED_BY(mu_);
  EndpointCounters counters_ ABSL_GUARDED_BY(mu_);
  // The flood budget: datagrams per uid in the current one-second window.
  std::map<uid_t, std::pair<Clock::SteadyTime, int64_t>> budget_ ABSL_GUARDED_BY(mu_);
};

}  // namespace libreyolo::daemon::attach

#endif  // LIBREYOLO_SERVER_DAEMON_ATTACH_ATTACH_ENDPOINT_H_
