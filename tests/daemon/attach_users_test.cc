// Issue 37 §1, §4 and §5 through a real libreyolod and the real client, with no Python (seconds):
// - dynolog's abstract name already held by another process (a stand-in that binds
//   `\0dynolog\0` as dynolog does): a daemon started with --attach-dynolog-compat refuses to
//   start, says why and exits 3 (something it needs is in use);
// - whose process (root only: the test makes two Unix users and removes them): a process of one
//   user polls the daemon (a minimal Kineto client: its own socket in the user's directory, `req`
//   datagrams), another user's `attach --pid` of it fails with the reason while its owner's is
//   delivered to the process; a token user over TCP attaches as the Unix user the daemon's
//   attach_unix_users maps it to, and one without a mapping is refused with that reason.
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "tests/daemon/daemon_process.h"

namespace libreyolo::daemon_test {
namespace {

// Binds Kineto's default daemon address, the abstract `\0dynolog\0` (addrlen 11), in a child
// process that then waits to be killed: dynolog (or a Ray-started one) holding the name.
// `held_before` says the name was already taken by someone else (a real dynolog on this host),
// which serves the test as well.
pid_t StartDynologStandIn(bool* held_before) {
  int ready[2];
  if (::pipe(ready) != 0) return -1;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(ready[0]);
    const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::memcpy(a.sun_path + 1, "dynolog", 7);
    const auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 9);
    char status = 'b';
    if (::bind(fd, reinterpret_cast<const sockaddr*>(&a), len) != 0) {
      status = errno == EADDRINUSE ? 'h' : 'e';
    }
    (void)!::write(ready[1], &status, 1);
    if (status == 'e') ::_exit(1);
    for (;;) ::pause();
  }
  ::close(ready[1]);
  char status = 'e';
  pollfd p{ready[0], POLLIN, 0};
  if (::poll(&p, 1, 10000) != 1 || ::read(ready[0], &status, 1) != 1) status = 'e';
  ::close(ready[0]);
  *held_before = status == 'h';
  if (status == 'e') {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    return -1;
  }
  return pid;
}

TEST(AttachStartupTest, DynologHoldingTheAbstractNameRefusesTheStart) {
  TempDir tmp("lyad");
  bool held_before = false;
  const pid_t stand_in = StartDynologStandIn(&held_before);
  ASSERT_GT(stand_in, 0) << "could not bind or probe the abstract name dynolog";
  if (held_before) std::cout << "the abstract name dynolog was already held on this host\n";
  DaemonDirs dirs(tmp.path());
  std::vector<std::string> flags = dirs.Flags();
  flags.insert(flags.end(), {"--attach-dir", tmp.File("attach"), "--attach-dynolog-compat"});
  auto daemon = DaemonProcess::Start(flags, tmp.File("daemon.log"));
  const std::optional<int> code = daemon->WaitExit(seconds(90));
  ::kill(stand_in, SIGKILL);
  ::waitpid(stand_in, nullptr, 0);
  ASSERT_TRUE(code.has_value()) << "still running or killed by a signal\n" << daemon->LogTail();
  EXPECT_EQ(*code, 3) << daemon->LogTail();  // docs/deploy.md: 3, something in use
  const std::string log = daemon->Log();
  EXPECT_NE(log.find("libreyolod: error: the abstract socket name 'dynolog'"), std::string::npos)
      << log;
  EXPECT_NE(log.find("held by another process: dynolog"), std::string::npos) << log;
  EXPECT_NE(log.find("turn attach_dynolog_compat off"), std::string::npos) << log;
  EXPECT_EQ(log.find("serving on"), std::string::npos) << log;
  // Without the option the same daemon starts beside the holder: only the opt-in needs the name.
  if (!held_before) {
    bool again = false;
    const pid_t holder = StartDynologStandIn(&again);
    ASSERT_GT(holder, 0);
    flags.pop_back();
    auto plain = DaemonProcess::Start(flags, tmp.File("daemon2.log"));
    EXPECT_TRUE(plain->WaitServing()) << plain->LogTail();
    plain->Terminate(seconds(30));
    ::kill(holder, SIGKILL);
    ::waitpid(holder, nullptr, 0);
  }
}

// ---- whose process ------------------------------------------------------------------------

struct UnixUser {
  std::string name;
  uid_t uid = 0;
  gid_t gid = 0;
};

std::string Tool(const std::vector<std::string>& candidates) {
  for (const std::string& c : candidates) {
    if (::access(c.c_str(), X_OK) == 0) return c;
  }
  return "";
}

// A process of `user` that polls the daemon as Kineto does (KINETO_USE_DAEMON=1): its own
// socket in the user's socket directory `dir`, a `req` {activities idle, n 1, job 0, its pid}
// to `<dir>/dynolog` every 100 ms, up to 90 ms for the answer. Every non-empty configuration it
// is handed is written to `report` (then a NUL). Forked from this single-threaded test, then
// setgid/setuid: the kernel's credentials on its datagrams are the user's.
pid_t StartPoller(const UnixUser& user, const std::string& dir, int report) {
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  if (::setgroups(0, nullptr) != 0 || ::setgid(user.gid) != 0 || ::setuid(user.uid) != 0) {
    ::_exit(3);
  }
  const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  auto address = [](const std::string& path) {
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::memcpy(a.sun_path, path.data(), std::min(path.size(), sizeof(a.sun_path) - 1));
    return a;
  };
  const std::string own = dir + "/poller." + std::to_string(::getpid());
  const sockaddr_un me = address(own);
  const sockaddr_un daemon = address(dir + "/dynolog");
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&me), sizeof(me)) != 0) ::_exit(4);
  // The datagram: u64 payload size, char[32] "req", then i32 type, i32 n, i64 job id, i32 pid.
  char msg[40 + 20] = {};
  const uint64_t size = 20;
  const int32_t type = 2, n = 1, self = ::getpid();
  const int64_t job = 0;
  std::memcpy(msg, &size, 8);
  std::memcpy(msg + 8, "req", 3);
  std::memcpy(msg + 40, &type, 4);
  std::memcpy(msg + 44, &n, 4);
  std::memcpy(msg + 48, &job, 8);
  std::memcpy(msg + 56, &self, 4);
  char answer[8192];
  for (;;) {
    ::sendto(fd, msg, sizeof(msg), 0, reinterpret_cast<const sockaddr*>(&daemon), sizeof(daemon));
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 90) == 1) {
      const ssize_t got = ::recv(fd, answer, sizeof(answer), 0);
      if (got > 40) {
        (void)!::write(report, answer + 40, static_cast<size_t>(got - 40));
        (void)!::write(report, "", 1);
      }
    }
    ::usleep(100000);
  }
}

// What the poller was handed, up to `timeout`: the first configuration text.
std::string ReadConfig(int fd, milliseconds timeout) {
  std::string out;
  const auto until = Clock::now() + timeout;
  char c = 0;
  while (Clock::now() < until) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) != 1) continue;
    if (::read(fd, &c, 1) != 1) break;
    if (c == '\0') return out;
    out.push_back(c);
  }
  return out;
}

class AttachOwnersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) {
      GTEST_SKIP() << "needs root: it creates two Unix users (useradd) and runs the client as "
                      "each (setpriv); CI and the dev container run as root";
    }
    useradd_ = Tool({"/usr/sbin/useradd", "/sbin/useradd", "/usr/bin/useradd"});
    setpriv_ = Tool({"/usr/bin/setpriv", "/bin/setpriv"});
    if (useradd_.empty() || setpriv_.empty()) {
      GTEST_SKIP() << "needs useradd and setpriv (util-linux), found neither here";
    }
    for (const char* role : {"lyown", "lyoth"}) {
      UnixUser u;
      u.name = role + std::to_string(::getpid() % 100000);
      const CommandResult made = RunCommand(
          {useradd_, "-M", "-N", "-d", "/nonexistent", "-s", "/usr/sbin/nologin", u.name});
      if (made.exit_code != 0) GTEST_SKIP() << "useradd failed here: " << made.Describe();
      made_.push_back(u.name);
      const passwd* pw = ::getpwnam(u.name.c_str());
      ASSERT_NE(pw, nullptr) << u.name;
      u.uid = pw->pw_uid;
      u.gid = pw->pw_gid;
      users_.push_back(u);
    }
    ::chmod(tmp_.path().c_str(), 0755);  // the users reach the daemon's socket and attach dir
  }
  void TearDown() override {
    if (poller_ > 0) {
      ::kill(poller_, SIGKILL);
      ::waitpid(poller_, nullptr, 0);
    }
    if (report_[0] >= 0) ::close(report_[0]);
    if (report_[1] >= 0) ::close(report_[1]);
    daemon_.reset();
    const std::string userdel = Tool({"/usr/sbin/userdel", "/sbin/userdel", "/usr/bin/userdel"});
    for (const std::string& name : made_) RunCommand({userdel, name});
  }
  // `libreyolo ARGS` as `user` (its uid, gid, no supplementary groups), or as root (nullptr).
  CommandResult As(const UnixUser* user, std::vector<std::string> args) {
    std::vector<std::string> argv;
    if (user != nullptr) {
      argv = {setpriv_, "--reuid=" + std::to_string(user->uid),
              "--regid=" + std::to_string(user->gid), "--clear-groups", "--"};
    }
    argv.push_back(LIBREYOLO_CLIENT_BINARY);
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv, {"HOME=/nonexistent", "XDG_RUNTIME_DIR=", "XDG_STATE_HOME="},
                      seconds(60), "/");
  }
  std::vector<std::string> Unix(std::vector<std::string> args) const {
    args.insert(args.end(), {"--remote", "unix:" + dirs_.socket});
    return args;
  }
  std::vector<std::string> Token(std::vector<std::string> args, const std::string& who) const {
    args.insert(args.end(), {"--remote", "127.0.0.1:" + std::to_string(daemon_->tcp_port()),
                             "--insecure", "--token-file", tmp_.File(who + ".token")});
    return args;
  }
  // A detached job's id, the one line `--detach` prints ("" when refused).
  static std::string JobId(const CommandResult& r) {
    if (r.exit_code != 0) return "";
    std::string id = r.out;
    while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) id.pop_back();
    return id.find('\n') == std::string::npos ? id : "";
  }
  // The job's state from `jobs show --json` as `args`' caller.
  std::string State(const std::function<CommandResult(std::vector<std::string>)>& call,
                    const std::string& id) {
    const CommandResult r = call({"jobs", "show", id, "--json"});
    rapidjson::Document doc;
    if (r.exit_code != 0 || doc.Parse(r.out.c_str()).HasParseError()) return "";
    return doc["state"].GetString();
  }

  TempDir tmp_{"lyau"};
  DaemonDirs dirs_{tmp_.path()};
  std::unique_ptr<DaemonProcess> daemon_;
  std::string useradd_, setpriv_;
  std::vector<std::string> made_;
  std::vector<UnixUser> users_;
  pid_t poller_ = -1;
  int report_[2] = {-1, -1};
};

TEST_F(AttachOwnersTest, AnotherUsersProcessIsRefusedItsOwnerAndItsMappedTokenUserAccepted) {
  const UnixUser& owner = users_[0];
  const UnixUser& other = users_[1];
  WriteFile(tmp_.File("tokens"),
            "tok-mapped-4f1c9a mapped\ntok-unmapped-9b2e77 unmapped\n", 0600);
  WriteFile(tmp_.File("mapped.token"), "tok-mapped-4f1c9a\n", 0600);
  WriteFile(tmp_.File("unmapped.token"), "tok-unmapped-9b2e77\n", 0600);
  std::vector<std::string> flags = dirs_.Flags({"unix:" + dirs_.socket, "tcp:127.0.0.1:0"});
  flags.insert(flags.end(), {"--unix-socket-mode", "0666", "--attach-dir", tmp_.File("attach"),
                             "--tokens-file", tmp_.File("tokens"), "--insecure-tcp",
                             "--attach-unix-user", "mapped=" + owner.name});
  daemon_ = DaemonProcess::Start(flags, tmp_.File("daemon.log"));
  ASSERT_TRUE(daemon_->WaitServing()) << daemon_->LogTail();
  // The owner makes its socket directory (--env over the Unix socket) and starts its process.
  const CommandResult env = As(&owner, Unix({"profile", "attach", "--env"}));
  ASSERT_EQ(env.exit_code, 0) << env.Describe();
  const std::string dir = tmp_.File("attach") + "/" + std::to_string(owner.uid);
  ASSERT_NE(env.out.find("KINETO_IPC_SOCKET_DIR=" + dir), std::string::npos) << env.out;
  ASSERT_EQ(::pipe2(report_, O_CLOEXEC), 0);
  poller_ = StartPoller(owner, dir, report_[1]);
  const std::string pid = std::to_string(poller_);
  auto listed = [&](const CommandResult& r) {
    rapidjson::Document doc;
    if (r.exit_code != 0 || doc.Parse(r.out.c_str()).HasParseError() ||
        !doc.HasMember("processes")) {
      return false;
    }
    for (const auto& p : doc["processes"].GetArray()) {
      if (p["pid"].GetInt() == poller_) return true;
    }
    return false;
  };
  ASSERT_TRUE(PollUntil(
      [&] { return listed(As(&owner, Unix({"profile", "attach", "--list", "--json"}))); },
      seconds(30), milliseconds(200)))
      << daemon_->LogTail();
  // Listed for its owner and the token user mapped to it, for no one else.
  EXPECT_FALSE(listed(As(&other, Unix({"profile", "attach", "--list", "--json"}))));
  EXPECT_TRUE(listed(As(nullptr, Token({"profile", "attach", "--list", "--json"}, "mapped"))));
  EXPECT_FALSE(listed(As(nullptr, Token({"profile", "attach", "--list", "--json"}, "unmapped"))));

  const std::vector<std::string> attach = {"profile", "attach", "--pid", pid, "--duration-ms",
                                           "1000", "--activities", "cpu", "--json"};
  auto with = [](std::vector<std::string> a, std::vector<std::string> more) {
    a.insert(a.end(), more.begin(), more.end());
    return a;
  };
  // Another user: the job fails with the reason (exit 2), nothing reaches the process.
  fs::create_directories(tmp_.File("other-proj"));
  ::chmod(tmp_.File("other-proj").c_str(), 0777);
  const CommandResult refused =
      As(&other, Unix(with(attach, {"--project", tmp_.File("other-proj")})));
  EXPECT_EQ(refused.exit_code, 2) << refused.Describe();
  EXPECT_NE((refused.out + refused.err)
                .find("process " + pid + " belongs to another user (uid " +
                      std::to_string(owner.uid) + "): only its owner or an admin may attach"),
            std::string::npos)
      << refused.Describe();
  // A token user without a mapping: refused at submit, saying how to get one.
  const CommandResult unmapped = As(nullptr, Token(with(attach, {"--detach"}), "unmapped"));
  EXPECT_EQ(unmapped.exit_code, 2) << unmapped.Describe();
  EXPECT_NE(unmapped.err.find("token user unmapped has no Unix user on this host (the daemon's "
                              "attach_unix_users maps none for it)"),
            std::string::npos)
      << unmapped.Describe();
  EXPECT_EQ(ReadConfig(report_[0], milliseconds(500)), "");  // no request was handed out

  // The owner, then the mapped token user: each job's request reaches the process (its
  // trace_id the job's id); each is cancelled then (this process writes no trace).
  struct Caller {
    const char* what;
    std::function<CommandResult(std::vector<std::string>)> call;
  };
  const std::vector<Caller> accepted = {
      {"the owner over the Unix socket", [&](auto a) { return As(&owner, Unix(a)); }},
      {"the token user mapped to the owner",
       [&](auto a) { return As(nullptr, Token(a, "mapped")); }},
  };
  for (const Caller& c : accepted) {
    SCOPED_TRACE(c.what);
    const CommandResult r = c.call(with(attach, {"--detach"}));
    const std::string id = JobId(r);
    ASSERT_FALSE(id.empty()) << r.Describe();
    const std::string config = ReadConfig(report_[0], milliseconds(20000));
    EXPECT_NE(config.find("REQUEST_TRACE_ID=" + id), std::string::npos)
        << config << "\n" << daemon_->LogTail();
    EXPECT_NE(config.find("ACTIVITIES_DURATION_MSECS=1000"), std::string::npos) << config;
    const CommandResult cancel = c.call({"jobs", "cancel", id});
    EXPECT_EQ(cancel.exit_code, 0) << cancel.Describe();
    EXPECT_TRUE(PollUntil([&] { return State(c.call, id) == "JOB_STATE_CANCELLED"; }, seconds(30),
                          milliseconds(200)))
        << State(c.call, id) << daemon_->LogTail();
  }
}

}  // namespace
}  // namespace libreyolo::daemon_test
