#include "server/daemon/config/daemon_config.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <optional>
#include <set>
#include <sstream>
#include <tuple>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "common/render/terminal_text.h"
#include "common/status/status_macros.h"
#include "server/daemon/config/daemon_config_internal.h"
#include "server/daemon/config/daemon_options.h"

namespace libreyolo::daemon {

namespace {

bool AllDigits(absl::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return absl::ascii_isdigit(static_cast<unsigned char>(c));
  });
}

}  // namespace

absl::StatusOr<DaemonConfig> LoadDaemonConfigWithFlags(const ParsedFlags& flags) {
  DaemonConfig config;
  if (!flags.config_file.empty()) {
    ASSIGN_OR_RETURN(config, LoadDaemonConfig(flags.config_file));
  }
  // Flags win over the file.
  RETURN_IF_ERROR(ApplyParsedFlags(flags, &config));
  RETURN_IF_ERROR(ValidateDaemonConfig(config));
  return config;
}

absl::StatusOr<ListenAddress> ParseListenAddress(const std::string& address) {
  auto bad = [&address]() {
    return absl::InvalidArgumentError(
        absl::StrCat("listen '", Excerpt(address),
                     "': expected unix:/path, tcp:HOST:PORT or HOST:PORT ([::1]:PORT for IPv6)"));
  };
  ListenAddress result;
  absl::string_view rest = address;
  if (absl::StartsWith(rest, "unix:")) {
    rest.remove_prefix(5);
    if (rest.empty()) return bad();
    result.unix_socket = true;
    result.target = std::string(rest);
    return result;
  }
  if (absl::StartsWith(rest, "tcp:")) rest.remove_prefix(4);
  const size_t colon = rest.rfind(':');
  if (colon == absl::string_view::npos || colon == 0) return bad();
  const absl::string_view host = rest.substr(0, colon);
  const absl::string_view port = rest.substr(colon + 1);
  int port_number = 0;
  if (!AllDigits(port) || !absl::SimpleAtoi(port, &port_number) || port_number > 65535) {
    return bad();
  }
  const bool bracketed = absl::StartsWith(host, "[") && absl::EndsWith(host, "]");
  if (!bracketed && host.find(':') != absl::string_view::npos) return bad();  // bare IPv6
  if (host.find('/') != absl::string_view::npos) return bad();
  result.target = std::string(rest);
  return result;
}

namespace {

// Rules across fields that no single option's bound catches (issue 40 A.10): each used to
// start a daemon that failed later with the wrong exit code or blamed another libreyolod.
void CrossFieldProblems(const DaemonConfig& config, std::vector<std::string>* problems) {
  // Each well-formed address repeated, once (a malformed one is its own problem; past the
  // cap on addresses the cap is the problem).
  std::set<std::string> seen, said;
  for (const std::string& address : config.listen) {
    if (config.listen.size() > kMaxListenAddresses) break;
    if (!seen.insert(address).second && ParseListenAddress(address).ok() &&
        said.insert(address).second) {
      problems->push_back(absl::StrCat("listen: '", Excerpt(address),
                                       "' is given twice: give each address once"));
    }
  }
  namespace fs = std::filesystem;
  if (!config.state_dir.empty() && !config.store_dir.empty()) {
    std::error_code ec;
    const fs::path state = fs::weakly_canonical(fs::absolute(config.state_dir, ec), ec);
    const fs::path store = fs::weakly_canonical(fs::absolute(config.store_dir, ec), ec);
    // One folder for both used to fail as "in use by another libreyolod" (exit 3) naming the
    // daemon's own pid. (The store inside the state dir is the private daemon's own layout.)
    if (state == store) {
      problems->push_back(absl::StrCat(
          "state_dir and store_dir are the same folder (", Excerpt(config.state_dir, 4096),
          "): give them folders of their own (--state-dir, --store-dir)"));
    }
  }
  struct stat st {};
  if (!config.state_dir.empty() && ::stat(config.state_dir.c_str(), &st) == 0 &&
      (st.st_mode & S_IWOTH) != 0) {
    problems->push_back(absl::StrCat("state_dir ", Excerpt(config.state_dir, 4096),
                                     " is writable by every user (mode ",
                                     absl::StrFormat("%04o", st.st_mode & 07777),
                                     "): any user could rewrite job records; chmod 0700 it"));
  }
  if (!config.lease_dir.empty() &&
      (::stat(config.lease_dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))) {
    problems->push_back(absl::StrCat("lease_dir (--lease-dir) ", Excerpt(config.lease_dir, 4096),
                                     " is not a directory: make it, or leave the option out"));
  }
  const Limits& l = config.limits;
  const std::tuple<const char*, int64_t, int64_t> per_user[] = {
      {"max_watchers", l.max_watchers_per_user, l.max_watchers},
      {"max_reads", l.max_reads_per_user, l.max_reads},
      {"max_downloads", l.max_downloads_per_user, l.max_downloads},
  };
  for (const auto& [name, mine, all] : per_user) {
    if (mine > all && all > 0) {
      problems->push_back(absl::StrCat("limits.", name, "_per_user (", mine,
                                       ") is above limits.", name, " (", all,
                                       "): a user's share cannot exceed the total (",
                                       DaemonFlagForKey(absl::StrCat("limits.", name, "_per_user")),
                                       ", ", DaemonFlagForKey(absl::StrCat("limits.", name)), ")"));
    }
  }
}

// TLS's files come in pairs, and TCP needs TLS (or insecure_tcp) and bearer tokens.
void TransportProblems(const DaemonConfig& config, std::vector<std::string>* problems) {
  std::string first_tcp;
  for (const std::string& address : config.listen) {
    if (config.listen.size() > kMaxListenAddresses) break;
    absl::StatusOr<ListenAddress> parsed = ParseListenAddress(address);
    if (parsed.ok() && !parsed->unix_socket) {
      first_tcp = Excerpt(address);
      break;
    }
  }
  const TlsConfig& tls = config.tls;
  const bool has_tls = !tls.cert_file.empty();
  if (!tls.cert_file.empty() && tls.key_file.empty()) {
    problems->push_back("tls.cert is set but tls.key is not: set tls.key (--tls-key)");
  }
  if (tls.cert_file.empty() && !tls.key_file.empty()) {
    problems->push_back("tls.key is set but tls.cert is not: set tls.cert (--tls-cert)");
  }
  if (!tls.client_ca_file.empty() && !has_tls) {
    problems->push_back(
        "tls.client_ca is set without tls.cert: client certificates need TLS, set "
        "tls.cert/tls.key (--tls-cert/--tls-key)");
  }
  if (tls.require_client_cert && tls.client_ca_file.empty()) {
    problems->push_back(
        "tls.require_client_cert needs tls.client_ca (--tls-client-ca) to verify client "
        "certificates");
  }
  if (first_tcp.empty()) return;
  if (!has_tls && !config.insecure_tcp) {
    problems->push_back(absl::StrCat("listen ", first_tcp,
                                     " without TLS: set tls.cert/tls.key, or --insecure-tcp for a "
                                     "trusted network"));
  }
  if (config.tokens_file.empty()) {
    problems->push_back(absl::StrCat("listen ", first_tcp,
                                     ": TCP callers authenticate with bearer tokens: set "
                                     "tokens_file (--tokens-file)"));
  }
}

}  // namespace

absl::Status ValidateDaemonConfig(const DaemonConfig& config) {
  std::vector<std::string> problems;
  CrossFieldProblems(config, &problems);
  // Each option's own bound and rule (daemon_options.cc), then the rules across options.
  OptionProblems(config, &problems);
  TransportProblems(config, &problems);
  if (config.max_connections_per_peer > config.max_connections) {
    problems.push_back(absl::StrCat(
        "max_connections_per_peer (--max-connections-per-peer): ", "expected 1..max_connections (",
        config.max_connections, "), got ", config.max_connections_per_peer));
  }
  if (problems.empty()) return absl::OkStatus();
  const size_t more =
      problems.size() > kMaxReportedProblems ? problems.size() - kMaxReportedProblems : 0;
  problems.resize(problems.size() - more);
  if (more > 0) problems.push_back(absl::StrCat("and ", more, " more problems"));
  return absl::InvalidArgumentError(absl::StrJoin(problems, "; "));
}

}  // namespace libreyolo::daemon
