#include "client/remote/daemon_connection.h"

#include <grpcpp/grpcpp.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace libreyolo::cli {
namespace {

std::optional<std::string> Env(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::string(v);
}

absl::StatusOr<std::string> ReadSmallFile(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(what, " ", path, ": cannot be read"));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

std::vector<FlagSpec> RemoteFlagSpecs() {
  return {
      {"remote", "HOST:PORT", "",
       "a libreyolod to use (also unix:/path; env LIBREYOLO_REMOTE); default: your private "
       "daemon, started on demand"},
      {"token-file", "FILE", "", "file holding the bearer token (env LIBREYOLO_TOKEN: the token)"},
      {"tls-ca", "FILE", "", "PEM CA that signed the daemon's certificate (env LIBREYOLO_TLS_CA)"},
      {"tls-cert", "FILE", "", "PEM client certificate, for daemons that require one"},
      {"tls-key", "FILE", "", "PEM key of --tls-cert"},
      {"insecure", "", "", "plaintext TCP (trusted networks only; the token travels in clear)"},
  };
}

absl::StatusOr<std::optional<RemoteTarget>> ResolveRemote(const ParsedArgs& a) {
  std::optional<std::string> address = a.Value("remote");
  if (!address) address = Env("LIBREYOLO_REMOTE");
  if (!address) return std::optional<RemoteTarget>();
  RemoteTarget t;
  t.address = *address;
  if (auto file = a.Value("token-file")) {
    auto token = ReadSmallFile(*file, "--token-file");
    if (!token.ok()) return token.status();
    t.token = std::string(absl::StripAsciiWhitespace(*token));
    if (t.token.empty()) return absl::InvalidArgumentError(absl::StrCat("--token-file ", *file, " is empty"));
  } else if (auto env = Env("LIBREYOLO_TOKEN")) {
    t.token = std::string(absl::StripAsciiWhitespace(*env));
  }
  t.tls_ca_file = a.ValueOr("tls-ca", Env("LIBREYOLO_TLS_CA").value_or(""));
  t.tls_cert_file = a.ValueOr("tls-cert", "");
  t.tls_key_file = a.ValueOr("tls-key", "");
  t.insecure = a.Switch("insecure");
  if (t.tls_cert_file.empty() != t.tls_key_file.empty()) {
    return absl::InvalidArgumentError("--tls-cert and --tls-key go together");
  }
  return std::optional<RemoteTarget>(t);
}

bool DaemonConnection::is_unix() const { return absl::StartsWith(target_.address, "unix:"); }

absl::StatusOr<std::unique_ptr<DaemonConnection>> DaemonConnection::Open(const RemoteTarget& t) {
  auto c = std::unique_ptr<DaemonConnection>(new DaemonConnection());
  c->target_ = t;
  std::shared_ptr<grpc::ChannelCredentials> creds;
  if (c->is_unix() || t.insecure) {
    creds = grpc::InsecureChannelCredentials();
  } else {
    grpc::SslCredentialsOptions o;
    if (!t.tls_ca_file.empty()) {
      auto ca = ReadSmallFile(t.tls_ca_file, "--tls-ca");
      if (!ca.ok()) return ca.status();
      o.pem_root_certs = *ca;
    }
    if (!t.tls_cert_file.empty()) {
      auto cert = ReadSmallFile(t.tls_cert_file, "--tls-cert");
      if (!cert.ok()) return cert.status();
      auto key = ReadSmallFile(t.tls_key_file, "--tls-key");
      if (!key.ok()) return key.status();
      o.pem_cert_chain = *cert;
      o.pem_private_key = *key;
    }
    creds = grpc::SslCredentials(o);
  }
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(64 << 20);
  args.SetMaxSendMessageSize(64 << 20);
  c->channel_ = grpc::CreateCustomChannel(t.address, creds, args);
  c->stub_ = v1::ProfilerService::NewStub(c->channel_);
  return c;
}

std::unique_ptr<grpc::ClientContext> DaemonConnection::Context(std::chrono::seconds deadline) const {
  auto ctx = std::make_unique<grpc::ClientContext>();
  if (!target_.token.empty()) ctx->AddMetadata("authorization", "Bearer " + target_.token);
  if (deadline.count() > 0) ctx->set_deadline(std::chrono::system_clock::now() + deadline);
  return ctx;
}

absl::Status FromGrpc(const grpc::Status& s, const std::string& address) {
  if (s.ok()) return absl::OkStatus();
  std::string msg = s.error_message();
  if (s.error_code() == grpc::StatusCode::UNAVAILABLE) {
    msg = absl::StrCat("cannot reach libreyolod at ", address, ": ", msg,
                       " (is it running? check --remote, and --tls-ca / --insecure for TCP)");
  } else if (s.error_code() == grpc::StatusCode::UNAUTHENTICATED) {
    msg = absl::StrCat(msg, " (daemon ", address, ")");
  }
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()), msg);
}

}  // namespace libreyolo::cli
