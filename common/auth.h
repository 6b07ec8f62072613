// Who may call what: the secrets behind Ringside's authorisation, independent of the transport
// (mutual TLS authenticates the processes' certificates; these tokens say which member of which
// generation a caller is). One design, every RPC:
//  - every member makes a random credential before it serves anything and hands it to the
//    controller with its registration (which proves the join token); it presents it with every
//    later controller call, so nobody can watch, heartbeat or checkpoint as another member, and
//    it checks its callers' link keys with it from its very first call on (no window between
//    registering and learning a secret);
//  - a link key says "the controller assigned the caller this role towards this member in this
//    generation": HMAC(the callee's credential, purpose), e.g. "ring|<generation>|<sender rank>".
//    The controller gives it only to the assigned caller (over its authenticated watch), and
//    the callee checks it with its own credential, without needing its own assignment first,
//    so a ring neighbour or a shard's worker proves its place, not a self-declared rank;
//  - an operator token (a file the operator and the controller share) guards SetMode.
// Keys and credentials travel as lowercase hex. Comparisons are constant-time.
#ifndef RINGSIDE_COMMON_AUTH_H_
#define RINGSIDE_COMMON_AUTH_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace ringside {

// gRPC metadata keys (lowercase, as HTTP/2 wants).
inline constexpr char kMemberCredentialMetadata[] = "ringside-member-credential";
// The member id the credential belongs to (decimal), beside it, so that a streaming call
// (PutCheckpoint) is authenticated when it starts, before any of its payload is read.
inline constexpr char kMemberIdMetadata[] = "ringside-member-id";
inline constexpr char kLinkKeyMetadata[] = "ringside-link-key";
inline constexpr char kOperatorTokenMetadata[] = "ringside-operator-token";
// What a link key is checked against, beside it in the same call's metadata (decimal), so a
// callee checks the key when the call starts, before it reads anything: the generation and the
// caller's rank (a ring sender's, a shard's worker's; absent for a load key). Messages keep their
// own fields, which must agree.
inline constexpr char kLinkGenerationMetadata[] = "ringside-link-generation";
inline constexpr char kLinkRankMetadata[] = "ringside-link-rank";

// 32 random bytes from OpenSSL's generator, as hex.
absl::StatusOr<std::string> RandomSecret();

// HMAC-SHA256(key, message) as hex.
std::string Hmac(absl::string_view key, absl::string_view message);

// OK for a credential of 32 to 128 printable characters; INVALID_ARGUMENT otherwise.
absl::Status ValidateCredential(absl::string_view credential);

// Link keys, checked by the callee with its own credential.
std::string RingLinkKey(absl::string_view receiver_credential, uint64_t generation,
                        int sender_rank);
std::string ShardStepKey(absl::string_view shard_credential, uint64_t generation, int rank);
std::string ShardLoadKey(absl::string_view shard_credential, uint64_t generation);

// Constant-time equality of two secrets (false when the lengths differ).
bool SecretsEqual(absl::string_view a, absl::string_view b);

}  // namespace ringside

#endif  // RINGSIDE_COMMON_AUTH_H_
