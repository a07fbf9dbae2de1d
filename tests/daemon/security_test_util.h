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

#include "server/daemon/security/auth.h"
#include "tests/support/test_files.h"

namespace libreyolo::daemon::testing_util {

namespace fs = std::filesystem;

// ---- helpers --------------------------------------------------------------------------------

using ::libreyolo::test::ReadFile;
using ::libreyolo::test::TempDir;
using ::libreyolo::test::WriteFile;

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
