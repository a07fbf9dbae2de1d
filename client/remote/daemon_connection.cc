#include "client/remote/daemon_connection.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "client/remote/job_watch.h"
#include "common/status/status_macros.h"

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
    ASSIGN_OR_RETURN(auto token, ReadSmallFile(*file, "--token-file"));
    t.token = std::string(absl::StripAsciiWhitespace(token));
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
      ASSIGN_OR_RETURN(o.pem_root_certs, ReadSmallFile(t.tls_ca_file, "--tls-ca"));
    }
    if (!t.tls_cert_file.empty()) {
      ASSIGN_OR_RETURN(auto cert, ReadSmallFile(t.tls_cert_file, "--tls-cert"));
      ASSIGN_OR_RETURN(auto key, ReadSmallFile(t.tls_key_file, "--tls-key"));
      o.pem_cert_chain = cert;
      o.pem_private_key = key;
    }
    creds = grpc::SslCredentials(o);
  }
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(64 << 20);
  args.SetMaxSendMessageSize(64 << 20);
  // After a daemon restart the channel must try again within seconds, not gRPC's default
  // backoff of up to two minutes (Reconnect paces the calls themselves).
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 250);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 250);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 2000);
  c->channel_ = grpc::CreateCustomChannel(t.address, creds, args);
  c->stub_ = v1::ProfilerService::NewStub(c->channel_);
  return c;
}

std::unique_ptr<DaemonConnection> DaemonConnection::WithStub(
    std::unique_ptr<v1::ProfilerService::StubInterface> stub, RemoteTarget target) {
  auto c = std::unique_ptr<DaemonConnection>(new DaemonConnection());
  c->target_ = std::move(target);
  c->stub_ = std::move(stub);
  return c;
}

std::unique_ptr<grpc::ClientContext> DaemonConnection::Context(std::chrono::seconds deadline) const {
  auto ctx = std::make_unique<grpc::ClientContext>();
  if (!target_.token.empty()) ctx->AddMetadata("authorization", "Bearer " + target_.token);
  if (deadline.count() > 0) ctx->set_deadline(std::chrono::system_clock::now() + deadline);
  return ctx;
}

Reconnect::Reconnect(DaemonConnection& connection) : connection_(&connection), budget_(300) {
  if (const char* env = std::getenv("LIBREYOLO_RECONNECT_TIMEOUT_S")) {
    int64_t seconds = 0;
    if (absl::SimpleAtoi(env, &seconds) && seconds >= 0 && seconds <= 86400) {
      budget_ = std::chrono::seconds(seconds);
    }
  }
}

bool Reconnect::ShouldRetry(const grpc::Status& s) {
  // CANCELLED that we did not ask for (no Ctrl-C) is a call caught in the daemon's shutdown:
  // gRPC cancels calls that arrive while the server stops. Both mean "try again later".
  const bool transient = s.error_code() == grpc::StatusCode::UNAVAILABLE ||
                         (s.error_code() == grpc::StatusCode::CANCELLED && !Interrupted());
  if (!transient || !connection_->reached()) return false;
  if (connection_->GoneReason().has_value()) return false;  // nobody will bring it back
  const auto now = std::chrono::steady_clock::now();
  if (failures_++ == 0) first_failure_ = now;
  if (now - first_failure_ >= budget_) return false;
  const int64_t ms = std::min<int64_t>(4000, int64_t{250} << std::min(failures_ - 1, 4));
  // Slept in small slices so that Ctrl-C (the job watch's flag) ends the wait promptly.
  for (int64_t slept = 0; slept < ms && !Interrupted(); slept += 50) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return !Interrupted();
}

absl::Status DaemonConnection::Error(const grpc::Status& s) const {
  if (s.ok()) return absl::OkStatus();
  const bool transient = s.error_code() == grpc::StatusCode::UNAVAILABLE ||
                         s.error_code() == grpc::StatusCode::CANCELLED;
  if (transient) {
    if (std::optional<std::string> gone = GoneReason()) {
      return absl::UnavailableError(absl::StrCat(*gone, " (", s.error_message(), ")"));
    }
  }
  return FromGrpc(s, address());
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
