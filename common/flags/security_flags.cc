#include "common/flags/security_flags.h"

#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

ABSL_FLAG(std::string, tls_ca, "",
          "mutual TLS: PEM file of the CA that signs every member's certificate (with --tls_cert "
          "and --tls_key)");
ABSL_FLAG(std::string, tls_cert, "",
          "mutual TLS: PEM file of this process's certificate, signed by --tls_ca, with SANs for "
          "the names it is dialled by");
ABSL_FLAG(std::string, tls_key, "", "mutual TLS: PEM file of the private key of --tls_cert");
ABSL_FLAG(bool, insecure, false,
          "plaintext gRPC, no TLS: the explicit opt-out from --tls_ca/--tls_cert/--tls_key");

namespace ringside {

SecurityFlags SecurityFlagsFromCommandLine() {
  SecurityFlags flags;
  flags.tls.ca = absl::GetFlag(FLAGS_tls_ca);
  flags.tls.cert = absl::GetFlag(FLAGS_tls_cert);
  flags.tls.key = absl::GetFlag(FLAGS_tls_key);
  flags.insecure = absl::GetFlag(FLAGS_insecure);
  return flags;
}

absl::StatusOr<TransportSecurity> ResolveSecurityFlags(const SecurityFlags& flags) {
  std::vector<std::string> given, missing;
  for (const auto& [name, value] :
       {std::pair<const char*, const std::string&>{"--tls_ca", flags.tls.ca},
        {"--tls_cert", flags.tls.cert},
        {"--tls_key", flags.tls.key}}) {
    (value.empty() ? missing : given).push_back(name);
  }
  if (flags.insecure && !given.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--insecure contradicts ", absl::StrJoin(given, ", "),
                     ": pass either the three TLS files or --insecure, not both"));
  }
  if (flags.insecure) return TransportSecurity::Plaintext();
  if (given.empty()) {
    return absl::InvalidArgumentError(
        "no transport security given: pass --tls_ca=PEM --tls_cert=PEM --tls_key=PEM for mutual "
        "TLS, or --insecure to run plaintext (an explicit opt-out)");
  }
  if (!missing.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("mutual TLS needs --tls_ca, --tls_cert and --tls_key; missing ",
                     absl::StrJoin(missing, ", "), " (or pass --insecure alone for plaintext)"));
  }
  return TransportSecurity::LoadMutualTls(flags.tls);
}

absl::StatusOr<TransportSecurity> TransportSecurityFromFlags() {
  return ResolveSecurityFlags(SecurityFlagsFromCommandLine());
}

}  // namespace ringside
