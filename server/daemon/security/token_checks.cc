#include "server/daemon/security/token_checks.h"

#include <pwd.h>
#include <unistd.h>

#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/render/terminal_text.h"

namespace libreyolo::daemon {
namespace {

// "uid 1234 (alice)", or "uid 1234" when the password database does not know it.
std::string DescribeUid(uid_t uid) {
  std::vector<char> buffer(16384);
  passwd entry{};
  passwd* found = nullptr;
  if (::getpwuid_r(uid, &entry, buffer.data(), buffer.size(), &found) == 0 && found != nullptr &&
      found->pw_name != nullptr && *found->pw_name != '\0') {
    return absl::StrCat("uid ", uid, " (", Excerpt(found->pw_name), ")");
  }
  return absl::StrCat("uid ", uid);
}

}  // namespace

absl::Status CheckTokensFileOwner(const std::string& path, uid_t owner, uid_t daemon_uid) {
  if (owner == 0 || owner == daemon_uid) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "tokens file ", path, " is owned by ", DescribeUid(owner), ", who is neither root nor ",
      "libreyolod's user (", DescribeUid(daemon_uid), ") and could rewrite it to make ",
      "themselves admin: run `chown root ", path, "` (or chown it to libreyolod's user)"));
}

absl::Status CheckLoadedTokens(const std::string& path, const TokenTable& table,
                               const std::vector<std::string>& listen,
                               std::vector<std::string>* warnings) {
  for (const TokenTable::PlaintextToken& token : table.plaintext_tokens()) {
    if (token.bytes >= kMinPlaintextTokenBytes) continue;
    return absl::InvalidArgumentError(absl::StrCat(
        "tokens file ", path, " line ", token.line, ": a plaintext token of ", token.bytes,
        " bytes can be guessed (at least ", kMinPlaintextTokenBytes,
        " are needed): make one with `openssl rand -hex 32` and store its sha256:<hex> "
        "(docs/deploy.md, \"Tokens\")"));
  }
  if (table.size() > 0 || warnings == nullptr) return absl::OkStatus();
  for (const std::string& address : listen) {
    if (absl::StartsWith(address, "unix:")) continue;
    warnings->push_back(absl::StrCat(
        "tokens file ", path, " holds no token, so no caller can authenticate on ",
        Excerpt(address), ": add '<token> <user>' lines and reload (SIGHUP), or remove the TCP ",
        "address from listen"));
    break;
  }
  return absl::OkStatus();
}

}  // namespace libreyolo::daemon
