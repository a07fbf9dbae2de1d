#include "server/daemon/security/auth.h"

#include <fcntl.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server_context.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/sha.h>
#include <openssl/x509.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "common/render/terminal_text.h"
#include "common/status/status_macros.h"
#include "server/daemon/security/regular_file.h"
#include "server/daemon/security/token_checks.h"

namespace libreyolo::daemon {
namespace {

std::string Sha256(absl::string_view data) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest);
  return std::string(reinterpret_cast<const char*>(digest), sizeof(digest));
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// "sha256:<64 hex>" -> the raw 32 bytes, or empty when malformed.
std::string DecodeSha256Hex(absl::string_view hex) {
  if (hex.size() != 2 * SHA256_DIGEST_LENGTH) return "";
  std::string raw;
  for (size_t i = 0; i < hex.size(); i += 2) {
    const int high = HexValue(hex[i]);
    const int low = HexValue(hex[i + 1]);
    if (high < 0 || low < 0) return "";
    raw.push_back(static_cast<char>(high * 16 + low));
  }
  return raw;
}

// The user name of `uid` from the password database, or "uid:<n>".
std::string UserNameOf(uid_t uid) {
  long size_hint = sysconf(_SC_GETPW_R_SIZE_MAX);
  size_t size = size_hint > 0 ? static_cast<size_t>(size_hint) : 16384;
  for (int attempt = 0; attempt < 6; ++attempt, size *= 2) {
    std::vector<char> buffer(size);
    passwd entry{};
    passwd* found = nullptr;
    const int error = getpwuid_r(uid, &entry, buffer.data(), buffer.size(), &found);
    if (error == ERANGE) continue;
    if (error == 0 && found != nullptr && found->pw_name != nullptr && *found->pw_name != '\0') {
      return found->pw_name;
    }
    break;
  }
  return absl::StrCat("uid:", uid);
}

// "Bearer <token>" (scheme case-insensitive) -> the token; nullopt for another shape.
std::optional<std::string> BearerToken(absl::string_view value) {
  value = absl::StripAsciiWhitespace(value);
  constexpr absl::string_view kScheme = "bearer";
  if (value.size() <= kScheme.size() ||
      !absl::EqualsIgnoreCase(value.substr(0, kScheme.size()), kScheme) ||
      !absl::ascii_isspace(static_cast<unsigned char>(value[kScheme.size()]))) {
    return std::nullopt;
  }
  const absl::string_view token = absl::StripLeadingAsciiWhitespace(value.substr(kScheme.size()));
  if (token.empty()) return std::nullopt;
  return std::string(token);
}

absl::StatusOr<std::string> ReadPemFile(const char* key, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int error = errno;
    if (error == ENOENT) {
      return absl::NotFoundError(absl::StrCat(key, " file ", path, " not found"));
    }
    return absl::FailedPreconditionError(
        absl::StrCat(key, " file ", path, " cannot be read: ", std::strerror(error)));
  }
  std::stringstream text;
  text << in.rdbuf();
  if (text.str().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(key, " file ", path, " is empty"));
  }
  return text.str();
}

std::string OpenSslError() {
  const unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) return "no PEM data";
  char text[256];
  ERR_error_string_n(code, text, sizeof(text));
  return text;
}

// Checks that the PEM texts parse and that the key belongs to the certificate, so that a bad
// file is reported at start-up by name instead of as a failed TLS handshake later.
absl::Status CheckKeyPair(const TlsConfig& tls, const std::string& cert_pem,
                          const std::string& key_pem) {
  BIO* cert_bio = BIO_new_mem_buf(cert_pem.data(), static_cast<int>(cert_pem.size()));
  X509* cert = PEM_read_bio_X509(cert_bio, nullptr, nullptr, nullptr);
  BIO_free(cert_bio);
  if (cert == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("tls.cert file ", tls.cert_file,
                                                   " holds no PEM certificate: ", OpenSslError()));
  }
  BIO* key_bio = BIO_new_mem_buf(key_pem.data(), static_cast<int>(key_pem.size()));
  EVP_PKEY* key = PEM_read_bio_PrivateKey(key_bio, nullptr, nullptr, nullptr);
  BIO_free(key_bio);
  if (key == nullptr) {
    X509_free(cert);
    return absl::InvalidArgumentError(absl::StrCat(
        "tls.key file ", tls.key_file, " holds no unencrypted PEM private key: ", OpenSslError()));
  }
  const bool match = X509_check_private_key(cert, key) == 1;
  ERR_clear_error();
  EVP_PKEY_free(key);
  X509_free(cert);
  if (!match) {
    return absl::InvalidArgumentError(
        absl::StrCat("tls.key file ", tls.key_file, " is not the key of tls.cert ", tls.cert_file));
  }
  return absl::OkStatus();
}

}  // namespace

bool IsValidUserName(absl::string_view user) {
  return !user.empty() && user.size() <= kMaxUserNameBytes &&
         std::all_of(user.begin(), user.end(), [](char c) {
           return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' ||
                  c == '.' || c == '@';
         });
}

// ---- TokenTable -----------------------------------------------------------------------------

absl::StatusOr<TokenTable> TokenTable::Parse(const std::vector<std::string>& lines,
                                             const std::string& origin) {
  TokenTable table;
  std::vector<size_t> line_of;  // line number of each entry, for duplicate messages
  for (size_t i = 0; i < lines.size(); ++i) {
    const size_t line_number = i + 1;
    auto bad = [&](absl::string_view what) {
      return absl::InvalidArgumentError(absl::StrCat(origin, " line ", line_number, ": ", what));
    };
    std::vector<absl::string_view> fields =
        absl::StrSplit(lines[i], absl::ByAnyChar(" \t\r"), absl::SkipEmpty());
    if (fields.empty() || absl::StartsWith(fields[0], "#")) continue;
    // A trailing "# comment" after the fields is allowed.
    for (size_t f = 1; f < fields.size(); ++f) {
      if (absl::StartsWith(fields[f], "#")) {
        fields.resize(f);
        break;
      }
    }
    if (fields.size() < 2 || fields.size() > 3) {
      return bad("expected '<token> <user> [admin]'");
    }
    Entry entry;
    if (absl::StartsWith(fields[0], "sha256:")) {
      entry.sha256 = DecodeSha256Hex(fields[0].substr(7));
      if (entry.sha256.empty()) return bad("a sha256: token needs 64 hex digits");
    } else {
      entry.sha256 = Sha256(fields[0]);
      table.plaintext_tokens_.push_back({line_number, fields[0].size()});
    }
    if (!IsValidUserName(fields[1])) {
      return bad(absl::StrCat("user '", Excerpt(std::string(fields[1])),
                              "' may hold only letters, digits, _ - . @"));
    }
    entry.user = std::string(fields[1]);
    if (fields.size() == 3) {
      if (fields[2] != "admin") {
        return bad(absl::StrCat("third field must be 'admin', got '",
                                Excerpt(std::string(fields[2])), "'"));
      }
      entry.admin = true;
    }
    for (size_t e = 0; e < table.entries_.size(); ++e) {
      if (table.entries_[e].sha256 == entry.sha256) {
        return bad(absl::StrCat("duplicate token (same as line ", line_of[e], ")"));
      }
    }
    table.entries_.push_back(std::move(entry));
    line_of.push_back(line_number);
  }
  return table;
}

absl::StatusOr<TokenTable> TokenTable::Load(const std::string& path) {
  const absl::StatusOr<std::string> text = ReadRegularFile(
      path, "tokens file", "point tokens_file at a regular file (mode 600)",
      [&](const struct stat& info) -> absl::Status {
        RETURN_IF_ERROR(CheckTokensFileOwner(path, info.st_uid, ::geteuid()));
        if ((info.st_mode & 077) == 0) return absl::OkStatus();
        return absl::FailedPreconditionError(absl::StrFormat(
            "tokens file %s is accessible by group/others (mode %04o): it holds secrets, run "
            "`chmod 600 %s`",
            path, info.st_mode & 07777, path));
      });
  if (!text.ok()) return text.status();
  return Parse(absl::StrSplit(*text, '\n'), absl::StrCat("tokens file ", path));
}

TokenTable TokenTable::FromLines(const std::vector<std::string>& lines) {
  absl::StatusOr<TokenTable> table = Parse(lines);
  if (!table.ok()) {
    std::fprintf(stderr, "TokenTable::FromLines: %s\n", table.status().ToString().c_str());
    std::abort();
  }
  return *std::move(table);
}

std::optional<Identity> TokenTable::Lookup(const std::string& token) const {
  const std::string digest = Sha256(token);
  const Entry* match = nullptr;
  // Every entry is compared (no early exit), each in constant time.
  for (const Entry& entry : entries_) {
    if (CRYPTO_memcmp(entry.sha256.data(), digest.data(), SHA256_DIGEST_LENGTH) == 0) {
      match = &entry;
    }
  }
  if (match == nullptr) return std::nullopt;
  Identity identity;
  identity.user = match->user;
  identity.admin = match->admin;
  return identity;
}

// ---- Authenticator --------------------------------------------------------------------------

Authenticator::Authenticator(TokenTable tokens, std::vector<std::string> admins)
    : tokens_(std::move(tokens)), admins_(std::move(admins)) {}

bool Authenticator::IsAdmin(const std::string& user) const {
  std::lock_guard<std::mutex> lock(mu_);
  return std::find(admins_.begin(), admins_.end(), user) != admins_.end();
}

void Authenticator::Reload(TokenTable tokens, std::vector<std::string> admins) {
  std::lock_guard<std::mutex> lock(mu_);
  tokens_ = std::move(tokens);
  admins_ = std::move(admins);
}

void Authenticator::RecordUnixPeer(const std::string& peer, uid_t uid) {
  std::string name = UserNameOf(uid);  // outside the lock: NSS may be slow
  std::lock_guard<std::mutex> lock(mu_);
  unix_peers_[peer] = uid;
  tcp_peers_.erase(peer);
  user_names_[uid] = std::move(name);
}

void Authenticator::RecordTcpPeer(const std::string& peer) {
  std::lock_guard<std::mutex> lock(mu_);
  unix_peers_.erase(peer);
  tcp_peers_.insert(peer);
}

void Authenticator::ForgetUnixPeer(const std::string& peer) {
  std::lock_guard<std::mutex> lock(mu_);
  unix_peers_.erase(peer);
}

absl::StatusOr<Identity> Authenticator::Identify(const grpc::ServerContextBase& context) const {
  std::vector<std::string> authorization;
  const auto range = context.client_metadata().equal_range("authorization");
  for (auto it = range.first; it != range.second; ++it) {
    authorization.emplace_back(it->second.data(), it->second.size());
  }
  return Identify(context.peer(), authorization);
}

absl::StatusOr<Identity> Authenticator::Identify(
    const std::string& peer, const std::vector<std::string>& authorization) const {
  // The token, when one was sent; an error for a malformed or repeated header.
  std::optional<std::string> token;
  absl::Status token_error = absl::OkStatus();
  if (authorization.size() > 1) {
    token_error = absl::UnauthenticatedError("more than one authorization header");
  } else if (authorization.size() == 1) {
    token = BearerToken(authorization[0]);
    if (!token.has_value()) {
      token_error = absl::UnauthenticatedError("authorization header: expected 'Bearer <token>'");
    }
  }
  auto from_token = [this](const std::string& value) -> std::optional<Identity> {
    std::optional<Identity> identity;
    {
      std::lock_guard<std::mutex> lock(mu_);
      identity = tokens_.Lookup(value);
    }
    if (identity.has_value() && IsAdmin(identity->user)) identity->admin = true;
    return identity;
  };

  std::optional<uid_t> uid;
  std::string uid_name;
  bool tcp = absl::StartsWith(peer, "ipv4:") || absl::StartsWith(peer, "ipv6:");
  {
    std::lock_guard<std::mutex> lock(mu_);
    tcp = tcp || tcp_peers_.count(peer) > 0;
    if (const auto it = unix_peers_.find(peer); it != unix_peers_.end()) {
      uid = it->second;
      if (const auto name = user_names_.find(*uid); name != user_names_.end()) {
        uid_name = name->second;
      }
    }
  }
  if (uid.has_value()) {
    // The kernel vouches for the uid; a valid token may name another user, an invalid one is
    // ignored (a stale LIBREYOLO_TOKEN must not lock a local user out of their own daemon).
    Identity identity;
    if (std::optional<Identity> by_token = token ? from_token(*token) : std::nullopt) {
      identity = std::move(*by_token);
    } else {
      identity.user = uid_name.empty() ? absl::StrCat("uid:", *uid) : uid_name;
      identity.admin = *uid == 0 || IsAdmin(identity.user);
    }
    identity.unix_peer = true;
    identity.uid = uid;
    return identity;
  }
  if (tcp) {
    if (!token_error.ok()) return token_error;
    if (!token.has_value()) {
      return absl::UnauthenticatedError(
          "missing bearer token: pass --token-file or set LIBREYOLO_TOKEN");
    }
    std::optional<Identity> identity = from_token(*token);
    if (!identity.has_value()) return absl::UnauthenticatedError("unknown token");
    return *std::move(identity);
  }
  return absl::UnauthenticatedError(
      absl::StrCat("unrecognized connection '", peer,
                   "': only TCP with a bearer token and libreyolod's own Unix socket are served"));
}

// ---- Credentials ----------------------------------------------------------------------------

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const TlsConfig& tls) {
  if (tls.cert_file.empty()) {
    if (!tls.key_file.empty() || !tls.client_ca_file.empty() || tls.require_client_cert) {
      return absl::InvalidArgumentError(
          "tls.key/tls.client_ca/tls.require_client_cert are set without tls.cert");
    }
    return grpc::InsecureServerCredentials();
  }
  if (tls.key_file.empty()) {
    return absl::InvalidArgumentError(
        "tls.cert is set but tls.key is not: set tls.key (--tls-key)");
  }
  if (tls.require_client_cert && tls.client_ca_file.empty()) {
    return absl::InvalidArgumentError(
        "tls.require_client_cert needs tls.client_ca (--tls-client-ca)");
  }
  ASSIGN_OR_RETURN(std::string cert, ReadPemFile("tls.cert", tls.cert_file));
  ASSIGN_OR_RETURN(std::string key, ReadPemFile("tls.key", tls.key_file));
  RETURN_IF_ERROR(CheckKeyPair(tls, cert, key));

  grpc_ssl_client_certificate_request_type request = GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE;
  std::string client_ca;
  if (!tls.client_ca_file.empty()) {
    ASSIGN_OR_RETURN(client_ca, ReadPemFile("tls.client_ca", tls.client_ca_file));
    request = tls.require_client_cert ? GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY
                                      : GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  grpc::SslServerCredentialsOptions options(request);
  options.pem_root_certs = client_ca;
  options.pem_key_cert_pairs.push_back({key, cert});
  return grpc::SslServerCredentials(options);
}

// ---- attach_unix_users (issue 37 §4) -------------------------------------------------------

absl::StatusOr<AttachUnixUser> ParseAttachUnixUser(absl::string_view entry) {
  const size_t eq = entry.find('=');
  const absl::string_view token_user = entry.substr(0, eq);
  const absl::string_view unix_user =
      eq == absl::string_view::npos ? absl::string_view() : entry.substr(eq + 1);
  if (eq == absl::string_view::npos || token_user.empty() || unix_user.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", Excerpt(std::string(entry)), "' is not TOKEN_USER=UNIX_USER (e.g. alice=alice)"));
  }
  if (!IsValidUserName(token_user)) {
    return absl::InvalidArgumentError(absl::StrCat("'", Excerpt(std::string(token_user)),
                                                   "' is not a token user name: user names hold "
                                                   "1..",
                                                   kMaxUserNameBytes, " letters, digits, _ - . @"));
  }
  if (!IsValidUserName(unix_user) || unix_user.size() > 32) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", Excerpt(std::string(unix_user)), "' is not a Unix user name (at most 32 letters, "
        "digits, _ - . @)"));
  }
  return AttachUnixUser{std::string(token_user), std::string(unix_user)};
}

absl::StatusOr<uid_t> AttachUnixUid(const std::string& unix_user) {
  std::vector<char> buf(16384);
  passwd pw{};
  passwd* found = nullptr;
  const int err = ::getpwnam_r(unix_user.c_str(), &pw, buf.data(), buf.size(), &found);
  if (err != 0 || found == nullptr) {
    return absl::NotFoundError(absl::StrCat("Unix user '", unix_user, "' is not on this host",
                                            err != 0 ? absl::StrCat(" (", std::strerror(err), ")")
                                                     : std::string()));
  }
  if (found->pw_uid == 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "Unix user '", unix_user, "' is root, who may attach to every process: give the token "
        "user `admin` in the tokens file instead"));
  }
  return found->pw_uid;
}

absl::StatusOr<std::optional<uid_t>> MappedUnixUid(const std::vector<std::string>& entries,
                                                   const std::string& token_user) {
  for (const std::string& entry : entries) {
    absl::StatusOr<AttachUnixUser> m = ParseAttachUnixUser(entry);
    if (!m.ok() || m->token_user != token_user) continue;  // the config's check refused bad ones
    ASSIGN_OR_RETURN(uid_t uid, AttachUnixUid(m->unix_user));
    return std::optional<uid_t>(uid);
  }
  return std::optional<uid_t>();
}

}  // namespace libreyolo::daemon
