#include "common/transport_security.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#include <vector>

#include "absl/strings/str_cat.h"
#include "common/file_util.h"

namespace ringside {
namespace {

// OpenSSL objects owned by unique_ptrs.
struct BioFree {
  void operator()(BIO* bio) const { BIO_free(bio); }
};
struct X509Free {
  void operator()(X509* cert) const { X509_free(cert); }
};
struct KeyFree {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};
struct StoreFree {
  void operator()(X509_STORE* store) const { X509_STORE_free(store); }
};
struct StoreContextFree {
  void operator()(X509_STORE_CTX* context) const { X509_STORE_CTX_free(context); }
};
using Certificate = std::unique_ptr<X509, X509Free>;

// Every failed parse leaves errors in this thread's OpenSSL queue, where gRPC's own TLS calls
// (SSL_get_error reads the queue) would later mistake them for theirs: clear them on every exit.
struct ClearOpenSslErrors {
  ~ClearOpenSslErrors() { ERR_clear_error(); }
};

absl::Status FileError(absl::string_view flag, const std::string& path, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(flag, ": ", path, " ", what));
}

absl::StatusOr<std::string> ReadPem(absl::string_view flag, const std::string& path) {
  absl::StatusOr<std::string> text = ReadFileToString(path);
  if (!text.ok())
    return absl::InvalidArgumentError(absl::StrCat(flag, ": ", text.status().message()));
  return text;
}

std::unique_ptr<BIO, BioFree> MemoryBio(const std::string& text) {
  return std::unique_ptr<BIO, BioFree>(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
}

// Every certificate in `pem`, in order.
std::vector<Certificate> Certificates(const std::string& pem) {
  std::vector<Certificate> certificates;
  auto bio = MemoryBio(pem);
  while (bio != nullptr) {
    Certificate cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
    if (cert == nullptr) break;
    certificates.push_back(std::move(cert));
  }
  return certificates;
}

// No password prompt: an encrypted key fails instead of blocking a daemon on its terminal.
int NoPassword(char*, int, int, void*) { return 0; }

// The checks that turn a misconfiguration into a one-line error at start rather than a failed
// handshake later, on every link: each file holds what its flag says, the key is the
// certificate's, and the certificate chains to the CA and is valid now.
absl::Status CheckPem(const TlsFiles& files, const std::string& ca, const std::string& cert,
                      const std::string& key) {
  ClearOpenSslErrors clear;
  std::vector<Certificate> authorities = Certificates(ca);
  if (authorities.empty()) return FileError("--tls_ca", files.ca, "holds no PEM certificate");
  std::vector<Certificate> chain = Certificates(cert);
  if (chain.empty()) return FileError("--tls_cert", files.cert, "holds no PEM certificate");
  auto key_bio = MemoryBio(key);
  std::unique_ptr<EVP_PKEY, KeyFree> private_key(
      PEM_read_bio_PrivateKey(key_bio.get(), nullptr, &NoPassword, nullptr));
  if (private_key == nullptr) {
    return FileError("--tls_key", files.key, "holds no unencrypted PEM private key");
  }
  if (X509_check_private_key(chain[0].get(), private_key.get()) != 1) {
    return FileError(
        "--tls_key", files.key,
        absl::StrCat("is not the key of the certificate in --tls_cert (", files.cert, ")"));
  }
  std::unique_ptr<X509_STORE, StoreFree> store(X509_STORE_new());
  for (const Certificate& authority : authorities)
    X509_STORE_add_cert(store.get(), authority.get());
  STACK_OF(X509)* intermediates = sk_X509_new_null();
  for (size_t i = 1; i < chain.size(); ++i) sk_X509_push(intermediates, chain[i].get());
  std::unique_ptr<X509_STORE_CTX, StoreContextFree> context(X509_STORE_CTX_new());
  const bool verified =
      X509_STORE_CTX_init(context.get(), store.get(), chain[0].get(), intermediates) == 1 &&
      X509_verify_cert(context.get()) == 1;
  const int error = X509_STORE_CTX_get_error(context.get());
  sk_X509_free(intermediates);  // the certificates themselves belong to `chain`
  if (!verified) {
    return FileError("--tls_cert", files.cert,
                     absl::StrCat("does not verify against --tls_ca (", files.ca,
                                  "): ", X509_verify_cert_error_string(error)));
  }
  return absl::OkStatus();
}

const std::string& Empty() {
  static const std::string* const empty = new std::string();
  return *empty;
}

}  // namespace

absl::StatusOr<TransportSecurity> TransportSecurity::LoadMutualTls(const TlsFiles& files) {
  auto pem = std::make_shared<Pem>();
  absl::StatusOr<std::string> ca = ReadPem("--tls_ca", files.ca);
  if (!ca.ok()) return ca.status();
  absl::StatusOr<std::string> cert = ReadPem("--tls_cert", files.cert);
  if (!cert.ok()) return cert.status();
  absl::StatusOr<std::string> key = ReadPem("--tls_key", files.key);
  if (!key.ok()) return key.status();
  if (absl::Status status = CheckPem(files, *ca, *cert, *key); !status.ok()) return status;
  pem->ca = *std::move(ca);
  pem->cert = *std::move(cert);
  pem->key = *std::move(key);
  pem->ca_path = files.ca;
  return TransportSecurity(std::move(pem));
}

const std::string& TransportSecurity::ca_pem() const { return pem_ ? pem_->ca : Empty(); }
const std::string& TransportSecurity::cert_pem() const { return pem_ ? pem_->cert : Empty(); }
const std::string& TransportSecurity::key_pem() const { return pem_ ? pem_->key : Empty(); }

std::string TransportSecurity::Describe() const {
  return pem_ ? absl::StrCat("mutual TLS (CA ", pem_->ca_path, ")") : "plaintext";
}

}  // namespace ringside
