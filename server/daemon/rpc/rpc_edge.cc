#include "server/daemon/rpc/rpc_edge.h"

#include <google/protobuf/descriptor.h>
#include <grpcpp/server_context.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "common/render/terminal_text.h"
#include "server/daemon/rpc/request_validation.h"
#include "server/daemon/security/connection_gate.h"

namespace libreyolo::daemon {
namespace {

namespace fs = std::filesystem;

bool PathChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

// "/libreyolo.profiler.v1.ProfilerService/GetJob" -> "GetJob (libreyolo.profiler.v1.GetJobRequest)".
std::string DescribeMethod(const char* method) {
  std::string full = method == nullptr ? "" : method;
  const size_t slash = full.rfind('/');
  const std::string name = slash == std::string::npos ? full : full.substr(slash + 1);
  std::string dotted = absl::StrReplaceAll(full.substr(full.empty() ? 0 : 1), {{"/", "."}});
  const google::protobuf::MethodDescriptor* m =
      google::protobuf::DescriptorPool::generated_pool()->FindMethodByName(dotted);
  if (m == nullptr) return name;
  return absl::StrCat(name, " (", m->input_type()->full_name(), ")");
}

class RpcEdgeInterceptor final : public grpc::experimental::Interceptor {
 public:
  RpcEdgeInterceptor(grpc::experimental::ServerRpcInfo* info, const DaemonConfig* config,
                     const Authenticator* auth, const PathRedactor* redactor)
      : info_(info), config_(config), auth_(auth), redactor_(redactor) {}
  ~RpcEdgeInterceptor() override {
    if (serial_ != 0) gate_->CallEnded(serial_, completed_);
  }

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    using grpc::experimental::InterceptionHookPoints;
    using Type = grpc::experimental::ServerRpcInfo::Type;
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_INITIAL_METADATA)) {
      TellGate(methods);
    }
    // One request message per call on our RPCs: a null message after it was received means
    // the bytes did not parse.
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_MESSAGE) &&
        (info_->type() == Type::UNARY || info_->type() == Type::SERVER_STREAMING) &&
        methods->GetRecvMessage() == nullptr) {
      unparsable_ = true;
    }
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS)) {
      const grpc::Status s = methods->GetSendStatus();
      completed_ = s.error_code() != grpc::StatusCode::UNAUTHENTICATED;
      if (!s.ok()) methods->ModifySendStatus(Rewrite(s));
    }
    methods->Proceed();
  }

 private:
  grpc::Status Rewrite(const grpc::Status& s) const {
    if (unparsable_ && s.error_code() == grpc::StatusCode::INTERNAL) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          absl::StrCat("request: the bytes sent are not a valid ",
                                       DescribeMethod(info_->method()),
                                       " message (protobuf parse failed; use the generated stubs "
                                       "of proto/libreyolo/profiler/v1/profiler.proto)"));
    }
    std::string message = s.error_message();
    bool keep_paths = false;
    if (grpc::ServerContextBase* ctx = info_->server_context(); ctx != nullptr) {
      auto who = auth_->Identify(*ctx);
      keep_paths = who.ok() && MayNameLocalPaths(*config_, *who);
    }
    if (!keep_paths) message = redactor_->Redact(message);
    return grpc::Status(s.error_code(), CapStatusMessage(message), s.error_details());
  }

  // The connection gate (connection_gate.h) learns that a call of a connection of our own
  // listeners ("fd:<N>") began, and on TCP its authenticated user: the connection is busy until
  // the call ends (this interceptor's end), and from its first authenticated call it is charged
  // to that user, not to its address.
  void TellGate(grpc::experimental::InterceptorBatchMethods* methods) {
    ConnectionGate* gate = auth_->connection_gate();
    grpc::ServerContextBase* ctx = info_->server_context();
    if (gate == nullptr || ctx == nullptr || serial_ != 0) return;
    const std::string peer = ctx->peer();
    int fd = -1;
    if (!absl::StartsWith(peer, "fd:") || !absl::SimpleAtoi(peer.substr(3), &fd)) return;
    std::vector<std::string> authorization;
    if (auto* metadata = methods->GetRecvInitialMetadata(); metadata != nullptr) {
      auto [begin, end] = metadata->equal_range("authorization");
      for (auto it = begin; it != end; ++it) {
        authorization.emplace_back(it->second.data(), it->second.size());
      }
    }
    const absl::StatusOr<Identity> who = auth_->Identify(peer, authorization);
    gate_ = gate;
    serial_ = gate->CallStarted(fd, who.ok() && !who->unix_peer ? who->user : "");
  }

  grpc::experimental::ServerRpcInfo* info_;
  ConnectionGate* gate_ = nullptr;
  uint64_t serial_ = 0;       // the connection's, from the gate; 0: not one of our listeners'
  bool completed_ = false;    // the status sent was not UNAUTHENTICATED
  const DaemonConfig* config_;
  const Authenticator* auth_;
  const PathRedactor* redactor_;
  bool unparsable_ = false;
};

class RpcEdgeFactory final : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  RpcEdgeFactory(const DaemonConfig* config, const Authenticator* auth)
      : config_(config), auth_(auth), redactor_(*config) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override {
    return new RpcEdgeInterceptor(info, config_, auth_, &redactor_);
  }

 private:
  const DaemonConfig* config_;
  const Authenticator* auth_;
  PathRedactor redactor_;
};

}  // namespace

PathRedactor::PathRedactor(const DaemonConfig& config) {
  const std::pair<const std::string*, const char*> dirs[] = {
      {&config.models_dir, "models"},     {&config.datasets_dir, "datasets"},
      {&config.images_dir, "images"},     {&config.store_dir, "store"},
      {&config.state_dir, "state"}};
  for (const auto& [dir, name] : dirs) {
    if (dir->empty()) continue;
    std::error_code ec;
    std::vector<std::string> forms = {*dir, fs::absolute(*dir, ec).lexically_normal().string()};
    const fs::path canonical = fs::weakly_canonical(*dir, ec);
    if (!ec) forms.push_back(canonical.string());
    for (std::string f : forms) {
      while (f.size() > 1 && f.back() == '/') f.pop_back();
      if (f.empty() || f == "/" || f == ".") continue;
      prefixes_.emplace_back(f, name);
    }
  }
  // Longest first, so that a directory inside another (store inside state) wins.
  std::stable_sort(prefixes_.begin(), prefixes_.end(),
                   [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
}

std::string PathRedactor::Redact(std::string_view message) const {
  std::string out;
  out.reserve(message.size());
  for (size_t i = 0; i < message.size();) {
    bool replaced = false;
    // Only where a path can start: the message's start or after a non-path character.
    if (i == 0 || !(PathChar(message[i - 1]) || message[i - 1] == '/')) {
      for (const auto& [dir, name] : prefixes_) {
        if (message.substr(i, dir.size()) != dir) continue;
        const size_t end = i + dir.size();
        if (end < message.size() && (PathChar(message[end]) && message[end] != '.')) continue;
        out += name;
        i = end;
        replaced = true;
        break;
      }
    }
    if (!replaced) out += message[i++];
  }
  return out;
}

std::string CapStatusMessage(std::string_view message) {
  if (message.size() <= kMaxStatusMessageBytes) return std::string(message);
  return Excerpt(message, kMaxStatusMessageBytes - 32);
}

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> MakeRpcEdgeInterceptors(
    const DaemonConfig* config, const Authenticator* auth) {
  return std::make_unique<RpcEdgeFactory>(config, auth);
}

}  // namespace libreyolo::daemon
