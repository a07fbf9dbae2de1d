// Helpers of the daemon's security tests (daemon_config_test, auth_test, secure_server_test,
// prometheus_test): a temporary directory, files with a mode, our user name, a token table.
#ifndef LIBREYOLO_TESTS_DAEMON_SECURITY_TEST_UTIL_H_
#define LIBREYOLO_TESTS_DAEMON_SECURITY_TEST_UTIL_H_

#include <gtest/gtest.h>
#include <pwd.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "server/daemon/auth.h"

namespace libreyolo::daemon::testing_util {

namespace fs = std::filesystem;

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

inline void WriteFile(const std::string& path, const std::string& text, mode_t mode = 0600) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  ASSERT_EQ(chmod(path.c_str(), mode), 0) << path;
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

inline std::string OurUserName() {
  const passwd* entry = getpwuid(getuid());
  return entry != nullptr ? entry->pw_name : "uid:" + std::to_string(getuid());
}


constexpr char kAliceToken[] = "alice-secret-token-0123456789";

// alice (kAliceToken), bob (an admin by his token line), carol; `admins` by name.
inline Authenticator MakeAuthenticator(std::vector<std::string> admins = {"carol"}) {
  return Authenticator(TokenTable::FromLines({std::string(kAliceToken) + " alice",
                                              "tok-bob bob admin", "tok-carol carol"}),
                       std::move(admins));
}

}  // namespace libreyolo::daemon::testing_util

#endif  // LIBREYOLO_TESTS_DAEMON_SECURITY_TEST_UTIL_H_
