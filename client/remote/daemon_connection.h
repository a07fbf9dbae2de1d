// How the client reaches a libreyolod: --remote HOST:PORT (or LIBREYOLO_REMOTE; "unix:/path"
// too) with a bearer token and TLS options, or this user's private daemon on a Unix socket
// (started on demand, see private_daemon.h). One code path for both: everything goes through
// DaemonConnection.
#ifndef LIBREYOLO_CLIENT_REMOTE_DAEMON_CONNECTION_H_
#define LIBREYOLO_CLIENT_REMOTE_DAEMON_CONNECTION_H_

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/cli/args.h"
#include "libreyolo/profiler/v1/profiler.grpc.pb.h"

namespace libreyolo::cli {

namespace v1 = ::libreyolo::profiler::v1;

struct RemoteTarget {
  std::string address;  // "host:port" or "unix:/path"
  std::string token;    // bearer token ("" = none)
  std::string tls_ca_file, tls_cert_file, tls_key_file;
  bool insecure = false;  // plaintext TCP
};

// The flags every command that may talk to a daemon takes.
std::vector<FlagSpec> RemoteFlagSpecs();

// --remote / LIBREYOLO_REMOTE, --token-file / LIBREYOLO_TOKEN, --tls-ca / LIBREYOLO_TLS_CA,
// --tls-cert, --tls-key, --insecure. nullopt when no remote daemon is named (use the private
// one). INVALID_ARGUMENT for an unreadable token file etc.
absl::StatusOr<std::optional<RemoteTarget>> ResolveRemote(const ParsedArgs& args);

class DaemonConnection {
 public:
  static absl::StatusOr<std::unique_ptr<DaemonConnection>> Open(const RemoteTarget& target);
  // A connection whose calls go to `stub` (a test's gmock MockProfilerServiceStub) instead of
  // a channel: the client's remote logic tested without a daemon. `target` gives the address
  // and token; nothing is dialled, and channel() is null.
  static std::unique_ptr<DaemonConnection> WithStub(
      std::unique_ptr<v1::ProfilerService::StubInterface> stub, RemoteTarget target);

  // The interface, not the concrete Stub, so that WithStub can put a mock behind it.
  v1::ProfilerService::StubInterface& stub() { return *stub_; }
  // A context carrying the token; `deadline` 0 = none (streams).
  std::unique_ptr<grpc::ClientContext> Context(std::chrono::seconds deadline) const;
  const std::string& address() const { return target_.address; }
  bool is_unix() const;
  // Null for a connection made WithStub.
  std::shared_ptr<grpc::Channel> channel() const { return channel_; }
  // Whether any call on this connection has had an answer from the daemon (Reconnect waits
  // for a restarting daemon only then). Set by the caller that got the answer.
  bool reached() const { return reached_.load(); }
  void MarkReached() { reached_.store(true); }

  // A private daemon's connection: says why the daemon process has ended (nullopt while it
  // runs). Nobody restarts a private daemon that died, so Reconnect does not wait for it, and
  // Error() gives the reason instead of "cannot reach".
  void set_gone_probe(std::function<std::optional<std::string>()> probe) {
    gone_probe_ = std::move(probe);
  }
  std::optional<std::string> GoneReason() const {
    return gone_probe_ ? gone_probe_() : std::nullopt;
  }
  // FromGrpc(s, address()), or, when the daemon is gone, an UNAVAILABLE that says why.
  absl::Status Error(const grpc::Status& s) const;

 private:
  RemoteTarget target_;
  std::atomic<bool> reached_{false};
  std::function<std::optional<std::string>()> gone_probe_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::ProfilerService::StubInterface> stub_;
};

// Riding out a daemon restart: UNAVAILABLE (the daemon drained after SIGTERM, was killed, or the
// network blinked), and CANCELLED that the user did not ask for (a call that reached the daemon
// while it stopped), is retried with backoff (0.25 s doubling to 4 s) for up to
// LIBREYOLO_RECONNECT_TIMEOUT_S seconds (default 300) since the first failure in a row; any
// other answer, or Ctrl-C, ends the retrying. Watching, the final GetJob and artifact downloads
// all use it, so a job that ends while its daemon restarts is still followed and downloaded.
//
// A private daemon whose process has ended (DaemonConnection::GoneReason) is not waited for.
//
// Only a daemon that was reached on this connection (by this call or any earlier one: the
// submit, the watch, an earlier download) is waited for: an address where nobody ever answered
// (a typo, a daemon that is not running) fails at once, as before.
class Reconnect {
 public:
  explicit Reconnect(DaemonConnection& connection);
  // After a failed call: true when `s` is transient, the daemon was reached before and the
  // budget allows another try (it has slept the backoff); false to give up.
  bool ShouldRetry(const grpc::Status& s);
  // After a call (or a stream message) that reached the daemon.
  void Reset() {
    failures_ = 0;
    connection_->MarkReached();
  }

 private:
  DaemonConnection* connection_;
  std::chrono::seconds budget_;
  std::chrono::steady_clock::time_point first_failure_;
  int failures_ = 0;
};

// grpc::Status -> absl::Status; UNAVAILABLE gets a hint naming the address.
absl::Status FromGrpc(const grpc::Status& s, const std::string& address);

}  // namespace libreyolo::cli

#endif  // LIBREYOLO_CLIENT_REMOTE_DAEMON_CONNECTION_H_
