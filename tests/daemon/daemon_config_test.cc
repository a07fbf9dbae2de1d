// The daemon's configuration: the YAML file, the flags over it, validation, and a reload's merge.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/daemon/config/daemon_config.h"
#include "server/daemon/config/daemon_options.h"
#include "server/engine/data/image_header.h"
#include "tests/daemon/security_test_util.h"

namespace libreyolo::daemon {
namespace {

using ::testing::HasSubstr;
using testing_util::TempDir;
using testing_util::WriteFile;

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
  const absl::StatusOr<DaemonConfig> directory = LoadDaemonConfig(dir.path());
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
  absl::StatusOr<ParsedFlags> result = ApplyDaemonFlags(args, &*c);
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
  absl::StatusOr<ParsedFlags> result =
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

// Issue 39 §4: argv is parsed once into ParsedFlags; start-up (and each SIGHUP reload) loads
// --config's file and applies those flags over it: a flag wins over the file's key, a repeated
// list flag replaces the file's list, a key no flag names keeps the file's value.
TEST(DaemonFlagsTest, ParsedFlagsWinOverTheConfigFile) {
  TempDir dir;
  WriteFile(dir.File("d.yaml"),
            "listen: [\"unix:/run/file-a.sock\", \"unix:/run/file-b.sock\"]\n"
            "limits:\n  max_batch: 8\n  max_steps: 9\n");
  absl::StatusOr<ParsedFlags> flags =
      ParseDaemonFlags({"--max-batch=3", "--config", dir.File("d.yaml"), "--listen",
                        "unix:/run/flag.sock", "--drain-timeout=90s"});
  ASSERT_TRUE(flags.ok()) << flags.status();
  EXPECT_EQ(flags->config_file, dir.File("d.yaml"));
  ASSERT_EQ(flags->values.size(), 3u);
  EXPECT_STREQ(flags->values[0].option->flag, "max-batch");
  EXPECT_EQ(flags->values[0].value, "3");
  for (int load = 0; load < 2; ++load) {  // start-up, then a reload with the same flags
    absl::StatusOr<DaemonConfig> c = LoadDaemonConfigWithFlags(*flags);
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ(c->limits.max_batch, 3);  // the flag over the file's 8
    EXPECT_EQ(c->limits.max_steps, 9);  // the file's, no flag
    EXPECT_THAT(c->listen, ::testing::ElementsAre("unix:/run/flag.sock"));
    EXPECT_EQ(c->drain_timeout_s, 90);
  }
  // The file changed under a reload: its new keys are read, the flags still win.
  WriteFile(dir.File("d.yaml"), "limits:\n  max_batch: 5\n  max_steps: 6\n");
  absl::StatusOr<DaemonConfig> reloaded = LoadDaemonConfigWithFlags(*flags);
  ASSERT_TRUE(reloaded.ok()) << reloaded.status();
  EXPECT_EQ(reloaded->limits.max_batch, 3);
  EXPECT_EQ(reloaded->limits.max_steps, 6);
  // Without --config the flags apply over the defaults; a missing file is NOT_FOUND.
  absl::StatusOr<ParsedFlags> bare = ParseDaemonFlags({"--listen=unix:/run/x.sock", "--max-batch=2"});
  ASSERT_TRUE(bare.ok()) << bare.status();
  absl::StatusOr<DaemonConfig> defaults = LoadDaemonConfigWithFlags(*bare);
  ASSERT_TRUE(defaults.ok()) << defaults.status();
  EXPECT_EQ(defaults->limits.max_batch, 2);
  EXPECT_EQ(defaults->limits.max_steps, DaemonConfig().limits.max_steps);
  bare->config_file = dir.File("missing.yaml");
  EXPECT_EQ(LoadDaemonConfigWithFlags(*bare).status().code(), absl::StatusCode::kNotFound);
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
    const absl::StatusOr<ParsedFlags> result = ApplyDaemonFlags(c.args, &config);
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
                           "--lease-dir DIR",
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
        name != "--require-client-cert" && name != "--attach-dynolog-compat") {
      args.push_back(name == "--unix-socket-mode"   ? "600"
                     : name == "--attach-unix-user" ? "x=nobody"
                                                    : "1");
    }
    EXPECT_TRUE(ApplyDaemonFlags(args, &c).ok()) << name;
  }
  // With --worker-binary, --connection-idle-timeout, --handshake-timeout, --cpu-slots and the
  // per-user caps of reads and downloads (--max-reads, --max-downloads and their _per_user), and
  // issue 37's --attach-dir, --attach-dynolog-compat and --attach-unix-user, and issue 38's
  // --python-tool, and issue 40's --max-decoded-pixels, and issue 39's
  // --max-attach-duration-ms (its demonstration of adding an option).
  EXPECT_EQ(documented, 55);
}

TEST(DaemonConfigValidateTest, AcceptsAUnixOnlyDaemon) {
  DaemonConfig c;
  c.listen = {"unix:/run/libreyolod/libreyolod.sock"};
  EXPECT_TRUE(ValidateDaemonConfig(c).ok()) << ValidateDaemonConfig(c);
}

// Issue 38 §4: python_tool is unset (the project's environment), "off", or an executable file.
TEST(DaemonConfigValidateTest, PythonToolIsAnExecutableFileOrOff) {
  DaemonConfig c;
  c.listen = {"unix:/run/libreyolod/libreyolod.sock"};
  for (const char* ok : {"", "off", "/bin/sh"}) {
    c.python_tool = ok;
    EXPECT_TRUE(ValidateDaemonConfig(c).ok()) << ok << ": " << ValidateDaemonConfig(c);
  }
  // A plain file without execute bits, made here (/etc/hostname is 0755 on some machines).
  const std::string plain = ::testing::TempDir() + "/python_tool_not_executable";
  std::ofstream(plain) << "#!/bin/sh\n";
  ASSERT_EQ(::chmod(plain.c_str(), 0644), 0);
  for (const std::string& bad : {std::string("/nonexistent/bin/libreyolo"), plain,
                                std::string("/tmp")}) {
    c.python_tool = bad;
    EXPECT_THAT(std::string(ValidateDaemonConfig(c).message()),
                HasSubstr(std::string("python_tool (--python-tool) ") + bad +
                          " is not an executable file"));
  }
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
  EXPECT_THAT(message(bad), HasSubstr("tls.cert (--tls-cert) /nonexistent/cert.pem: cannot read"));
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
  EXPECT_THAT(message(bad), HasSubstr("retention.max_jobs (--retention-max-jobs) must be 0 or more"));
  EXPECT_THAT(message(bad), HasSubstr("drain_timeout_s (--drain-timeout)"));
  bad = c;
  bad.devices = {"gpu0", "1", "1"};
  EXPECT_THAT(message(bad), HasSubstr("devices (--device): 'gpu0' is not a device"));
  EXPECT_THAT(message(bad), HasSubstr("devices (--device): '1' is listed twice"));
  bad = c;
  bad.unix_socket_mode = 0066;
  EXPECT_THAT(message(bad), HasSubstr("unix_socket_mode (--unix-socket-mode): the owner needs read and write"));
  bad = c;
  bad.state_dir.clear();
  EXPECT_THAT(message(bad), HasSubstr("state_dir is empty"));
  // Issue 23, item 4: the watchdog and the wall-time cap are bounded where they are set.
  bad = c;
  bad.progress_timeout_s = 0;
  EXPECT_THAT(message(bad),
              HasSubstr("progress_timeout_s (--progress-timeout): expected 1..86400 seconds, got 0"));
  // Issue 23, item 2: the connection timeouts too.
  for (int64_t v : {int64_t{0}, int64_t{-1}, int64_t{86401}, INT64_MAX}) {
    bad = c;
    bad.connection_idle_timeout_s = v;
    EXPECT_THAT(message(bad), HasSubstr(absl::StrCat("connection_idle_timeout_s "
                                                     "(--connection-idle-timeout): expected "
                                                     "1..86400 seconds, got ", v)));
  }
  for (int64_t v : {int64_t{0}, int64_t{3601}, INT64_MIN}) {
    bad = c;
    bad.handshake_timeout_s = v;
    EXPECT_THAT(message(bad), HasSubstr(absl::StrCat("handshake_timeout_s (--handshake-timeout): "
                                                     "expected 1..3600 seconds, got ", v)));
  }
  bad = c;
  bad.limits.max_job_seconds = INT64_MAX;
  EXPECT_THAT(message(bad), HasSubstr("limits.max_job_seconds (--max-job-seconds): at most "
                                      "2147483647 seconds, got 9223372036854775807"));
  bad.limits.max_job_seconds = -1;
  EXPECT_THAT(message(bad), HasSubstr("limits.max_job_seconds (--max-job-seconds) must be "
                                      "positive, got -1"));
}

// Issue 40 A.9: limits.max_decoded_pixels. Its default is the engine's own bound; it is bounded
// by 1 and OpenCV's 2^30; the flag and the key set it alike; a reload applies it (new jobs).
TEST(DaemonConfigTest, MaxDecodedPixelsIsBoundedSetAndReloaded) {
  EXPECT_EQ(DaemonConfig{}.limits.max_decoded_pixels, engine::kMaxDecodedPixels);
  DaemonConfig c;
  c.listen = {"unix:/run/libreyolod/libreyolod.sock"};
  auto message = [](const DaemonConfig& config) {
    return std::string(ValidateDaemonConfig(config).message());
  };
  DaemonConfig bad = c;
  for (int64_t v : {int64_t{0}, int64_t{-5}}) {
    bad.limits.max_decoded_pixels = v;
    EXPECT_THAT(message(bad), HasSubstr(absl::StrCat("limits.max_decoded_pixels "
                                                     "(--max-decoded-pixels) must be positive, "
                                                     "got ", v)));
  }
  bad.limits.max_decoded_pixels = (int64_t{1} << 30) + 1;
  EXPECT_THAT(message(bad), HasSubstr("limits.max_decoded_pixels (--max-decoded-pixels): at most "
                                      "1073741824 pixels, got 1073741825"));
  for (int64_t v : {int64_t{1}, int64_t{1} << 30}) {
    bad.limits.max_decoded_pixels = v;
    EXPECT_THAT(message(bad), ::testing::Not(HasSubstr("max_decoded_pixels"))) << v;
  }

  DaemonConfig from_flag;
  ASSERT_TRUE(ApplyDaemonFlags({"--max-decoded-pixels", "4096"}, &from_flag).ok());
  EXPECT_EQ(from_flag.limits.max_decoded_pixels, 4096);
  TempDir dir;
  WriteFile(dir.File("p.yaml"), "limits:\n  max_decoded_pixels: 4096\n");
  absl::StatusOr<DaemonConfig> from_file = LoadDaemonConfig(dir.File("p.yaml"));
  ASSERT_TRUE(from_file.ok()) << from_file.status();
  EXPECT_EQ(from_file->limits.max_decoded_pixels, 4096);

  DaemonConfig next;
  EXPECT_THAT(MergeReloadable(DaemonConfig{}, *from_file, &next), ::testing::IsEmpty());
  EXPECT_EQ(next.limits.max_decoded_pixels, 4096);
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

// ---- reload ----------------------------------------------------------------------------------

// The file with `key_path` changed from its default: the first of a few spellings that the key
// accepts (none of them is a default).
absl::StatusOr<DaemonConfig> LoadWithChanged(const std::string& key_path, const TempDir& dir) {
  const size_t dot = key_path.find('.');
  // attach_unix_users' entry needs a non-root Unix user of the host: nobody.
  for (const char* value : {"7", "true", "[\"x:1\"]", "0600", "/changed", "[\"x=nobody\"]"}) {
    const std::string yaml =
        dot == std::string::npos
            ? absl::StrCat(key_path, ": ", value, "\n")
            : absl::StrCat(key_path.substr(0, dot), ":\n  ", key_path.substr(dot + 1), ": ", value,
                           "\n");
    const std::string path = dir.File("reload.yaml");
    WriteFile(path, yaml);
    absl::StatusOr<DaemonConfig> loaded = LoadDaemonConfig(path);
    if (loaded.ok()) return loaded;  // each spelling differs from every default
  }
  return absl::NotFoundError(absl::StrCat("no test value parses for ", key_path));
}

// Every key of the file is either applied by a reload or named in a restart note, never
// silently dropped; the reloadable ones are exactly those the header (and deploy.md) document.
TEST(DaemonConfigReloadTest, EveryKeyIsAppliedOrNamed) {
  TempDir dir;
  const std::set<std::string> live = {
      "tokens_file",         "admins",          "limits",
      "retention",           "drain_timeout_s", "metrics_textfile",
      "progress_timeout_s",  "max_connections", "max_connections_per_peer",
      "reserved_descriptors", "attach_unix_users"};
  const std::vector<std::string> reloadable = ReloadableKeys();
  EXPECT_EQ(std::set<std::string>(reloadable.begin(), reloadable.end()), live);
  for (const std::string& key_path : DaemonConfigKeyPaths()) {
    SCOPED_TRACE(key_path);
    absl::StatusOr<DaemonConfig> loaded = LoadWithChanged(key_path, dir);
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    const std::string top = key_path.substr(0, key_path.find('.'));
    DaemonConfig next;
    const std::vector<std::string> notes = MergeReloadable(DaemonConfig{}, *loaded, &next);
    if (live.count(top) != 0) {
      EXPECT_THAT(notes, ::testing::IsEmpty());  // applied (values: the test below)
    } else {
      EXPECT_THAT(notes, ::testing::ElementsAre(
                             absl::StrCat(top, " changed: restart libreyolod to apply it")));
    }
  }
}

TEST(DaemonConfigReloadTest, ReloadableValuesAreTakenOthersKept) {
  DaemonConfig running;
  running.listen = {"unix:/run/a.sock"};
  running.cpu_threads = 4;
  DaemonConfig loaded = running;
  loaded.listen = {"unix:/run/b.sock"};
  loaded.cpu_threads = 8;
  loaded.tls.cert_file = "/etc/ly/cert.pem";
  loaded.tokens_file = "/etc/ly/tokens";
  loaded.admins = {"dana"};
  loaded.limits.max_batch = 3;
  loaded.retention.max_jobs = 5;
  loaded.drain_timeout_s = 9;
  loaded.metrics_textfile = "/m.prom";
  DaemonConfig next;
  EXPECT_THAT(MergeReloadable(running, loaded, &next),
              ::testing::ElementsAre("listen changed: restart libreyolod to apply it",
                                     "tls changed: restart libreyolod to apply it",
                                     "cpu_threads changed: restart libreyolod to apply it"));
  EXPECT_EQ(next.listen, running.listen);
  EXPECT_EQ(next.cpu_threads, 4);
  EXPECT_EQ(next.tls.cert_file, "");
  EXPECT_EQ(next.tokens_file, "/etc/ly/tokens");
  EXPECT_EQ(next.admins, std::vector<std::string>{"dana"});
  EXPECT_EQ(next.limits.max_batch, 3);
  EXPECT_EQ(next.retention.max_jobs, 5);
  EXPECT_EQ(next.drain_timeout_s, 9);
  EXPECT_EQ(next.metrics_textfile, "/m.prom");
}

}  // namespace
}  // namespace libreyolo::daemon

namespace libreyolo::daemon {
namespace {

// Issue 40 A.10: start-up refusals across fields. Each used to start a daemon that then failed
// with the wrong exit code, blamed "another libreyolod" (exit 3) with its own pid, or ran
// without a word.
TEST(DaemonConfigValidateTest, RulesAcrossFieldsAreCheckedBeforeStart) {
  const std::string root = ::testing::TempDir() + "/cross_field_" + std::to_string(::getpid());
  std::filesystem::create_directories(root + "/state");
  auto problem = [](const DaemonConfig& c) { return std::string(ValidateDaemonConfig(c).message()); };
  DaemonConfig c;
  c.listen = {"unix:/run/libreyolod/libreyolod.sock"};
  c.state_dir = root + "/state";
  c.store_dir = root + "/store";
  ASSERT_TRUE(ValidateDaemonConfig(c).ok()) << ValidateDaemonConfig(c);

  DaemonConfig twice = c;
  twice.listen.push_back(twice.listen.front());
  EXPECT_THAT(problem(twice), HasSubstr("is given twice"));

  DaemonConfig same = c;
  same.store_dir = root + "/state/";
  EXPECT_THAT(problem(same), HasSubstr("state_dir and store_dir are the same folder"));
  DaemonConfig inside = c;  // the private daemon's layout
  inside.store_dir = root + "/state/store";
  EXPECT_TRUE(ValidateDaemonConfig(inside).ok()) << ValidateDaemonConfig(inside);

  ASSERT_EQ(::chmod((root + "/state").c_str(), 0777), 0);
  EXPECT_THAT(problem(c), HasSubstr("is writable by every user (mode 0777)"));
  ASSERT_EQ(::chmod((root + "/state").c_str(), 0700), 0);

  DaemonConfig lease = c;
  lease.lease_dir = root + "/no-such-lease-dir";
  EXPECT_THAT(problem(lease), HasSubstr("lease_dir (--lease-dir)"));

  DaemonConfig watchers = c;
  watchers.limits.max_watchers = 10;
  watchers.limits.max_watchers_per_user = 11;
  EXPECT_THAT(problem(watchers),
              HasSubstr("limits.max_watchers_per_user (11) is above limits.max_watchers (10)"));
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace libreyolo::daemon

namespace libreyolo::daemon {
namespace {

// Issue 39 §1: one row per option. Every row names a distinct key and flag, its bound (if any)
// is on an integer, and the rows of a section share one reload rule (a reload's note names the
// section).
TEST(DaemonOptionsTest, RowsAreDistinctAndConsistent) {
  std::set<std::string> keys, flags;
  std::map<std::string, Reload> section_reload;
  for (const DaemonOption& option : DaemonOptions()) {
    SCOPED_TRACE(option.key);
    EXPECT_TRUE(keys.insert(option.key).second) << "key given twice";
    EXPECT_TRUE(flags.insert(option.flag).second) << "flag given twice";
    EXPECT_NE(std::string(option.flag), "config");
    EXPECT_NE(std::string(option.flag), "help");
    EXPECT_EQ(option.value == nullptr, option.kind == OptionKind::kSwitch);
    const bool integer = std::holds_alternative<int32_t& (*)(DaemonConfig&)>(option.field) ||
                         std::holds_alternative<int64_t& (*)(DaemonConfig&)>(option.field);
    EXPECT_TRUE(integer || option.bound == OptionBound::kNone);
    const std::string key = option.key;
    if (const size_t dot = key.find('.'); dot != std::string::npos) {
      const auto [it, fresh] = section_reload.emplace(key.substr(0, dot), option.reload);
      EXPECT_TRUE(fresh || it->second == option.reload) << "a section's rows reload alike";
    }
  }
  // Every default is inside its bound and passes its row's check.
  DaemonConfig defaults;
  defaults.listen = {"unix:/run/x.sock"};
  std::vector<std::string> problems;
  OptionProblems(defaults, &problems);
  EXPECT_THAT(problems, ::testing::IsEmpty());
}

// Every bound's message names the key and the flag (limits.max_repeat, max_imgsz, max_watchers,
// max_reads, max_downloads and retention's keys used to name no flag), and a value one past the
// bound is refused while the bound itself passes.
TEST(DaemonOptionsTest, EveryBoundNamesItsFlagAndHoldsAtItsEdges) {
  int bounded = 0;
  for (const DaemonOption& option : DaemonOptions()) {
    if (option.bound == OptionBound::kNone) continue;
    SCOPED_TRACE(option.key);
    ++bounded;
    auto set = [&option](DaemonConfig* c, int64_t v) {
      std::visit(
          [&](auto at) {
            using T = std::decay_t<decltype(at(*c))>;
            if constexpr (std::is_integral_v<T>) at(*c) = static_cast<T>(v);
          },
          option.field);
    };
    auto problems = [](const DaemonConfig& c) {
      std::vector<std::string> out;
      OptionProblems(c, &out);
      return out;
    };
    DaemonConfig c;
    c.listen = {"unix:/run/x.sock"};
    set(&c, option.min);
    EXPECT_THAT(problems(c), ::testing::IsEmpty());
    set(&c, option.min - 1);
    EXPECT_THAT(problems(c), ::testing::ElementsAre(HasSubstr(
                                 absl::StrCat(option.key, " (--", option.flag, ")"))));
    const bool int32 = std::holds_alternative<int32_t& (*)(DaemonConfig&)>(option.field);
    if (option.max != kNoMax && (!int32 || option.max < INT32_MAX)) {
      set(&c, option.max);
      EXPECT_THAT(problems(c), ::testing::IsEmpty());
      set(&c, option.max + 1);
      EXPECT_THAT(problems(c), ::testing::ElementsAre(HasSubstr(absl::StrCat(
                                   option.key, " (--", option.flag, "): "))));
    }
  }
  EXPECT_GE(bounded, 28);  // every limit and retention key, the timeouts, the caps
  DaemonConfig c;
  c.listen = {"unix:/run/x.sock"};
  c.limits.max_repeat = 0;
  c.limits.max_imgsz = -1;
  const std::string message(ValidateDaemonConfig(c).message());
  EXPECT_THAT(message, HasSubstr("limits.max_repeat (--max-repeat) must be positive, got 0"));
  EXPECT_THAT(message, HasSubstr("limits.max_imgsz (--max-imgsz) must be positive, got -1"));
}

// The job spec's validator takes the daemon's limits as they are: Limits is a JobLimits with the
// daemon's defaults (1536, not the engine's 4096), and a limit set in the file reaches it.
TEST(DaemonOptionsTest, LimitsAreTheJobSpecsJobLimits) {
  const Limits limits;
  const jobspec::JobLimits& job = limits;
  EXPECT_EQ(job.max_imgsz, 1536);
  EXPECT_EQ(job.max_batch, 256);
  EXPECT_EQ(job.max_runs, 10000);
  EXPECT_EQ(job.max_steps, 1000);
  EXPECT_EQ(job.max_repeat, 20);
  EXPECT_EQ(job.limit_owner, "this daemon's");
  DaemonConfig c;
  ASSERT_TRUE(ApplyDaemonFlags({"--max-imgsz=640", "--max-repeat=3"}, &c).ok());
  const jobspec::JobLimits& set = c.limits;
  EXPECT_EQ(set.max_imgsz, 640);
  EXPECT_EQ(set.max_repeat, 3);
}

// docs/deploy.md's option table is the rows' (DaemonOptionsMarkdown): a row added, changed or
// removed without the doc fails here, printing the table to paste.
TEST(DaemonOptionsTest, DeployDocTableIsTheRows) {
  std::ifstream in(std::string(LIBREYOLO_SOURCE_DIR) + "/docs/deploy.md");
  ASSERT_TRUE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  const std::string doc = text.str();
  const std::string begin = "<!-- daemon-options:begin";
  const std::string end = "<!-- daemon-options:end -->";
  const size_t b = doc.find(begin);
  ASSERT_NE(b, std::string::npos) << "docs/deploy.md lacks the " << begin << " marker";
  const size_t table = doc.find("-->\n", b) + 4;
  const size_t e = doc.find(end, table);
  ASSERT_NE(e, std::string::npos);
  EXPECT_EQ(doc.substr(table, e - table), DaemonOptionsMarkdown())
      << "docs/deploy.md's option table differs from the rows (server/daemon/config/"
         "daemon_options.cc); paste this between its markers:\n"
      << DaemonOptionsMarkdown();
}

}  // namespace
}  // namespace libreyolo::daemon

namespace libreyolo::daemon {
namespace {

// deploy/libreyolod.example.yaml documents every option (a row's key, set or commented out) and
// loads as it is (cpu_slots was missing from it).
TEST(DaemonOptionsTest, ExampleConfigNamesEveryOption) {
  const std::string path = std::string(LIBREYOLO_SOURCE_DIR) + "/deploy/libreyolod.example.yaml";
  absl::StatusOr<DaemonConfig> loaded = LoadDaemonConfig(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  std::ifstream in(path);
  std::set<std::string> named;
  std::string line;
  while (std::getline(in, line)) {
    size_t at = line.find_first_not_of(" #");
    if (at == std::string::npos) continue;
    const size_t colon = line.find(':', at);
    if (colon != std::string::npos) named.insert(line.substr(at, colon - at));
  }
  for (const DaemonOption& option : DaemonOptions()) {
    const std::string key = option.key;
    const std::string leaf = key.substr(key.rfind('.') + 1);
    EXPECT_EQ(named.count(leaf), 1u) << key << " is not in deploy/libreyolod.example.yaml";
  }
}

}  // namespace
}  // namespace libreyolo::daemon
