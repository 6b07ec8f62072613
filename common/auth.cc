#include "common/auth.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace ringside {

absl::StatusOr<std::string> RandomSecret() {
  unsigned char bytes[32];
  if (RAND_bytes(bytes, sizeof(bytes)) != 1) {
    return absl::InternalError("OpenSSL's random generator failed; cannot make a secret");
  }
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(bytes), sizeof(bytes)));
}

std::string Hmac(absl::string_view key, absl::string_view message) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(message.data()), message.size(), digest, &length);
  return absl::BytesToHexString(absl::string_view(reinterpret_cast<const char*>(digest), length));
}

absl::Status ValidateCredential(absl::string_view credential) {
  if (credential.size() < 32 || credential.size() > 128) {
    return absl::InvalidArgumentError(
        absl::StrCat("a member credential has 32 to 128 characters, not ", credential.size()));
  }
  for (char c : credential) {
    if (c <= ' ' || c > '~') {
      return absl::InvalidArgumentError("a member credential is printable ASCII");
    }
  }
  return absl::OkStatus();
}

std::string RingLinkKey(absl::string_view receiver_credential, uint64_t generation,
                        int sender_rank) {
  return Hmac(receiver_credential, absl::StrCat("ring|", generation, "|", sender_rank));
}

std::string ShardStepKey(absl::string_view shard_credential, uint64_t generation, int rank) {
  return Hmac(shard_credential, absl::StrCat("ps|", generation, "|", rank));
}

std::string ShardLoadKey(absl::string_view shard_credential, uint64_t generation) {
  return Hmac(shard_credential, absl::StrCat("load|", generation));
}

bool SecretsEqual(absl::string_view a, absl::string_view b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace ringside
