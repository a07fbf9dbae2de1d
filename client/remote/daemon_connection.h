// How the client reaches a libreyolod: --remote HOST:PORT (or LIBREYOLO_REMOTE; "unix:/path"
// too) with a bearer token and TLS options, or this user's private daemon on a Unix socket
// (started on demand, see private_daemon.h). One code path for both: everything goes through
// DaemonConnection.
#ifndef LIBREYOLO_CLIENT_REMOTE_DAEMON_CONNECTION_H_
#define LIBREYOLO_CLIENT_REMOTE_DAEMON_CONNECTION_H_

#include <chrono>
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

  v1::ProfilerService::Stub& stub() { return *stub_; }
  // A context carrying the token; `deadline` 0 = none (streams).
  std::unique_ptr<grpc::ClientContext> Context(std::chrono::seconds deadline) const;
  const std::string& address() const { return target_.address; }
  bool is_unix() const;
  std::shared_ptr<grpc::Channel> channel() const { return channel_; }

 private:
  RemoteTarget target_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::ProfilerService::Stub> stub_;
};

// grpc::Status -> absl::Status; UNAVAILABLE gets a hint naming the address.
absl::Status FromGrpc(const grpc::Status& s, const std::string& address);

}  // namespace libreyolo::cli

#endif  // LIBREYOLO_CLIENT_REMOTE_DAEMON_CONNECTION_H_
