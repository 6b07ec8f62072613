// A throw-away certificate authority for clusters on one machine (`ringside up`, `compare`, the
// multi-process tests): an EC P-256 CA made in memory, and per-process certificates it signs,
// written as PEM files for the processes' --tls_ca, --tls_cert and --tls_key.
//
// Every certificate it issues serves both ends of a link (extended key usage serverAuth and
// clientAuth: a member is a server to some peers and a client of others) and names the loopback
// addresses a local process is dialled by (IP:127.0.0.1, IP:::1, DNS:localhost) plus any extra
// DNS names and IP addresses (a lab host's address in its network namespace). The CA's key never
// leaves memory, so nobody can issue more once the owner is gone.
//
// Keys are written 0600, certificates 0644. Thread-compatible (a copy may be used from another
// thread). Errors: INTERNAL when OpenSSL fails, the file errors of common/file_util.h.
#ifndef RINGSIDE_LAUNCH_CERTIFICATES_H_
#define RINGSIDE_LAUNCH_CERTIFICATES_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/transport_security.h"

namespace ringside::launch {

class CertificateAuthority {
 public:
  // A new CA named `name`, valid for `validity` (from an hour ago, for clocks slightly apart);
  // its certificate is written to `dir`/ca.pem (`dir` must exist).
  static absl::StatusOr<CertificateAuthority> Create(const std::string& dir,
                                                     const std::string& name = "ringside local CA",
                                                     absl::Duration validity = absl::Hours(24 *
                                                                                           365));

  // A key and a certificate for `name` (its common name), signed by this CA, written to
  // `dir`/<name>.pem and `dir`/<name>.key. The paths, with the CA's, ready for the flags.
  absl::StatusOr<TlsFiles> Issue(const std::string& name,
                                 const std::vector<std::string>& dns_names = {},
                                 const std::vector<std::string>& ip_addresses = {}) const;

  const std::string& ca_file() const { return ca_file_; }
  // "--tls_ca=... --tls_cert=... --tls_key=..." of `files`, as one argv entry each.
  static std::vector<std::string> Flags(const TlsFiles& files);

 private:
  CertificateAuthority(std::string dir, std::string ca_file, std::string cert_pem,
                       std::string key_pem, absl::Duration validity)
      : dir_(std::move(dir)),
        ca_file_(std::move(ca_file)),
        cert_pem_(std::move(cert_pem)),
        key_pem_(std::move(key_pem)),
        validity_(validity) {}

  std::string dir_;
  std::string ca_file_;
  std::string cert_pem_;  // the CA's certificate
  std::string key_pem_;   // the CA's private key: in memory only
  absl::Duration validity_;
};

}  // namespace ringside::launch

#endif  // RINGSIDE_LAUNCH_CERTIFICATES_H_
