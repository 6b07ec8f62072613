// The transport-security flags every binary that opens gRPC links shares, defined once so their
// names, help and checks cannot drift (names fixed by docs/contract.md):
//   --tls_ca=PEM --tls_cert=PEM --tls_key=PEM   mutual TLS (all three, or none)
//   --insecure                                  plaintext, the explicit opt-out
// Neither, some but not all three, or both are errors: a process never falls back to plaintext
// because a flag was forgotten.
#ifndef RINGSIDE_COMMON_FLAGS_SECURITY_FLAGS_H_
#define RINGSIDE_COMMON_FLAGS_SECURITY_FLAGS_H_

#include "absl/status/statusor.h"
#include "common/transport_security.h"

namespace ringside {

struct SecurityFlags {
  TlsFiles tls;
  bool insecure = false;
};

// The flags' values, unchecked (`ringside up` and `compare` make their own certificates and
// take only --insecure).
SecurityFlags SecurityFlagsFromCommandLine();

// The one value the flags ask for; INVALID_ARGUMENT with a one-line message naming the flags
// (or the file) otherwise. Pure but for reading the three files.
absl::StatusOr<TransportSecurity> ResolveSecurityFlags(const SecurityFlags& flags);

// ResolveSecurityFlags(SecurityFlagsFromCommandLine()).
absl::StatusOr<TransportSecurity> TransportSecurityFromFlags();

}  // namespace ringside

#endif  // RINGSIDE_COMMON_FLAGS_SECURITY_FLAGS_H_
