// What the daemon asks of its tokens file beyond its syntax (issue 40 A.10), at start-up and on
// each SIGHUP alike. The same file is refused at both (exit 2 at start-up; on a reload the
// running tokens stay and the log says why) or warned about at both:
// - refused: a plaintext token shorter than kMinPlaintextTokenBytes (a guessable bearer secret:
//   on TCP, and on the Unix socket where a valid token names its user, admin included);
// - refused: a file owned by a user who is neither root nor the daemon's user (that user could
//   rewrite it and make themselves admin; sshd's StrictModes refuses such an authorized_keys);
// - warned: a file with no token while the daemon listens on TCP (no TCP caller can
//   authenticate). Not refused: emptying the file and reloading is how an operator revokes
//   every token user at once, which a refused reload would keep from happening.
// Plain arguments only (the table, the file's owner, the listen addresses): no config types.
#ifndef LIBREYOLO_SERVER_DAEMON_SECURITY_TOKEN_CHECKS_H_
#define LIBREYOLO_SERVER_DAEMON_SECURITY_TOKEN_CHECKS_H_

#include <sys/types.h>

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "server/daemon/security/auth.h"

namespace libreyolo::daemon {

// The shortest plaintext token the daemon accepts, in bytes (`openssl rand -hex 32` gives 64).
// A sha256:<hex> entry is not checked: its token is not in the file.
inline constexpr size_t kMinPlaintextTokenBytes = 16;

// FAILED_PRECONDITION naming `path`, its owner and `chown` when `owner` is neither root nor
// `daemon_uid`; OK otherwise. Checked on the opened file (TokenTable::Load).
absl::Status CheckTokensFileOwner(const std::string& path, uid_t owner, uid_t daemon_uid);

// The loaded `table` of the tokens file `path` for a daemon listening on `listen` ("unix:..."
// or a TCP address): INVALID_ARGUMENT naming the line of a plaintext token that is too short;
// else OK, with a warning appended to `warnings` when the table is empty and `listen` has a TCP
// address.
absl::Status CheckLoadedTokens(const std::string& path, const TokenTable& table,
                               const std::vector<std::string>& listen,
                               std::vector<std::string>* warnings);

}  // namespace libreyolo::daemon

#endif  // LIBREYOLO_SERVER_DAEMON_SECURITY_TOKEN_CHECKS_H_
