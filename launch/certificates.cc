#include "launch/certificates.h"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/file_util.h"
#include "common/status_macros.h"

namespace ringside::launch {
namespace {

struct Free {
  void operator()(BIO* p) const { BIO_free(p); }
  void operator()(BIGNUM* p) const { BN_free(p); }
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
  void operator()(X509* p) const { X509_free(p); }
  void operator()(X509_EXTENSION* p) const { X509_EXTENSION_free(p); }
};
template <typename T>
using Owned = std::unique_ptr<T, Free>;

// A failure leaves OpenSSL's error queue of this thread clean for gRPC (see transport_security.cc).
absl::Status OpenSslError(absl::string_view what) {
  const unsigned long code = ERR_get_error();
  char text[256] = "unknown error";
  if (code != 0) ERR_error_string_n(code, text, sizeof(text));
  ERR_clear_error();
  return absl::InternalError(absl::StrCat("making certificates: ", what, ": ", text));
}

std::string ToPem(BIO* bio) {
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio, &data);
  return std::string(data, static_cast<size_t>(size));
}

absl::StatusOr<std::string> KeyPem(EVP_PKEY* key) {
  Owned<BIO> bio(BIO_new(BIO_s_mem()));
  if (PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    return OpenSslError("writing a key");
  }
  return ToPem(bio.get());
}

absl::StatusOr<std::string> CertificatePem(X509* cert) {
  Owned<BIO> bio(BIO_new(BIO_s_mem()));
  if (PEM_write_bio_X509(bio.get(), cert) != 1) return OpenSslError("writing a certificate");
  return ToPem(bio.get());
}

// X509v3 extensions in openssl.cnf's syntax, e.g. {NID_key_usage, "critical,keyCertSign"}.
struct Extension {
  int nid;
  std::string value;
};

// A certificate for `key` named `common_name`, issued by `issuer` (null: itself) and signed with
// `issuer_key`.
absl::StatusOr<Owned<X509>> MakeCertificate(EVP_PKEY* key, const std::string& common_name,
                                            X509* issuer, EVP_PKEY* issuer_key,
                                            absl::Duration validity,
                                            const std::vector<Extension>& extensions) {
  Owned<X509> cert(X509_new());
  Owned<BIGNUM> serial(BN_new());
  // Random 63-bit serials: certificates of one CA must not share one.
  if (cert == nullptr || serial == nullptr || X509_set_version(cert.get(), 2) != 1 ||
      BN_rand(serial.get(), 63, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) != 1 ||
      BN_to_ASN1_INTEGER(serial.get(), X509_get_serialNumber(cert.get())) == nullptr) {
    return OpenSslError("a new certificate");
  }
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), absl::ToInt64Seconds(validity));
  X509_NAME* subject = X509_get_subject_name(cert.get());
  if (X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_UTF8,
                                 reinterpret_cast<const unsigned char*>(common_name.c_str()), -1,
                                 -1, 0) != 1 ||
      X509_set_issuer_name(cert.get(),
                           issuer != nullptr ? X509_get_subject_name(issuer) : subject) != 1 ||
      X509_set_pubkey(cert.get(), key) != 1) {
    return OpenSslError("naming a certificate");
  }
  X509V3_CTX context;
  X509V3_set_ctx(&context, issuer != nullptr ? issuer : cert.get(), cert.get(), nullptr, nullptr,
                 0);
  for (const Extension& extension : extensions) {
    Owned<X509_EXTENSION> made(
        X509V3_EXT_conf_nid(nullptr, &context, extension.nid, extension.value.c_str()));
    if (made == nullptr || X509_add_ext(cert.get(), made.get(), -1) != 1) {
      return OpenSslError(absl::StrCat("extension ", extension.value));
    }
  }
  if (X509_sign(cert.get(), issuer_key, EVP_sha256()) == 0) {
    return OpenSslError("signing a certificate");
  }
  return cert;
}

absl::StatusOr<Owned<EVP_PKEY>> NewKey() {
  Owned<EVP_PKEY> key(EVP_EC_gen("P-256"));
  if (key == nullptr) return OpenSslError("a P-256 key");
  return key;
}

}  // namespace

absl::StatusOr<CertificateAuthority> CertificateAuthority::Create(const std::string& dir,
                                                                  const std::string& name,
                                                                  absl::Duration validity) {
  ASSIGN_OR_RETURN(Owned<EVP_PKEY> key, NewKey());
  ASSIGN_OR_RETURN(Owned<X509> cert,
                   MakeCertificate(key.get(), name, nullptr, key.get(), validity,
                                   {{NID_basic_constraints, "critical,CA:TRUE,pathlen:0"},
                                    {NID_key_usage, "critical,keyCertSign,cRLSign"},
                                    {NID_subject_key_identifier, "hash"}}));
  ASSIGN_OR_RETURN(std::string cert_pem, CertificatePem(cert.get()));
  ASSIGN_OR_RETURN(std::string key_pem, KeyPem(key.get()));
  const std::string ca_file = dir + "/ca.pem";
  RETURN_IF_ERROR(WriteFileAtomically(ca_file, cert_pem));
  return CertificateAuthority(dir, ca_file, std::move(cert_pem), std::move(key_pem), validity);
}

absl::StatusOr<TlsFiles> CertificateAuthority::Issue(
    const std::string& name, const std::vector<std::string>& dns_names,
    const std::vector<std::string>& ip_addresses) const {
  // The CA is kept as PEM (a copyable value); parsing it back is cheap next to a key generation.
  Owned<BIO> cert_bio(BIO_new_mem_buf(cert_pem_.data(), static_cast<int>(cert_pem_.size())));
  Owned<BIO> key_bio(BIO_new_mem_buf(key_pem_.data(), static_cast<int>(key_pem_.size())));
  Owned<X509> ca(PEM_read_bio_X509(cert_bio.get(), nullptr, nullptr, nullptr));
  Owned<EVP_PKEY> ca_key(PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr));
  if (ca == nullptr || ca_key == nullptr) return OpenSslError("reading the CA back");

  std::vector<std::string> names = {"IP:127.0.0.1", "IP:::1", "DNS:localhost"};
  for (const std::string& dns : dns_names) names.push_back("DNS:" + dns);
  for (const std::string& ip : ip_addresses) names.push_back("IP:" + ip);
  ASSIGN_OR_RETURN(Owned<EVP_PKEY> key, NewKey());
  ASSIGN_OR_RETURN(Owned<X509> cert,
                   MakeCertificate(key.get(), name, ca.get(), ca_key.get(), validity_,
                                   {{NID_basic_constraints, "critical,CA:FALSE"},
                                    {NID_key_usage, "critical,digitalSignature"},
                                    {NID_ext_key_usage, "serverAuth,clientAuth"},
                                    {NID_subject_alt_name, absl::StrJoin(names, ",")},
                                    {NID_subject_key_identifier, "hash"},
                                    {NID_authority_key_identifier, "keyid:always"}}));
  ASSIGN_OR_RETURN(std::string cert_pem, CertificatePem(cert.get()));
  ASSIGN_OR_RETURN(std::string key_pem, KeyPem(key.get()));
  TlsFiles files{ca_file_, absl::StrCat(dir_, "/", name, ".pem"),
                 absl::StrCat(dir_, "/", name, ".key")};
  RETURN_IF_ERROR(WriteFileAtomically(files.key, key_pem, 0600));
  RETURN_IF_ERROR(WriteFileAtomically(files.cert, cert_pem));
  return files;
}

std::vector<std::string> CertificateAuthority::Flags(const TlsFiles& files) {
  return {"--tls_ca=" + files.ca, "--tls_cert=" + files.cert, "--tls_key=" + files.key};
}

}  // namespace ringside::launch
