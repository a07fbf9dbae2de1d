// Caller identity against real in-process gRPC servers: TCP with bearer tokens, the Unix
// socket's peer uid, and TLS.
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "libreyolo/profiler/v1/profiler.grpc.pb.h"
#include "server/daemon/config/daemon_config.h"
#include "server/daemon/rpc/prometheus.h"
#include "server/daemon/security/auth.h"
#include "server/daemon/security/connection_gate.h"
#include "server/daemon/security/own_listener.h"
#include "tests/daemon/security_test_util.h"

namespace libreyolo::daemon {
namespace {

namespace fs = std::filesystem;
namespace v1 = ::libreyolo::profiler::v1;
using ::testing::HasSubstr;
using ::testing::Not;
using namespace testing_util;  // NOLINT: the shared test helpers

// ---- real gRPC servers -----------------------------------------------------------------------

// GetDaemonInfo answers who the Authenticator says the caller is. GetJob holds its call until
// Release(), then answers the same way (Job.owner), to test a call outliving its connection.
class WhoAmIService final : public v1::ProfilerService::Service {
 public:
  explicit WhoAmIService(const Authenticator* auth) : auth_(auth) {}
  grpc::Status GetDaemonInfo(grpc::ServerContext* context, const v1::GetDaemonInfoRequest*,
                             v1::DaemonInfo* info) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      peers_.push_back(context->peer());
    }
    absl::StatusOr<Identity> id = auth_->Identify(*context);
    if (!id.ok()) return ToGrpc(id.status());
    info->set_caller(id->user);
    info->set_caller_is_admin(id->admin);
    info->set_allows_local_paths(id->unix_peer);
    return grpc::Status::OK;
  }
  grpc::Status GetJob(grpc::ServerContext* context, const v1::GetJobRequest*,
                      v1::Job* job) override {
    {
      std::unique_lock<std::mutex> lock(mu_);
      held_peer_ = context->peer();
      changed_.notify_all();
      changed_.wait(lock, [this] { return released_; });
    }
    absl::StatusOr<Identity> id = auth_->Identify(*context);
    std::lock_guard<std::mutex> lock(mu_);
    held_result_ = id.ok() ? id->user : std::string(id.status().message());
    changed_.notify_all();
    if (!id.ok()) return ToGrpc(id.status());
    job->set_owner(id->user);
    return grpc::Status::OK;
  }

  std::vector<std::string> peers() {
    std::lock_guard<std::mutex> lock(mu_);
    return peers_;
  }
  // The peer of the held GetJob call, once it arrived.
  std::string WaitHeldPeer() {
    std::unique_lock<std::mutex> lock(mu_);
    changed_.wait_for(lock, std::chrono::seconds(10), [this] { return !held_peer_.empty(); });
    return held_peer_;
  }
  // Lets the held call go on; returns who it was identified as.
  std::string Release() {
    std::unique_lock<std::mutex> lock(mu_);
    released_ = true;
    changed_.notify_all();
    changed_.wait_for(lock, std::chrono::seconds(10), [this] { return !held_result_.empty(); });
    return held_result_;
  }

 private:
  static grpc::Status ToGrpc(const absl::Status& status) {
    return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                        std::string(status.message()));
  }
  const Authenticator* auth_;
  std::mutex mu_;
  std::condition_variable changed_;
  std::vector<std::string> peers_;
  std::string held_peer_;
  bool released_ = false;
  std::string held_result_;
};

struct CallResult {
  grpc::Status status;
  v1::DaemonInfo info;
};

CallResult CallWhoAmI(const std::shared_ptr<grpc::Channel>& channel,
                      const std::string& authorization = "") {
  auto stub = v1::ProfilerService::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  if (!authorization.empty()) context.AddMetadata("authorization", authorization);
  CallResult result;
  result.status = stub->GetDaemonInfo(&context, v1::GetDaemonInfoRequest(), &result.info);
  return result;
}

class TestServer {
 public:
  TestServer(const Authenticator* auth, std::shared_ptr<grpc::ServerCredentials> credentials)
      : service_(auth) {
    grpc::ServerBuilder builder;
    if (credentials != nullptr) {
      builder.AddListeningPort("127.0.0.1:0", std::move(credentials), &port_);
    }
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
  }
  ~TestServer() { server_->Shutdown(std::chrono::system_clock::now()); }
  grpc::Server* server() { return server_.get(); }
  WhoAmIService& service() { return service_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  WhoAmIService service_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

// A channel with a connection of its own (no subchannel shared with other channels).
grpc::ChannelArguments OwnConnection() {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return args;
}

TEST(SecureServerTest, TcpLoopbackWithTokens) {
  const Authenticator auth = MakeAuthenticator();
  TestServer server(&auth, grpc::InsecureServerCredentials());
  ASSERT_NE(server.server(), nullptr);
  auto channel = grpc::CreateChannel(server.address(), grpc::InsecureChannelCredentials());

  CallResult r = CallWhoAmI(channel);
  EXPECT_EQ(r.status.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(r.status.error_message(), HasSubstr("missing bearer token"));
  r = CallWhoAmI(channel, "Bearer wrong");
  EXPECT_EQ(r.status.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(r.status.error_message(), "unknown token");
  r = CallWhoAmI(channel, std::string("Bearer ") + kAliceToken);
  ASSERT_TRUE(r.status.ok()) << r.status.error_message();
  EXPECT_EQ(r.info.caller(), "alice");
  EXPECT_FALSE(r.info.caller_is_admin());
  EXPECT_FALSE(r.info.allows_local_paths());
}

TEST(OwnListenerTest, CallsCarryThePeerUid) {
  TempDir dir;
  const std::string path = dir.File("ly.sock");
  Authenticator auth = MakeAuthenticator({});
  TestServer server(&auth, nullptr);
  absl::StatusOr<std::unique_ptr<OwnListener>> listener = OwnListener::Bind(path, 0660);
  ASSERT_TRUE(listener.ok()) << listener.status();
  static ConnectionGate gate(ConnectionCaps{}, 0);  // outlives the listener's thread
  (*listener)->Serve(server.server(), &auth, &gate);

  struct stat info {};
  ASSERT_EQ(lstat(path.c_str(), &info), 0);
  EXPECT_TRUE(S_ISSOCK(info.st_mode));
  EXPECT_EQ(info.st_mode & 0777, 0660u);

  // Two connections at once, then one more after the first closed (its fd number may be reused).
  auto first = grpc::CreateChannel("unix:" + path, grpc::InsecureChannelCredentials());
  auto second = grpc::CreateCustomChannel("unix:" + path, grpc::InsecureChannelCredentials(),
                                          OwnConnection());
  for (const auto& channel : {first, second}) {
    CallResult r = CallWhoAmI(channel);
    ASSERT_TRUE(r.status.ok()) << r.status.error_message();
    EXPECT_EQ(r.info.caller(), OurUserName());
    EXPECT_EQ(r.info.caller_is_admin(), getuid() == 0);
    EXPECT_TRUE(r.info.allows_local_paths());  // = unix_peer in this test service
  }
  first.reset();
  CallResult r = CallWhoAmI(grpc::CreateChannel("unix:" + path, grpc::InsecureChannelCredentials()),
                            "Bearer tok-bob");
  ASSERT_TRUE(r.status.ok()) << r.status.error_message();
  EXPECT_EQ(r.info.caller(), "bob");  // a valid token wins over the uid
  r = CallWhoAmI(second, "Bearer not-a-token");
  ASSERT_TRUE(r.status.ok()) << r.status.error_message();
  EXPECT_EQ(r.info.caller(), OurUserName());  // an invalid one is ignored

  // Another daemon on the same path is refused while this one listens.
  absl::StatusOr<std::unique_ptr<OwnListener>> rival = OwnListener::Bind(path, 0660);
  EXPECT_EQ(rival.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(std::string(rival.status().message()),
              HasSubstr("another libreyolod listens on " + path));

  listener->reset();  // stops and removes the socket
  EXPECT_FALSE(fs::exists(path));
}

TEST(OwnListenerTest, AdminsByName) {
  TempDir dir;
  const std::string path = dir.File("ly.sock");
  Authenticator auth = MakeAuthenticator({OurUserName()});
  TestServer server(&auth, nullptr);
  absl::StatusOr<std::unique_ptr<OwnListener>> listener = OwnListener::Bind(path, 0600);
  ASSERT_TRUE(listener.ok()) << listener.status();
  static ConnectionGate gate(ConnectionCaps{}, 0);  // outlives the listener's thread
  (*listener)->Serve(server.server(), &auth, &gate);
  const CallResult r =
      CallWhoAmI(grpc::CreateChannel("unix:" + path, grpc::InsecureChannelCredentials()));
  ASSERT_TRUE(r.status.ok()) << r.status.error_message();
  EXPECT_TRUE(r.info.caller_is_admin());
  (*listener)->Stop();
  (*listener)->Stop();  // idempotent
}

// The uid is recorded under "fd:<N>"; descriptor numbers are reused after close. The design
// relies on gRPC keeping a connection's descriptor open while any call on it lives, so that a
// newer connection (maybe another user's) never shares the peer string of a running call.
TEST(OwnListenerTest, ADescriptorIsNotReusedWhileACallOnItLives) {
  TempDir dir;
  const std::string path = dir.File("ly.sock");
  Authenticator auth = MakeAuthenticator({});
  TestServer server(&auth, nullptr);
  absl::StatusOr<std::unique_ptr<OwnListener>> listener = OwnListener::Bind(path, 0600);
  ASSERT_TRUE(listener.ok()) << listener.status();
  static ConnectionGate gate(ConnectionCaps{}, 0);  // outlives the listener's thread
  (*listener)->Serve(server.server(), &auth, &gate);

  std::thread caller([&path] {
    auto channel = grpc::CreateCustomChannel("unix:" + path, grpc::InsecureChannelCredentials(),
                                             OwnConnection());
    auto stub = v1::ProfilerService::NewStub(channel);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(500));
    v1::Job job;
    EXPECT_EQ(stub->GetJob(&context, v1::GetJobRequest(), &job).error_code(),
              grpc::StatusCode::DEADLINE_EXCEEDED);
  });  // the caller gives up and closes its connection while the server still holds the call
  const std::string held_peer = server.service().WaitHeldPeer();
  caller.join();
  ASSERT_THAT(held_peer, ::testing::StartsWith("fd:"));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));

  for (int i = 0; i < 4; ++i) {
    const CallResult r = CallWhoAmI(grpc::CreateCustomChannel(
        "unix:" + path, grpc::InsecureChannelCredentials(), OwnConnection()));
    ASSERT_TRUE(r.status.ok()) << r.status.error_message();
  }
  const std::vector<std::string> peers = server.service().peers();
  EXPECT_EQ(peers.size(), 4u);
  EXPECT_THAT(peers, ::testing::Each(::testing::StartsWith("fd:")));
  EXPECT_THAT(peers, ::testing::Not(::testing::Contains(held_peer)));
  EXPECT_EQ(server.service().Release(), OurUserName());
}

TEST(OwnListenerTest, StaleSocketsAreReplacedAndBadPathsRefused) {
  TempDir dir;
  const std::string path = dir.File("stale.sock");
  {  // a socket file whose daemon died: bound, never unlinked
    const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::snprintf(address.sun_path, sizeof(address.sun_path), "%s", path.c_str());
    ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
    close(fd);
  }
  ASSERT_TRUE(fs::exists(path));
  absl::StatusOr<std::unique_ptr<OwnListener>> listener = OwnListener::Bind(path, 0660);
  ASSERT_TRUE(listener.ok()) << listener.status();
  EXPECT_EQ((*listener)->path(), path);
  listener->reset();

  WriteFile(dir.File("plain"), "x");
  listener = OwnListener::Bind(dir.File("plain"), 0660);
  EXPECT_EQ(listener.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(listener.status().message()), HasSubstr("is not a socket"));

  listener = OwnListener::Bind(dir.File("missing/ly.sock"), 0660);
  EXPECT_EQ(listener.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(listener.status().message()), HasSubstr("does not exist"));

  listener = OwnListener::Bind("/tmp/" + std::string(200, 'x'), 0660);
  EXPECT_EQ(listener.status().code(), absl::StatusCode::kInvalidArgument);
}

// BindTcp and the TLS port probe resolve alike and say alike that a port is taken.
TEST(OwnListenerTest, TcpAddressesTakenOrBadAreNamed) {
  absl::StatusOr<std::unique_ptr<OwnListener>> first =
      OwnListener::BindTcp("tcp:127.0.0.1:0", "127.0.0.1:0");
  ASSERT_TRUE(first.ok()) << first.status();
  const std::string port = std::to_string((*first)->port());
  ASSERT_NE(port, "0");
  const std::string taken = "127.0.0.1:" + port;

  absl::StatusOr<std::unique_ptr<OwnListener>> second = OwnListener::BindTcp("tcp:" + taken, taken);
  EXPECT_EQ(second.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(std::string(second.status().message()),
              HasSubstr("listen tcp:" + taken + ": address already in use"));
  const absl::Status probe = ProbeTcpPort("tcp:" + taken, taken);
  EXPECT_EQ(probe.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(probe.message(), second.status().message());

  EXPECT_TRUE(ProbeTcpPort("tcp:127.0.0.1:0", "127.0.0.1:0").ok());  // any free port
  first->reset();
  EXPECT_TRUE(ProbeTcpPort("tcp:" + taken, taken).ok());  // free again

  second = OwnListener::BindTcp("tcp:7000", "7000");
  EXPECT_EQ(second.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(second.status().message()), HasSubstr("expected HOST:PORT"));
  // What the probe cannot resolve is gRPC's to report when it binds.
  EXPECT_TRUE(ProbeTcpPort("tcp:7000", "7000").ok());
}

// ---- TLS -------------------------------------------------------------------------------------

// A CA, a server certificate for localhost / 127.0.0.1, a client certificate, and an unrelated
// second CA, made with the openssl CLI.
class TlsFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::system("openssl version > /dev/null 2>&1") != 0) GTEST_SKIP() << "no openssl CLI";
    WriteFile(dir_.File("ca.cnf"),
              "[req]\ndistinguished_name = dn\nprompt = no\n[dn]\nCN = libreyolo test CA\n"
              "[v3_ca]\nbasicConstraints = critical, CA:TRUE\n"
              "keyUsage = critical, keyCertSign, cRLSign\n"
              "subjectKeyIdentifier = hash\n");
    WriteFile(dir_.File("server.ext"),
              "basicConstraints = CA:FALSE\nkeyUsage = critical, digitalSignature\n"
              "extendedKeyUsage = serverAuth\nsubjectAltName = DNS:localhost, IP:127.0.0.1\n");
    WriteFile(dir_.File("client.ext"),
              "basicConstraints = CA:FALSE\nkeyUsage = critical, digitalSignature\n"
              "extendedKeyUsage = clientAuth\n");
    const std::string d = dir_.path() + "/";
    const std::string key = " -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
    auto ca = [&](const std::string& name) {
      return "openssl req -x509 -config " + d + "ca.cnf -extensions v3_ca" + key + " -keyout " + d +
             name + ".key -out " + d + name + ".pem -days 2";
    };
    auto leaf = [&](const std::string& name, const std::string& cn) {
      return "openssl req -new" + key + " -subj /CN=" + cn + " -keyout " + d + name + ".key -out " +
             d + name + ".csr && openssl x509 -req -in " + d + name + ".csr -CA " + d +
             "ca.pem -CAkey " + d + "ca.key -CAcreateserial -days 2 -extfile " + d + name +
             ".ext -out " + d + name + ".pem";
    };
    const std::string script = "set -e; (" + ca("ca") + " && " + ca("other_ca") + " && " +
                               leaf("server", "localhost") + " && " + leaf("client", "alice") +
                               ") > " + d + "openssl.log 2>&1";
    ASSERT_EQ(std::system(script.c_str()), 0) << ReadFile(d + "openssl.log");
  }

  std::string File(const std::string& name) const { return dir_.File(name); }

  std::shared_ptr<grpc::Channel> Channel(const std::string& address, const std::string& ca,
                                         bool with_client_cert) const {
    grpc::SslCredentialsOptions options;
    options.pem_root_certs = ReadFile(File(ca));
    if (with_client_cert) {
      options.pem_private_key = ReadFile(File("client.key"));
      options.pem_cert_chain = ReadFile(File("client.pem"));
    }
    grpc::ChannelArguments args;
    args.SetSslTargetNameOverride("localhost");
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // no connection shared between tests
    return grpc::CreateCustomChannel(address, grpc::SslCredentials(options), args);
  }

  TlsConfig Tls(bool client_ca, bool require) const {
    TlsConfig tls;
    tls.cert_file = File("server.pem");
    tls.key_file = File("server.key");
    if (client_ca) tls.client_ca_file = File("ca.pem");
    tls.require_client_cert = require;
    return tls;
  }

  TempDir dir_;
};

TEST_F(TlsFixture, ServerCertificateIsVerified) {
  const Authenticator auth = MakeAuthenticator();
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials =
      MakeServerCredentials(Tls(false, false));
  ASSERT_TRUE(credentials.ok()) << credentials.status();
  TestServer server(&auth, *credentials);
  ASSERT_NE(server.server(), nullptr);
  const std::string token = std::string("Bearer ") + kAliceToken;

  CallResult r = CallWhoAmI(Channel(server.address(), "ca.pem", false), token);
  ASSERT_TRUE(r.status.ok()) << r.status.error_message();
  EXPECT_EQ(r.info.caller(), "alice");
  // TLS does not replace the token.
  r = CallWhoAmI(Channel(server.address(), "ca.pem", false));
  EXPECT_EQ(r.status.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  // A client trusting another CA refuses the server.
  r = CallWhoAmI(Channel(server.address(), "other_ca.pem", false), token);
  EXPECT_EQ(r.status.error_code(), grpc::StatusCode::UNAVAILABLE) << r.status.error_message();
  // A plaintext client cannot talk to the TLS port.
  r = CallWhoAmI(grpc::CreateChannel(server.address(), grpc::InsecureChannelCredentials()), token);
  EXPECT_FALSE(r.status.ok());
}

TEST_F(TlsFixture, RequiredClientCertificate) {
  const Authenticator auth = MakeAuthenticator();
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials =
      MakeServerCredentials(Tls(true, true));
  ASSERT_TRUE(credentials.ok()) << credentials.status();
  TestServer server(&auth, *credentials);
  const std::string token = std::string("Bearer ") + kAliceToken;

  CallResult r = CallWhoAmI(Channel(server.address(), "ca.pem", false), token);
  EXPECT_EQ(r.status.error_code(), grpc::StatusCode::UNAVAILABLE) << r.status.error_message();
  r = CallWhoAmI(Channel(server.address(), "ca.pem", true), token);
  ASSERT_TRUE(r.status.ok()) << r.status.error_message();
  EXPECT_EQ(r.info.caller(), "alice");
}

TEST_F(TlsFixture, OptionalClientCertificate) {
  const Authenticator auth = MakeAuthenticator();
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials =
      MakeServerCredentials(Tls(true, false));
  ASSERT_TRUE(credentials.ok()) << credentials.status();
  TestServer server(&auth, *credentials);
  const std::string token = std::string("Bearer ") + kAliceToken;
  for (const bool with_cert : {false, true}) {
    const CallResult r = CallWhoAmI(Channel(server.address(), "ca.pem", with_cert), token);
    EXPECT_TRUE(r.status.ok()) << with_cert << ": " << r.status.error_message();
  }
}

TEST_F(TlsFixture, CredentialErrorsNameTheFile) {
  TlsConfig tls = Tls(false, false);
  tls.cert_file = File("nope.pem");
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials = MakeServerCredentials(tls);
  EXPECT_EQ(credentials.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(credentials.status().message()), HasSubstr(File("nope.pem")));

  tls = Tls(false, false);
  tls.key_file = File("client.key");  // not the server certificate's key
  credentials = MakeServerCredentials(tls);
  EXPECT_EQ(credentials.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(credentials.status().message()), HasSubstr("is not the key of"));

  tls = Tls(false, false);
  tls.cert_file = File("ca.cnf");  // not PEM
  credentials = MakeServerCredentials(tls);
  EXPECT_EQ(credentials.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(credentials.status().message()), HasSubstr("no PEM certificate"));

  tls = Tls(true, true);
  tls.client_ca_file = File("missing-ca.pem");
  credentials = MakeServerCredentials(tls);
  EXPECT_EQ(credentials.status().code(), absl::StatusCode::kNotFound);

  EXPECT_TRUE(MakeServerCredentials(TlsConfig{}).ok());  // insecure

  // Validation reads the same files.
  DaemonConfig config;
  config.listen = {"tcp:127.0.0.1:0"};
  config.tokens_file = File("tokens");
  config.tls = Tls(true, true);
  EXPECT_TRUE(ValidateDaemonConfig(config).ok()) << ValidateDaemonConfig(config);
}

}  // namespace
}  // namespace libreyolo::daemon
