// The last step of every RPC before its status goes out (a gRPC server interceptor, so it covers
// errors from every handler and from gRPC itself):
// - a request whose bytes do not parse as the method's message is INVALID_ARGUMENT naming the
//   method and the message type (gRPC's own answer is INTERNAL with an empty message);
// - the daemon's directories in an error message become names relative to them ("models/x.pt",
//   "store/.tmp/...", "state/..."), unless the caller may name local paths (MayNameLocalPaths:
//   a private daemon's own user keeps full paths);
// - a message is cut to kMaxStatusMessageBytes, so that no request value echoed in it can grow
//   the status past what a client accepts in trailers.
// It also tells the connection gate of the daemon's own listeners (Authenticator::
// connection_gate) when each call on one of their connections begins and ends, with the call's
// authenticated TCP user (connection_gate.h: idle connections go first, caps per user).
#ifndef LIBREYOLO_SERVER_DAEMON_RPC_RPC_EDGE_H_
#define LIBREYOLO_SERVER_DAEMON_RPC_RPC_EDGE_H_

#include <grpcpp/support/server_interceptor.h>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/daemon/config/daemon_config.h"
#include "server/daemon/security/auth.h"

namespace libreyolo::daemon {

inline constexpr size_t kMaxStatusMessageBytes = 1024;

// Rewrites the daemon's configured directories (as configured, absolute and canonical) in a
// message to their short names: models_dir -> "models", datasets_dir -> "datasets", images_dir
// -> "images", store_dir -> "store", state_dir -> "state". Longest directory first, and only at
// a path boundary ("/srv/models2" is not "models" + "2").
class PathRedactor {
 public:
  explicit PathRedactor(const DaemonConfig& config);
  std::string Redact(std::string_view message) const;

 private:
  std::vector<std::pair<std::string, std::string>> prefixes_;  // (directory, short name)
};

// The message as sent: cut to kMaxStatusMessageBytes at a character boundary, with
// "… (N bytes)" when cut.
std::string CapStatusMessage(std::string_view message);

// The interceptor factory for grpc::ServerBuilder::experimental().SetInterceptorCreators.
// `config` and `auth` outlive the server.
std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> MakeRpcEdgeInterceptors(
    const DaemonConfig* config, const Authenticator* auth);

}  // namespace libreyolo::daemon

#endif  // LIBREYOLO_SERVER_DAEMON_RPC_RPC_EDGE_H_
