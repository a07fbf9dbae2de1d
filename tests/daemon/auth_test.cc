// The daemon's authentication: the tokens file and the Authenticator's decisions.
#include <gmock/gmock.h>
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

#include "server/daemon/config/daemon_config.h"
#include "server/daemon/security/auth.h"
#include "server/daemon/security/token_checks.h"
#include "tests/daemon/security_test_util.h"

namespace libreyolo::daemon {
namespace {

using ::testing::HasSubstr;
using testing_util::kAliceToken;
using testing_util::MakeAuthenticator;
using testing_util::ReadFile;
using testing_util::TempDir;
using testing_util::WriteFile;

// ---- tokens ----------------------------------------------------------------------------------

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


// ---- what the daemon asks of its tokens file (issue 40 A.10, token_checks.h) ----------------

TEST(TokenChecksTest, APlaintextTokenUnderSixteenBytesIsRefusedNamingItsLine) {
  std::vector<std::string> warnings;
  const std::vector<std::string> tcp = {"tcp:127.0.0.1:0"};
  const TokenTable weak = TokenTable::FromLines(
      {"# ops", std::string(kSomeDigest) + " ops admin", "0123456789abcdef bob", "t0k3n alice"});
  const absl::Status status = CheckLoadedTokens("/etc/t", weak, tcp, &warnings);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("tokens file /etc/t line 4: a plaintext token of 5 bytes can be guessed "
                        "(at least 16 are needed): make one with `openssl rand -hex 32`"));
  // 16 bytes pass; a sha256: entry's token is not in the file, so it is not judged.
  const TokenTable strong = TokenTable::FromLines(
      {std::string(kSomeDigest) + " ops admin", "0123456789abcdef bob", "# t0k3n alice"});
  EXPECT_TRUE(CheckLoadedTokens("/etc/t", strong, tcp, &warnings).ok());
  EXPECT_TRUE(warnings.empty());
  const TokenTable fifteen = TokenTable::FromLines({"0123456789abcde bob"});
  EXPECT_THAT(std::string(CheckLoadedTokens("/etc/t", fifteen, tcp, &warnings).message()),
              HasSubstr("line 1: a plaintext token of 15 bytes"));
}

TEST(TokenChecksTest, AnEmptyTokensFileWarnsOnlyWhenTheDaemonListensOnTcp) {
  const TokenTable empty = TokenTable::FromLines({"# nobody yet", ""});
  std::vector<std::string> warnings;
  EXPECT_TRUE(CheckLoadedTokens("/etc/t", empty, {"unix:/run/l.sock"}, &warnings).ok());
  EXPECT_TRUE(warnings.empty());
  EXPECT_TRUE(
      CheckLoadedTokens("/etc/t", empty, {"unix:/run/l.sock", "0.0.0.0:50051", "tcp:[::]:1"},
                        &warnings)
          .ok());
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0],
            "tokens file /etc/t holds no token, so no caller can authenticate on 0.0.0.0:50051: "
            "add '<token> <user>' lines and reload (SIGHUP), or remove the TCP address from "
            "listen");
  warnings.clear();
  const TokenTable one = TokenTable::FromLines({std::string(kAliceToken) + " alice"});
  EXPECT_TRUE(CheckLoadedTokens("/etc/t", one, {"tcp:127.0.0.1:0"}, &warnings).ok());
  EXPECT_TRUE(warnings.empty());
}

TEST(TokenChecksTest, ATokensFileOwnedByAnotherUserIsRefused) {
  EXPECT_TRUE(CheckTokensFileOwner("/etc/t", 0, 0).ok());
  EXPECT_TRUE(CheckTokensFileOwner("/etc/t", 0, 99991).ok());    // root's, daemon not root
  EXPECT_TRUE(CheckTokensFileOwner("/etc/t", 99991, 99991).ok());  // the daemon's user's
  const absl::Status other = CheckTokensFileOwner("/etc/t", 424242, 99991);
  EXPECT_EQ(other.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(other.message()),
              HasSubstr("tokens file /etc/t is owned by uid 424242, who is neither root nor "
                        "libreyolod's user (uid 99991) and could rewrite it"));
  EXPECT_THAT(std::string(other.message()), HasSubstr("`chown root /etc/t`"));
  EXPECT_EQ(CheckTokensFileOwner("/etc/t", 424242, 0).code(),
            absl::StatusCode::kFailedPrecondition);

  // TokenTable::Load checks the opened file's owner (only root can give a file away).
  if (::geteuid() != 0) GTEST_SKIP() << "giving a file to another user needs root";
  TempDir dir;
  const std::string path = dir.File("tokens");
  WriteFile(path, std::string(kAliceToken) + " alice\n", 0600);
  ASSERT_EQ(::chown(path.c_str(), 65534, 65534), 0);
  const absl::StatusOr<TokenTable> table = TokenTable::Load(path);
  EXPECT_EQ(table.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(table.status().message()), HasSubstr("is owned by uid 65534"));
  ASSERT_EQ(::chown(path.c_str(), 0, 0), 0);
  EXPECT_TRUE(TokenTable::Load(path).ok());
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

}  // namespace
}  // namespace libreyolo::daemon
