// The daemon's TLS settings (DaemonConfig::tls, the `tls` keys and --tls-* flags), which
// MakeServerCredentials (auth.h) turns into server credentials. Here, below config/, so that the
// security layer needs nothing of the daemon's configuration.
#ifndef LIBREYOLO_SERVER_DAEMON_SECURITY_TLS_CONFIG_H_
#define LIBREYOLO_SERVER_DAEMON_SECURITY_TLS_CONFIG_H_

#include <string>

namespace libreyolo::daemon {

struct TlsConfig {
  std::string cert_file;       // PEM server certificate chain; empty = no TLS
  std::string key_file;        // PEM private key
  std::string client_ca_file;  // PEM CA for client certificates; empty = none asked for
  bool require_client_cert = false;
};

}  // namespace libreyolo::daemon

#endif  // LIBREYOLO_SERVER_DAEMON_SECURITY_TLS_CONFIG_H_
