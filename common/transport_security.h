// How a process secures its gRPC links: explicit plaintext, or mutual TLS from three PEM files
// (the CA that signs every member, this process's certificate and its private key). One value is
// made at start from the flags (--tls_ca, --tls_cert, --tls_key or --insecure, see
// common/flags/security_flags.h) and handed, by value inside the option structs, to every place
// a channel or server is made; common/grpc_util.cc alone turns it into gRPC credentials.
//
// Under mutual TLS a server requires a client certificate signed by the CA, and a channel
// presents its own and checks the server's against the CA and the dialled host name (so a
// certificate carries SANs for the names and addresses it is dialled by).
//
// Value type: immutable and cheap to copy (the PEM text is shared), thread-safe.
// Errors: INVALID_ARGUMENT naming the flag and the file for a file that is missing, unreadable
// or not what the flag says (no certificate, no key, a key that is not the certificate's).
#ifndef RINGSIDE_COMMON_TRANSPORT_SECURITY_H_
#define RINGSIDE_COMMON_TRANSPORT_SECURITY_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace ringside {

// The paths of the three PEM files of mutual TLS (the flags' values).
struct TlsFiles {
  std::string ca;    // --tls_ca: the certificate authority every peer's certificate chains to
  std::string cert;  // --tls_cert: this process's certificate (chain)
  std::string key;   // --tls_key: its private key (unencrypted PEM)
};

class TransportSecurity {
 public:
  // Plaintext. The default of the option structs, which in-process tests use; every binary sets
  // its value from its flags, where plaintext must be asked for (--insecure).
  TransportSecurity() = default;
  static TransportSecurity Plaintext() { return TransportSecurity(); }
  // Reads and checks the three files once; later copies never touch the disk again.
  static absl::StatusOr<TransportSecurity> LoadMutualTls(const TlsFiles& files);

  bool is_tls() const { return pem_ != nullptr; }
  // The PEM text (empty under plaintext).
  const std::string& ca_pem() const;
  const std::string& cert_pem() const;
  const std::string& key_pem() const;
  // "plaintext" or "mutual TLS (CA /path/ca.pem)", for log lines.
  std::string Describe() const;

 private:
  struct Pem {
    std::string ca, cert, key;
    std::string ca_path;
  };
  explicit TransportSecurity(std::shared_ptr<const Pem> pem) : pem_(std::move(pem)) {}

  std::shared_ptr<const Pem> pem_;  // null: plaintext
};

}  // namespace ringside

#endif  // RINGSIDE_COMMON_TRANSPORT_SECURITY_H_
