// Who is calling: bearer tokens on TCP (a tokens file the admin owns), the peer's uid on the
// Unix socket. Users see and cancel their own jobs; admins see all.
#ifndef LIBREYOLO_SERVER_DAEMON_SECURITY_AUTH_H_
#define LIBREYOLO_SERVER_DAEMON_SECURITY_AUTH_H_

#include <sys/types.h>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/daemon/security/tls_config.h"

namespace grpc {
class ServerContextBase;  // ServerContext (sync API) and CallbackServerContext both are one
class ServerCredentials;
}  // namespace grpc

namespace libreyolo::daemon {

class ConnectionGate;

struct Identity {
  std::string user;
  bool admin = false;
  bool unix_peer = false;    // came over the Unix socket
  std::optional<uid_t> uid;  // the peer's uid on the Unix socket
};

// The user names the daemon accepts (tokens file, `admins`): 1..256 bytes of letters, digits,
// _ - . @ (rpc.md, "Authentication"; 256 is ListJobs.owner's bound, so a filter can name any).
inline constexpr size_t kMaxUserNameBytes = 256;
bool IsValidUserName(absl::string_view user);

// The tokens file: one "<token> <user> [admin]" per line, '#' comments, blank lines ignored.
// A token may be given as "sha256:<64 hex>" so the file need not hold secrets in clear.
// INVALID_ARGUMENT names the line; the file must not be readable by group/others
// (FAILED_PRECONDITION saying to chmod 600) nor owned by a user other than root and the
// daemon's (CheckTokensFileOwner, token_checks.h).
class TokenTable {
 public:
  static absl::StatusOr<TokenTable> Load(const std::string& path);
  // The lines of a tokens file; `origin` (a file name) prefixes error messages.
  static absl::StatusOr<TokenTable> Parse(const std::vector<std::string>& lines,
                                          const std::string& origin = "tokens");
  static TokenTable FromLines(const std::vector<std::string>& lines);  // tests; aborts if bad
  // The identity of a bearer token (constant-time compare of SHA-256 digests), or nullopt.
  std::optional<Identity> Lookup(const std::string& token) const;
  size_t size() const { return entries_.size(); }
  // Each plaintext (not sha256:) token's line and length: the daemon refuses short ones
  // (token_checks.h, issue 40 A.10).
  struct PlaintextToken {
    size_t line = 0;
    size_t bytes = 0;
  };
  const std::vector<PlaintextToken>& plaintext_tokens() const { return plaintext_tokens_; }

 private:
  struct Entry {
    std::string sha256;  // raw 32 bytes
    std::string user;
    bool admin = false;
  };
  std::vector<Entry> entries_;
  std::vector<PlaintextToken> plaintext_tokens_;
};

// Maps a call to an identity. TCP: the "authorization: Bearer <token>" metadata (a missing or
// unknown token -> UNAUTHENTICATED). Unix socket connections are accepted by OwnListener,
// which records the peer uid of each connection by the connection's peer string ("fd:<N>" for
// a channel added with grpc::AddInsecureChannelFromFd). A Unix peer that also sends a bearer
// token is the token's user when the token is valid (still unix_peer with its uid); an invalid
// token there is ignored and the kernel-verified uid decides. Any other peer is UNAUTHENTICATED.
class Authenticator {
 public:
  Authenticator(TokenTable tokens, std::vector<std::string> admins);

  absl::StatusOr<Identity> Identify(const grpc::ServerContextBase& context) const;
  // The same decision from the call's peer string and its "authorization" metadata values.
  absl::StatusOr<Identity> Identify(const std::string& peer,
                                    const std::vector<std::string>& authorization) const;

  // OwnListener's side: a connection `peer` (ServerContext::peer() of its calls) is uid `uid`.
  void RecordUnixPeer(const std::string& peer, uid_t uid);
  void ForgetUnixPeer(const std::string& peer);
  // The daemon's own TCP listener's side: connection `peer` ("fd:<N>") came over TCP, so its
  // calls need a bearer token, as gRPC's own TCP connections' ("ipv4:...") do.
  void RecordTcpPeer(const std::string& peer);

  bool IsAdmin(const std::string& user) const;

  // The gate of the daemon's own listeners (OwnListener::Serve sets it), which the RPC edge
  // tells of each call: a connection is busy, and whose it is. Null when none is served.
  void set_connection_gate(ConnectionGate* gate) { gate_.store(gate); }
  ConnectionGate* connection_gate() const { return gate_.load(); }

  // SIGHUP: new tokens and admins for calls from now on (connections stay open).
  void Reload(TokenTable tokens, std::vector<std::string> admins);

 private:
  mutable std::mutex mu_;
  TokenTable tokens_;                // guarded by mu_
  std::vector<std::string> admins_;  // guarded by mu_
  std::map<std::string, uid_t> unix_peers_;
  std::set<std::string> tcp_peers_;
  std::map<uid_t, std::string> user_names_;  // resolved when a connection is recorded
  std::atomic<ConnectionGate*> gate_{nullptr};
};

// Server credentials from the TLS config (SslServerCredentials; client certs requested or
// required as configured), or InsecureServerCredentials when no cert is configured.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const TlsConfig& tls);

// Issue 37 §4: the Unix user a token user attaches to processes as (the daemon's
// attach_unix_users: "TOKEN_USER=UNIX_USER" entries). A token user has no Unix user on the host
// otherwise, so `libreyolo profile attach` refuses it.
inline constexpr size_t kMaxAttachUnixUsers = 1024;
struct AttachUnixUser {
  std::string token_user;
  std::string unix_user;
};
// One entry; INVALID_ARGUMENT saying what is wrong with it.
absl::StatusOr<AttachUnixUser> ParseAttachUnixUser(absl::string_view entry);
// The uid of `unix_user` in the password database: NOT_FOUND when there is none,
// FAILED_PRECONDITION for root (map an operator through the tokens file's `admin` instead).
absl::StatusOr<uid_t> AttachUnixUid(const std::string& unix_user);
// The uid `token_user` maps to: nullopt without an entry; an error (AttachUnixUid's) when its
// Unix user is gone from the host since the daemon checked it.
absl::StatusOr<std::optional<uid_t>> MappedUnixUid(const std::vector<std::string>& entries,
                                                   const std::string& token_user);

}  // namespace libreyolo::daemon

#endif  // LIBREYOLO_SERVER_DAEMON_SECURITY_AUTH_H_
