// The daemon's security layer: configuration and flags, bearer tokens, caller identity over TCP,
// the Unix socket and TLS (against real in-process gRPC servers), and the Prometheus output.
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
#include "server/daemon/auth.h"
#include "server/daemon/daemon_config.h"
#include "server/daemon/prometheus.h"
#include "server/daemon/unix_listener.h"

namespace libreyolo::daemon {
namespace {

namespace fs = std::filesystem;
namespace v1 = ::libreyolo::profiler::v1;
using ::testing::HasSubstr;
using ::testing::Not;

// ---- helpers --------------------------------------------------------------------------------

class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "lysec.XXXXXX").string();
    const char* made = mkdtemp(pattern.data());
    EXPECT_NE(made, nullptr);
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  std::string File(const std::string& name) const { return (path_ / name).string(); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

void WriteFile(const std::string& path, const std::string& text, mode_t mode = 0600) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  ASSERT_EQ(chmod(path.c_str(), mode), 0) << path;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string OurUserName() {
  const passwd* entry = getpwuid(getuid());
  return entry != nullptr ? entry->pw_name : "uid:" + std::to_string(getuid());
}

// ---- configuration ---------------------------------------------------------------------------

constexpr char kFullConfig[] = R"(# every key
listen: ["tcp:0.0.0.0:50051", "unix:/run/libreyolod/libreyolod.sock"]
state_dir: /srv/state
store_dir: /srv/store
models_dir: /srv/models
datasets_dir: /srv/datasets
images_dir: /srv/images
devices: ["0", "cpu"]
tls:
  cert: /etc/ly/server.pem
  key: /etc/ly/server.key
  client_ca: /etc/ly/ca.pem
  require_client_cert: true
tokens_file: /etc/ly/tokens
admins: [alice, bob]
insecure_tcp: yes
allow_local_paths: true
unix_socket_mode: 0640
limits:
  max_queue_length: 11
  max_jobs_per_user: 12
  max_steps: 13
  max_runs: 14
  max_repeat: 15
  max_batch: 16
  max_imgsz: 17
  max_inline_image_bytes: 18
  max_artifact_bytes: 8589934592
  max_watchers: 20
retention:
  max_age_hours: 21
  max_jobs: 22
metrics_textfile: /var/lib/node_exporter/libreyolod.prom
drain_timeout_s: 23
cpu_threads: 24
)";

TEST(DaemonConfigTest, LoadsEveryKey) {
  TempDir dir;
  WriteFile(dir.File("d.yaml"), kFullConfig);
  absl::StatusOr<DaemonConfig> loaded = LoadDaemonConfig(dir.File("d.yaml"));
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  const DaemonConfig& c = *loaded;
  EXPECT_THAT(c.listen,
              ::testing::ElementsAre("tcp:0.0.0.0:50051", "unix:/run/libreyolod/libreyolod.sock"));
  EXPECT_EQ(c.state_dir, "/srv/state");
  EXPECT_EQ(c.store_dir, "/srv/store");
  EXPECT_EQ(c.models_dir, "/srv/models");
  EXPECT_EQ(c.datasets_dir, "/srv/datasets");
  EXPECT_EQ(c.images_dir, "/srv/images");
  EXPECT_THAT(c.devices, ::testing::ElementsAre("0", "cpu"));
  EXPECT_EQ(c.tls.cert_file, "/etc/ly/server.pem");
  EXPECT_EQ(c.tls.key_file, "/etc/ly/server.key");
  EXPECT_EQ(c.tls.client_ca_file, "/etc/ly/ca.pem");
  EXPECT_TRUE(c.tls.require_client_cert);
  EXPECT_EQ(c.tokens_file, "/etc/ly/tokens");
  EXPECT_THAT(c.admins, ::testing::ElementsAre("alice", "bob"));
  EXPECT_TRUE(c.insecure_tcp);
  EXPECT_TRUE(c.allow_local_paths);
  EXPECT_EQ(c.unix_socket_mode, 0640);
  EXPECT_EQ(c.limits.max_queue_length, 11);
  EXPECT_EQ(c.limits.max_jobs_per_user, 12);
  EXPECT_EQ(c.limits.max_steps, 13);
  EXPECT_EQ(c.limits.max_runs, 14);
  EXPECT_EQ(c.limits.max_repeat, 15);
  EXPECT_EQ(c.limits.max_batch, 16);
  EXPECT_EQ(c.limits.max_imgsz, 17);
  EXPECT_EQ(c.limits.max_inline_image_bytes, 18);
  EXPECT_EQ(c.limits.max_artifact_bytes, int64_t{8} << 30);
  EXPECT_EQ(c.limits.max_watchers, 20);
  EXPECT_EQ(c.retention.max_age_hours, 21);
  EXPECT_EQ(c.retention.max_jobs, 22);
  EXPECT_EQ(c.metrics_textfile, "/var/lib/node_exporter/libreyolod.prom");
  EXPECT_EQ(c.drain_timeout_s, 23);
  EXPECT_EQ(c.cpu_threads, 24);
}

TEST(DaemonConfigTest, EmptyFileAndEmptySectionsKeepDefaults) {
  TempDir dir;
  WriteFile(dir.File("empty.yaml"), "# nothing\n");
  absl::StatusOr<DaemonConfig> empty = LoadDaemonConfig(dir.File("empty.yaml"));
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->limits.max_batch, 256);
  WriteFile(dir.File("sections.yaml"), "limits:\nretention:\ntls:\n");
  absl::StatusOr<DaemonConfig> sections = LoadDaemonConfig(dir.File("sections.yaml"));
  ASSERT_TRUE(sections.ok()) << sections.status();
  EXPECT_EQ(sections->retention.max_jobs, 1000);
  EXPECT_EQ(sections->unix_socket_mode, 0660);
}

absl::Status LoadText(const std::string& text) {
  TempDir dir;
  WriteFile(dir.File("c.yaml"), text);
  return LoadDaemonConfig(dir.File("c.yaml")).status();
}

TEST(DaemonConfigTest, ErrorsNameTheKeyPath) {
  struct Case {
    const char* yaml;
    const char* message;
  } cases[] = {
      {"limits:\n  max_batch: many\n", "limits.max_batch: expected an integer (line 2)"},
      {"limits:\n  max_batch: 1.5\n", "limits.max_batch: expected an integer"},
      {"limits:\n  max_bacth: 8\n", "limits.max_bacth: unknown key"},
      {"retention:\n  max_jobs: [1]\n", "retention.max_jobs: expected an integer"},
      {"limits:\n  max_queue_length: 5000000000\n", "limits.max_queue_length: 5000000000 is out"},
      {"tls:\n  cert_file: x\n", "tls.cert_file: unknown key"},
      {"tls:\n  require_client_cert: maybe\n", "tls.require_client_cert: expected true or false"},
      {"tls: yes\n", "tls: expected a mapping"},
      {"listen: unix:/x\n", "listen: expected a list of strings"},
      {"listen: [unix:/x, [a]]\n", "listen[1]: expected a string"},
      {"state_dir: {a: 1}\n", "state_dir: expected a string"},
      {"insecure_tcp: 2\n", "insecure_tcp: expected true or false"},
      {"unix_socket_mode: 0999\n", "unix_socket_mode: expected an octal mode"},
      {"bogus: 1\n", "bogus: unknown key"},
      {"cpu_threads: 1\ncpu_threads: 2\n", "cpu_threads: duplicate key"},
      {"- a\n- b\n", "the configuration: expected a mapping"},
      {"limits: {max_batch: 1\n", "line"},
  };
  for (const Case& c : cases) {
    const absl::Status status = LoadText(c.yaml);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << c.yaml;
    EXPECT_THAT(std::string(status.message()), HasSubstr(c.message)) << c.yaml;
    EXPECT_THAT(std::string(status.message()), HasSubstr("c.yaml")) << c.yaml;
  }
}

TEST(DaemonConfigTest, ModesAreOctalHoweverSpelled) {
  for (const char* spelling : {"0640", "640", "0o640", "\"0640\""}) {
    TempDir dir;
    WriteFile(dir.File("m.yaml"), std::string("unix_socket_mode: ") + spelling + "\n");
    absl::StatusOr<DaemonConfig> c = LoadDaemonConfig(dir.File("m.yaml"));
    ASSERT_TRUE(c.ok()) << spelling << ": " << c.status();
    EXPECT_EQ(c->unix_socket_mode, 0640) << spelling;
  }
}

TEST(DaemonConfigTest, MissingFileIsNotFound) {
  const absl::StatusOr<DaemonConfig> c = LoadDaemonConfig("/nonexistent/libreyolod.yaml");
  EXPECT_EQ(c.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("/nonexistent/libreyolod.yaml"));
  TempDir dir;
  const absl::StatusOr<DaemonConfig> directory = LoadDaemonConfig(dir.path().string());
  EXPECT_EQ(directory.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(directory.status().message()), HasSubstr("not a regular file"));
}

TEST(DaemonFlagsTest, FlagsOverrideTheFile) {
  TempDir dir;
  WriteFile(dir.File("d.yaml"), kFullConfig);
  absl::StatusOr<DaemonConfig> c = LoadDaemonConfig(dir.File("d.yaml"));
  ASSERT_TRUE(c.ok());
  const std::vector<std::string> args = {
      "--config",
      "/etc/x.yaml",
      "--listen",
      "unix:/tmp/a.sock",
      "--listen=127.0.0.1:5",
      "--state-dir=/s",
      "--store-dir",
      "/st",
      "--models-dir",
      "/m",
      "--datasets-dir",
      "/d",
      "--images-dir",
      "/i",
      "--device",
      "cpu",
      "--device=1",
      "--tls-cert",
      "/c.pem",
      "--tls-key=/k.pem",
      "--tls-client-ca",
      "/ca.pem",
      "--require-client-cert=false",
      "--tokens-file",
      "/t",
      "--admin",
      "carol",
      "--insecure-tcp=false",
      "--allow-local-paths=0",
      "--unix-socket-mode",
      "600",
      "--max-queue-length=1",
      "--max-jobs-per-user",
      "2",
      "--max-batch=3",
      "--max-steps",
      "4",
      "--max-runs=5",
      "--metrics-textfile",
      "/m.prom",
      "--drain-timeout=90s",
      "--threads",
      "7",
  };
  absl::StatusOr<FlagParseResult> result = ApplyDaemonFlags(args, &*c);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_FALSE(result->help);
  EXPECT_EQ(result->config_file, "/etc/x.yaml");
  EXPECT_THAT(c->listen, ::testing::ElementsAre("unix:/tmp/a.sock", "127.0.0.1:5"));
  EXPECT_EQ(c->state_dir, "/s");
  EXPECT_EQ(c->store_dir, "/st");
  EXPECT_EQ(c->models_dir, "/m");
  EXPECT_EQ(c->datasets_dir, "/d");
  EXPECT_EQ(c->images_dir, "/i");
  EXPECT_THAT(c->devices, ::testing::ElementsAre("cpu", "1"));
  EXPECT_EQ(c->tls.cert_file, "/c.pem");
  EXPECT_EQ(c->tls.key_file, "/k.pem");
  EXPECT_EQ(c->tls.client_ca_file, "/ca.pem");
  EXPECT_FALSE(c->tls.require_client_cert);
  EXPECT_EQ(c->tokens_file, "/t");
  EXPECT_THAT(c->admins, ::testing::ElementsAre("carol"));
  EXPECT_FALSE(c->insecure_tcp);
  EXPECT_FALSE(c->allow_local_paths);
  EXPECT_EQ(c->unix_socket_mode, 0600);
  EXPECT_EQ(c->limits.max_queue_length, 1);
  EXPECT_EQ(c->limits.max_jobs_per_user, 2);
  EXPECT_EQ(c->limits.max_batch, 3);
  EXPECT_EQ(c->limits.max_steps, 4);
  EXPECT_EQ(c->limits.max_runs, 5);
  EXPECT_EQ(c->metrics_textfile, "/m.prom");
  EXPECT_EQ(c->drain_timeout_s, 90);
  EXPECT_EQ(c->cpu_threads, 7);
  EXPECT_EQ(c->limits.max_imgsz, 17);  // untouched by flags
}

TEST(DaemonFlagsTest, SwitchesAndHelp) {
  DaemonConfig c;
  absl::StatusOr<FlagParseResult> result =
      ApplyDaemonFlags({"--insecure-tcp", "--allow-local-paths", "--require-client-cert"}, &c);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(c.insecure_tcp);
  EXPECT_TRUE(c.allow_local_paths);
  EXPECT_TRUE(c.tls.require_client_cert);
  EXPECT_FALSE(result->help);
  result = ApplyDaemonFlags({"--help"}, &c);
  ASSERT_TRUE(result.ok());
  EXPECT_TRUE(result->help);
}

TEST(DaemonFlagsTest, BadArgumentsAreRefusedWithAHint) {
  struct Case {
    std::vector<std::string> args;
    const char* message;
  } cases[] = {
      {{"max_batch=8"}, "flags start with --, e.g. --max-batch=8"},
      {{"serve"}, "unexpected argument 'serve'"},
      {{"--max-bacth=8"}, "unknown flag --max-bacth"},
      {{"--max-batch"}, "--max-batch needs a value"},
      {{"--max-batch", "big"}, "--max-batch: expected an integer, got 'big'"},
      {{"--max-queue-length=99999999999"}, "--max-queue-length: 99999999999 is out of range"},
      {{"--insecure-tcp=perhaps"}, "--insecure-tcp: expected true or false"},
      {{"--unix-socket-mode", "rw"}, "--unix-socket-mode: expected an octal mode"},
      {{"--listen="}, "--listen: empty value"},
  };
  for (const Case& c : cases) {
    DaemonConfig config;
    const absl::StatusOr<FlagParseResult> result = ApplyDaemonFlags(c.args, &config);
    EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument) << c.args[0];
    EXPECT_THAT(std::string(result.status().message()), HasSubstr(c.message)) << c.args[0];
  }
}

// deploy.md promises a flag for every config key: the help names the key next to its flag, and
// a flag sets the same field as the key (checked on every limit and retention key).
TEST(DaemonFlagsTest, EveryConfigKeyHasAFlag) {
  const std::vector<std::string> keys = DaemonConfigKeyPaths();
  ASSERT_GT(keys.size(), 25u);
  const std::string help = DaemonFlagsHelp();
  for (const std::string& key : keys) {
    const std::string flag = DaemonFlagForKey(key);
    EXPECT_FALSE(flag.empty()) << key << " has no flag";
    EXPECT_NE(help.find(flag), std::string::npos) << flag;
    EXPECT_NE(help.find("(" + key + ")"), std::string::npos) << key;
  }
  for (const char* key : {"limits.max_repeat", "limits.max_imgsz", "limits.max_watchers",
                          "limits.max_artifact_bytes", "limits.max_inline_image_bytes",
                          "limits.max_queue_length", "retention.max_jobs",
                          "retention.max_age_hours"}) {
    const std::string flag = DaemonFlagForKey(key);
    ASSERT_FALSE(flag.empty()) << key;
    DaemonConfig from_flag;
    ASSERT_TRUE(ApplyDaemonFlags({flag + "=7"}, &from_flag).ok()) << flag;
    const std::string path(key);
    const size_t dot = path.find('.');
    TempDir dir;
    WriteFile(dir.File("k.yaml"),
              path.substr(0, dot) + ":\n  " + path.substr(dot + 1) + ": 7\n");
    auto from_file = LoadDaemonConfig(dir.File("k.yaml"));
    ASSERT_TRUE(from_file.ok()) << from_file.status();
    EXPECT_EQ(from_flag.limits.max_repeat, from_file->limits.max_repeat) << key;
    EXPECT_EQ(from_flag.limits.max_imgsz, from_file->limits.max_imgsz) << key;
    EXPECT_EQ(from_flag.limits.max_watchers, from_file->limits.max_watchers) << key;
    EXPECT_EQ(from_flag.limits.max_artifact_bytes, from_file->limits.max_artifact_bytes) << key;
    EXPECT_EQ(from_flag.limits.max_inline_image_bytes, from_file->limits.max_inline_image_bytes)
        << key;
    EXPECT_EQ(from_flag.limits.max_queue_length, from_file->limits.max_queue_length) << key;
    EXPECT_EQ(from_flag.retention.max_jobs, from_file->retention.max_jobs) << key;
    EXPECT_EQ(from_flag.retention.max_age_hours, from_file->retention.max_age_hours) << key;
  }
}

TEST(DaemonFlagsTest, HelpDocumentsEveryFlag) {
  const std::string help = DaemonFlagsHelp();
  for (const char* flag : {"--config FILE",
                           "--listen ADDR",
                           "--state-dir",
                           "--store-dir",
                           "--models-dir",
                           "--datasets-dir",
                           "--images-dir",
                           "--device D",
                           "--tls-cert",
                           "--tls-key",
                           "--tls-client-ca",
                           "--require-client-cert",
                           "--tokens-file",
                           "--admin USER",
                           "--insecure-tcp",
                           "--allow-local-paths",
                           "--unix-socket-mode OCTAL",
                           "--max-queue-length",
                           "--max-jobs-per-user",
                           "--max-batch",
                           "--max-steps",
                           "--max-runs",
                           "--metrics-textfile",
                           "--drain-timeout",
                           "--threads",
                           "--help"}) {
    EXPECT_THAT(help, HasSubstr(flag));
  }
  // Every flag the parser accepts is documented, and every documented one is accepted.
  std::istringstream lines(help);
  std::string line;
  int documented = 0;
  while (std::getline(lines, line)) {
    if (line.rfind("  --", 0) != 0) continue;
    ++documented;
    std::string name = line.substr(2, line.find(' ', 2) - 2);
    DaemonConfig c;
    std::vector<std::string> args = {name};
    if (name != "--help" && name != "--insecure-tcp" && name != "--allow-local-paths" &&
        name != "--require-client-cert") {
      args.push_back(name == "--unix-socket-mode" ? "600" : "1");
    }
    EXPECT_TRUE(ApplyDaemonFlags(args, &c).ok()) << name;
  }
  EXPECT_EQ(documented, 34);
}

TEST(DaemonConfigValidateTest, AcceptsAUnixOnlyDaemon) {
  DaemonConfig c;
  c.listen = {"unix:/run/libreyolod/libreyolod.sock"};
  EXPECT_TRUE(ValidateDaemonConfig(c).ok()) << ValidateDaemonConfig(c);
}

TEST(DaemonConfigValidateTest, MessagesNameTheKeyAndTheWayOut) {
  auto message = [](const DaemonConfig& c) {
    return std::string(ValidateDaemonConfig(c).message());
  };
  DaemonConfig c;
  EXPECT_THAT(message(c), HasSubstr("no listen address"));
  EXPECT_THAT(message(c), HasSubstr("--listen"));

  c.listen = {"tcp:0.0.0.0:50051"};
  EXPECT_THAT(message(c),
              HasSubstr("listen tcp:0.0.0.0:50051 without TLS: set tls.cert/tls.key, or "
                        "--insecure-tcp for a trusted network"));
  EXPECT_THAT(message(c), HasSubstr("set tokens_file (--tokens-file)"));
  c.insecure_tcp = true;
  c.tokens_file = "/etc/ly/tokens";
  EXPECT_TRUE(ValidateDaemonConfig(c).ok()) << message(c);

  DaemonConfig bad = c;
  bad.listen = {"0.0.0.0"};
  EXPECT_THAT(message(bad), HasSubstr("listen '0.0.0.0': expected unix:/path, tcp:HOST:PORT"));
  bad = c;
  bad.tls.cert_file = "/nonexistent/cert.pem";
  EXPECT_THAT(message(bad), HasSubstr("tls.cert is set but tls.key is not"));
  EXPECT_THAT(message(bad), HasSubstr("tls.cert /nonexistent/cert.pem: cannot read"));
  bad = c;
  bad.tls.require_client_cert = true;
  EXPECT_THAT(message(bad), HasSubstr("tls.require_client_cert needs tls.client_ca"));
  bad = c;
  bad.limits.max_batch = 0;
  bad.limits.max_queue_length = -1;
  EXPECT_THAT(message(bad), HasSubstr("limits.max_batch (--max-batch) must be positive, got 0"));
  EXPECT_THAT(message(bad), HasSubstr("limits.max_queue_length (--max-queue-length) must be"));
  bad = c;
  bad.retention.max_jobs = -1;
  bad.drain_timeout_s = -5;
  EXPECT_THAT(message(bad), HasSubstr("retention.max_jobs must be 0 or more"));
  EXPECT_THAT(message(bad), HasSubstr("drain_timeout_s (--drain-timeout)"));
  bad = c;
  bad.devices = {"gpu0", "1", "1"};
  EXPECT_THAT(message(bad), HasSubstr("devices: 'gpu0' is not a device"));
  EXPECT_THAT(message(bad), HasSubstr("devices: '1' is listed twice"));
  bad = c;
  bad.unix_socket_mode = 0066;
  EXPECT_THAT(message(bad), HasSubstr("unix_socket_mode: the owner needs read and write"));
  bad = c;
  bad.state_dir.clear();
  EXPECT_THAT(message(bad), HasSubstr("state_dir is empty"));
}

TEST(DaemonConfigValidateTest, ParsesListenAddresses) {
  struct Case {
    const char* address;
    bool ok;
    bool unix_socket;
    const char* target;
  } cases[] = {
      {"unix:/run/x.sock", true, true, "/run/x.sock"},
      {"tcp:0.0.0.0:50051", true, false, "0.0.0.0:50051"},
      {"localhost:1", true, false, "localhost:1"},
      {"[::1]:50051", true, false, "[::1]:50051"},
      {"tcp:[::]:0", true, false, "[::]:0"},
      {"unix:", false, false, ""},
      {"::1:50051", false, false, ""},
      {"host:http", false, false, ""},
      {"host:70000", false, false, ""},
      {":50051", false, false, ""},
  };
  for (const Case& c : cases) {
    const absl::StatusOr<ListenAddress> parsed = ParseListenAddress(c.address);
    ASSERT_EQ(parsed.ok(), c.ok) << c.address;
    if (!c.ok) continue;
    EXPECT_EQ(parsed->unix_socket, c.unix_socket) << c.address;
    EXPECT_EQ(parsed->target, c.target) << c.address;
  }
}

// ---- tokens ----------------------------------------------------------------------------------

constexpr char kAliceToken[] = "alice-secret-token-0123456789";
// A well-formed (made-up) digest.
constexpr char kSomeDigest[] =
    "sha256:9dbf8d9a3ba9bd4ae7c6d52e7a1f8f4f6c47cb6b0ab0c8d2b4da3bfbb4b2c0d1";

TEST(TokenTableTest, PlainAndSha256Tokens) {
  TempDir dir;
  // sha256 of "bob-token", computed by the openssl CLI so the test does not trust our code.
  const std::string digest_file = dir.File("digest");
  ASSERT_EQ(
      std::system(("printf %s bob-token | openssl dgst -sha256 -r | cut -d' ' -f1 > " + digest_file)
                      .c_str()),
      0);
  std::string digest = ReadFile(digest_file);
  digest.erase(digest.find_last_not_of("\n ") + 1);
  ASSERT_EQ(digest.size(), 64u);
  const TokenTable table = TokenTable::FromLines({
      "# comment",
      "",
      std::string(kAliceToken) + " alice",
      "  sha256:" + digest + "\tbob admin   # the on-call admin",
  });
  EXPECT_EQ(table.size(), 2u);
  std::optional<Identity> alice = table.Lookup(kAliceToken);
  ASSERT_TRUE(alice.has_value());
  EXPECT_EQ(alice->user, "alice");
  EXPECT_FALSE(alice->admin);
  std::optional<Identity> bob = table.Lookup("bob-token");
  ASSERT_TRUE(bob.has_value());
  EXPECT_EQ(bob->user, "bob");
  EXPECT_TRUE(bob->admin);
  EXPECT_FALSE(table.Lookup("bob-token ").has_value());
  EXPECT_FALSE(table.Lookup(digest).has_value());
  EXPECT_FALSE(table.Lookup("sha256:" + digest).has_value());
  EXPECT_FALSE(table.Lookup("").has_value());
}

TEST(TokenTableTest, BadLinesNameTheLine) {
  struct Case {
    std::vector<std::string> lines;
    const char* message;
  } cases[] = {
      {{"# c", "lonely"}, "line 2: expected '<token> <user> [admin]'"},
      {{"a b admin extra"}, "line 1: expected '<token> <user> [admin]'"},
      {{"a b root"}, "line 1: third field must be 'admin', got 'root'"},
      {{"sha256:abcd alice"}, "line 1: a sha256: token needs 64 hex digits"},
      {{std::string(kSomeDigest).replace(7, 1, "x") + " bob"}, "needs 64 hex digits"},
      {{"tok al/ice"}, "line 1: user 'al/ice'"},
      {{"tok1 alice", "", "tok2 bob", "tok1 carol"}, "line 4: duplicate token (same as line 1)"},
  };
  for (const Case& c : cases) {
    const absl::StatusOr<TokenTable> table = TokenTable::Parse(c.lines, "tokens");
    EXPECT_EQ(table.status().code(), absl::StatusCode::kInvalidArgument) << c.message;
    EXPECT_THAT(std::string(table.status().message()), HasSubstr(c.message));
  }
}

TEST(TokenTableTest, PlainAndDigestOfTheSameTokenAreDuplicates) {
  TempDir dir;
  ASSERT_EQ(
      std::system(
          ("printf %s tok | openssl dgst -sha256 -r | cut -d' ' -f1 > " + dir.File("d")).c_str()),
      0);
  std::string digest = ReadFile(dir.File("d"));
  digest.erase(digest.find_last_not_of("\n ") + 1);
  const absl::StatusOr<TokenTable> table =
      TokenTable::Parse({"tok alice", "sha256:" + digest + " bob"});
  EXPECT_THAT(std::string(table.status().message()), HasSubstr("line 2: duplicate token"));
}

TEST(TokenTableTest, LoadChecksPermissions) {
  TempDir dir;
  const std::string path = dir.File("tokens");
  WriteFile(path, "# tokens\ntok-a alice\ntok-b bob admin\n", 0644);
  absl::StatusOr<TokenTable> table = TokenTable::Load(path);
  EXPECT_EQ(table.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(table.status().message()), HasSubstr("chmod 600 " + path));
  EXPECT_THAT(std::string(table.status().message()), HasSubstr("0644"));
  ASSERT_EQ(chmod(path.c_str(), 0640), 0);
  EXPECT_EQ(TokenTable::Load(path).status().code(), absl::StatusCode::kFailedPrecondition);

  ASSERT_EQ(chmod(path.c_str(), 0600), 0);
  table = TokenTable::Load(path);
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_EQ(table->size(), 2u);
  EXPECT_TRUE(table->Lookup("tok-b")->admin);

  WriteFile(path, "tok-a alice\nbroken\n", 0400);
  table = TokenTable::Load(path);
  EXPECT_EQ(table.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(table.status().message()), HasSubstr(path + " line 2"));

  EXPECT_EQ(TokenTable::Load(dir.File("none")).status().code(), absl::StatusCode::kNotFound);
}

// ---- Authenticator decisions -----------------------------------------------------------------

Authenticator MakeAuthenticator(std::vector<std::string> admins = {"carol"}) {
  return Authenticator(TokenTable::FromLines({std::string(kAliceToken) + " alice",
                                              "tok-bob bob admin", "tok-carol carol"}),
                       std::move(admins));
}

TEST(AuthenticatorTest, TcpNeedsAValidBearerToken) {
  const Authenticator auth = MakeAuthenticator();
  absl::StatusOr<Identity> id = auth.Identify("ipv4:127.0.0.1:5555", {});
  EXPECT_EQ(id.status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(id.status().message(),
            "missing bearer token: pass --token-file or set LIBREYOLO_TOKEN");
  id = auth.Identify("ipv6:[::1]:5555", {"Bearer nope"});
  EXPECT_EQ(id.status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(id.status().message(), "unknown token");
  id = auth.Identify("ipv4:127.0.0.1:5555", {"Basic YWxpY2U6eA=="});
  EXPECT_EQ(id.status().code(), absl::StatusCode::kUnauthenticated);
  id = auth.Identify("ipv4:127.0.0.1:5555", {"Bearer tok-bob", "Bearer tok-carol"});
  EXPECT_EQ(id.status().code(), absl::StatusCode::kUnauthenticated);

  id = auth.Identify("ipv4:127.0.0.1:5555", {std::string("bEaReR  ") + kAliceToken});
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(id->user, "alice");
  EXPECT_FALSE(id->admin);
  EXPECT_FALSE(id->unix_peer);
  EXPECT_FALSE(id->uid.has_value());
  id = auth.Identify("ipv6:[::1]:1", {"Bearer tok-bob"});
  ASSERT_TRUE(id.ok());
  EXPECT_TRUE(id->admin);  // "admin" in the tokens file
  id = auth.Identify("ipv6:[::1]:1", {"Bearer tok-carol"});
  ASSERT_TRUE(id.ok());
  EXPECT_TRUE(id->admin);  // in the admins list
}

TEST(AuthenticatorTest, UnixPeersAreTheirUid) {
  Authenticator auth = MakeAuthenticator();
  EXPECT_EQ(auth.Identify("fd:12", {}).status().code(), absl::StatusCode::kUnauthenticated);
  auth.RecordUnixPeer("fd:12", 0);
  absl::StatusOr<Identity> id = auth.Identify("fd:12", {});
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_TRUE(id->admin);  // uid 0
  EXPECT_TRUE(id->unix_peer);
  EXPECT_EQ(id->uid, uid_t{0});
  EXPECT_EQ(id->user, "root");

  // An fd number reused by a later connection of another user is overwritten at accept.
  auth.RecordUnixPeer("fd:12", 4242);
  id = auth.Identify("fd:12", {});
  ASSERT_TRUE(id.ok());
  EXPECT_FALSE(id->admin);
  EXPECT_EQ(id->uid, uid_t{4242});
  const passwd* entry = getpwuid(4242);
  EXPECT_EQ(id->user, entry != nullptr ? std::string(entry->pw_name) : "uid:4242");

  // A valid token names another user; an invalid one is ignored on the Unix socket.
  id = auth.Identify("fd:12", {"Bearer tok-bob"});
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(id->user, "bob");
  EXPECT_TRUE(id->admin);
  EXPECT_TRUE(id->unix_peer);
  EXPECT_EQ(id->uid, uid_t{4242});
  id = auth.Identify("fd:12", {"Bearer wrong"});
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(id->uid, uid_t{4242});
  EXPECT_NE(id->user, "bob");

  auth.ForgetUnixPeer("fd:12");
  EXPECT_EQ(auth.Identify("fd:12", {}).status().code(), absl::StatusCode::kUnauthenticated);
  // gRPC's own unix: listener and anything else are refused: they carry no verified uid.
  EXPECT_EQ(auth.Identify("unix:/run/x.sock", {"Bearer tok-bob"}).status().code(),
            absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(auth.Identify("", {}).status().code(), absl::StatusCode::kUnauthenticated);
}

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

TEST(UnixListenerTest, CallsCarryThePeerUid) {
  TempDir dir;
  const std::string path = dir.File("ly.sock");
  Authenticator auth = MakeAuthenticator({});
  TestServer server(&auth, nullptr);
  absl::StatusOr<std::unique_ptr<UnixListener>> listener = UnixListener::Bind(path, 0660);
  ASSERT_TRUE(listener.ok()) << listener.status();
  (*listener)->Serve(server.server(), &auth);

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
  absl::StatusOr<std::unique_ptr<UnixListener>> rival = UnixListener::Bind(path, 0660);
  EXPECT_EQ(rival.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(std::string(rival.status().message()),
              HasSubstr("another libreyolod listens on " + path));

  listener->reset();  // stops and removes the socket
  EXPECT_FALSE(fs::exists(path));
}

TEST(UnixListenerTest, AdminsByName) {
  TempDir dir;
  const std::string path = dir.File("ly.sock");
  Authenticator auth = MakeAuthenticator({OurUserName()});
  TestServer server(&auth, nullptr);
  absl::StatusOr<std::unique_ptr<UnixListener>> listener = UnixListener::Bind(path, 0600);
  ASSERT_TRUE(listener.ok()) << listener.status();
  (*listener)->Serve(server.server(), &auth);
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
TEST(UnixListenerTest, ADescriptorIsNotReusedWhileACallOnItLives) {
  TempDir dir;
  const std::string path = dir.File("ly.sock");
  Authenticator auth = MakeAuthenticator({});
  TestServer server(&auth, nullptr);
  absl::StatusOr<std::unique_ptr<UnixListener>> listener = UnixListener::Bind(path, 0600);
  ASSERT_TRUE(listener.ok()) << listener.status();
  (*listener)->Serve(server.server(), &auth);

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

TEST(UnixListenerTest, StaleSocketsAreReplacedAndBadPathsRefused) {
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
  absl::StatusOr<std::unique_ptr<UnixListener>> listener = UnixListener::Bind(path, 0660);
  ASSERT_TRUE(listener.ok()) << listener.status();
  EXPECT_EQ((*listener)->path(), path);
  listener->reset();

  WriteFile(dir.File("plain"), "x");
  listener = UnixListener::Bind(dir.File("plain"), 0660);
  EXPECT_EQ(listener.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(listener.status().message()), HasSubstr("is not a socket"));

  listener = UnixListener::Bind(dir.File("missing/ly.sock"), 0660);
  EXPECT_EQ(listener.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(listener.status().message()), HasSubstr("does not exist"));

  listener = UnixListener::Bind("/tmp/" + std::string(200, 'x'), 0660);
  EXPECT_EQ(listener.status().code(), absl::StatusCode::kInvalidArgument);
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
    const std::string d = dir_.path().string() + "/";
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

// ---- Prometheus -------------------------------------------------------------------------------

TEST(PrometheusTest, GoldenRendering) {
  MetricsSnapshot s;
  s.devices = {{"cuda:0", 2, 1024, 4096, true}, {"cpu", 0, -1, -1, false}};
  s.jobs_by_state = {{"queued", 2}, {"running", 1}, {"succeeded", 7}};
  s.job_durations_s = {{"infer", {0.5, 12, 4000}}};
  s.jobs_submitted_total = 10;
  s.rpc_errors_total = 3;
  s.watchers = 1;
  s.resident_memory_bytes = 123456789;
  s.uptime_s = 61.25;
  EXPECT_EQ(RenderPrometheus(s),
            R"(# HELP libreyolod_uptime_seconds Seconds since the daemon started.
# TYPE libreyolod_uptime_seconds gauge
libreyolod_uptime_seconds 61.25
# HELP libreyolod_queue_depth Jobs queued on a device, not yet running.
# TYPE libreyolod_queue_depth gauge
libreyolod_queue_depth{device="cuda:0"} 2
libreyolod_queue_depth{device="cpu"} 0
# HELP libreyolod_device_busy 1 while a job runs on the device, else 0.
# TYPE libreyolod_device_busy gauge
libreyolod_device_busy{device="cuda:0"} 1
libreyolod_device_busy{device="cpu"} 0
# HELP libreyolod_device_memory_used_bytes Device memory in use, bytes.
# TYPE libreyolod_device_memory_used_bytes gauge
libreyolod_device_memory_used_bytes{device="cuda:0"} 1024
# HELP libreyolod_device_memory_total_bytes Device memory in total, bytes.
# TYPE libreyolod_device_memory_total_bytes gauge
libreyolod_device_memory_total_bytes{device="cuda:0"} 4096
# HELP libreyolod_jobs Jobs known to the daemon, by state.
# TYPE libreyolod_jobs gauge
libreyolod_jobs{state="queued"} 2
libreyolod_jobs{state="running"} 1
libreyolod_jobs{state="succeeded"} 7
# HELP libreyolod_job_duration_seconds Wall time of finished jobs from start to end, seconds, by kind.
# TYPE libreyolod_job_duration_seconds histogram
libreyolod_job_duration_seconds_bucket{kind="infer",le="1"} 1
libreyolod_job_duration_seconds_bucket{kind="infer",le="2.5"} 1
libreyolod_job_duration_seconds_bucket{kind="infer",le="5"} 1
libreyolod_job_duration_seconds_bucket{kind="infer",le="10"} 1
libreyolod_job_duration_seconds_bucket{kind="infer",le="30"} 2
libreyolod_job_duration_seconds_bucket{kind="infer",le="60"} 2
libreyolod_job_duration_seconds_bucket{kind="infer",le="120"} 2
libreyolod_job_duration_seconds_bucket{kind="infer",le="300"} 2
libreyolod_job_duration_seconds_bucket{kind="infer",le="600"} 2
libreyolod_job_duration_seconds_bucket{kind="infer",le="1800"} 2
libreyolod_job_duration_seconds_bucket{kind="infer",le="3600"} 2
libreyolod_job_duration_seconds_bucket{kind="infer",le="+Inf"} 3
libreyolod_job_duration_seconds_sum{kind="infer"} 4012.5
libreyolod_job_duration_seconds_count{kind="infer"} 3
# HELP libreyolod_jobs_submitted_total Jobs accepted by SubmitJob.
# TYPE libreyolod_jobs_submitted_total counter
libreyolod_jobs_submitted_total 10
# HELP libreyolod_rpc_errors_total RPCs answered with an error status.
# TYPE libreyolod_rpc_errors_total counter
libreyolod_rpc_errors_total 3
# HELP libreyolod_watchers Open WatchJob streams.
# TYPE libreyolod_watchers gauge
libreyolod_watchers 1
# HELP libreyolod_resident_memory_bytes Resident memory of the daemon process, bytes.
# TYPE libreyolod_resident_memory_bytes gauge
libreyolod_resident_memory_bytes 123456789
)");
}

TEST(PrometheusTest, EmptySnapshotHasOnlyTheScalars) {
  const std::string text = RenderPrometheus(MetricsSnapshot{});
  EXPECT_THAT(text, HasSubstr("libreyolod_uptime_seconds 0\n"));
  EXPECT_THAT(text, HasSubstr("libreyolod_jobs_submitted_total 0\n"));
  EXPECT_THAT(text, Not(HasSubstr("queue_depth")));
  EXPECT_THAT(text, Not(HasSubstr("resident_memory")));
  EXPECT_THAT(text, Not(HasSubstr("histogram")));
}

TEST(PrometheusTest, LabelValuesAreEscaped) {
  MetricsSnapshot s;
  s.devices = {{"a\\b\"c\nd", 1, -1, -1, false}};
  EXPECT_THAT(RenderPrometheus(s),
              HasSubstr("libreyolod_queue_depth{device=\"a\\\\b\\\"c\\nd\"} 1\n"));
  s.job_durations_s = {{"we\"ird", {}}};
  const std::string text = RenderPrometheus(s);
  EXPECT_THAT(
      text, HasSubstr("libreyolod_job_duration_seconds_bucket{kind=\"we\\\"ird\",le=\"+Inf\"} 0"));
  EXPECT_THAT(text, HasSubstr("libreyolod_job_duration_seconds_sum{kind=\"we\\\"ird\"} 0\n"));
}

TEST(PrometheusTest, TextfileIsReplacedAtomically) {
  TempDir dir;
  const std::string path = dir.File("libreyolod.prom");
  ASSERT_TRUE(WriteMetricsTextfile(path, "old 1\n").ok());
  const absl::Status status = WriteMetricsTextfile(path, "new 2\n");
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(ReadFile(path), "new 2\n");
  struct stat info {};
  ASSERT_EQ(stat(path.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0644u);
  int files = 0;
  for (const auto& entry : fs::directory_iterator(dir.path())) {
    ++files;
    EXPECT_EQ(entry.path().filename(), "libreyolod.prom");  // no temp file left behind
  }
  EXPECT_EQ(files, 1);

  const absl::Status missing = WriteMetricsTextfile(dir.File("no/such/dir.prom"), "x 1\n");
  EXPECT_EQ(missing.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(missing.message()), HasSubstr("no/such/dir.prom"));
}

}  // namespace
}  // namespace libreyolo::daemon
