// The one place gRPC channels and servers are created, and the only place that turns a
// TransportSecurity into gRPC credentials, so message limits, keepalive and TLS are a single
// change; and the conversions between absl::Status and grpc::Status (whose codes are equal).
// Thread-safe.
#ifndef RINGSIDE_COMMON_GRPC_UTIL_H_
#define RINGSIDE_COMMON_GRPC_UTIL_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/transport_security.h"
#include "grpcpp/channel.h"
#include "grpcpp/client_context.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "grpcpp/server_context.h"

namespace ringside {

// Largest gRPC message we send or accept. Payloads travel in segments of at most a few MiB, so
// this only has to cover one segment plus framing; it is set explicitly because gRPC's default
// receive limit (4 MiB) would reject a large segment with RESOURCE_EXHAUSTED.
inline constexpr int kMaxMessageBytes = 64 << 20;

// --segment_bytes, wherever a process takes it: at least one float, at most half a message (a
// segment travels with its header in one message). INVALID_ARGUMENT naming the flag otherwise.
absl::Status ValidateSegmentBytes(int64_t segment_bytes);

// What a channel carries. kTraining: steps' tensors, with a deep per-stream window (16 MiB) for
// throughput. kBackgroundRead: a rare read of a whole model (the test evaluator's GetParameters)
// whose reader stores each message as it comes: a 1 MiB window and no window growth, so what
// waits unread in gRPC's buffers stays about a segment, not the range (flow control paces the
// sender instead).
enum class ChannelUse { kTraining, kBackgroundRead };

// A channel to `address` (HOST:PORT) with Ringside's limits and keepalive, tuned for `use`. Each
// call gets a fresh channel (its own TCP connection), so two peers never share one HTTP/2
// connection. Under mutual TLS it presents `security`'s certificate and accepts only a server
// whose certificate chains to its CA and names HOST (a DNS or IP SAN).
std::shared_ptr<grpc::Channel> MakeChannel(const std::string& address,
                                           const TransportSecurity& security,
                                           ChannelUse use = ChannelUse::kTraining);

// Sets a deadline `timeout` from now on `context`.
void SetDeadline(grpc::ClientContext& context, absl::Duration timeout);

// A started server listening on `listen` (HOST:PORT, port 0 = any free port) serving `services`
// and the standard gRPC health service (grpc.health.v1.Health reports SERVING). Under mutual TLS
// every call, health checks included, needs a client certificate that chains to the CA: the
// handshake of a client without one, or with another CA's, fails (the client sees UNAVAILABLE).
// Destroying it shuts the server down, cancelling calls still open after a short grace (gRPC's
// own destructor would wait forever for a peer's long-lived stream to end).
struct StartedServer {
  StartedServer() = default;
  StartedServer(StartedServer&&) = default;
  StartedServer& operator=(StartedServer&& other);
  ~StartedServer();

  // Stops accepting calls; calls still running after `grace` are cancelled. Idempotent.
  void Shutdown(absl::Duration grace = absl::Milliseconds(500));
  // From now on the health service answers NOT_SERVING (a readiness probe fails): a process that
  // starts to leave says so while it still serves the calls in flight. Idempotent.
  void StopReportingReady();

  std::unique_ptr<grpc::Server> server;
  int port = 0;
};
absl::StatusOr<StartedServer> StartServer(const std::string& listen,
                                          const std::vector<grpc::Service*>& services,
                                          const TransportSecurity& security);

// The first value of the call's metadata `key` (common/auth.h names them); empty when absent.
// Values over 256 bytes are cut: no secret of ours is that long, and a peer's junk is bounded.
std::string MetadataValue(const grpc::ServerContextBase& context, const char* key);

// A link key and what it claims (common/auth.h), as a call's metadata carries them.
struct LinkClaim {
  std::string key;  // empty: none presented
  uint64_t generation = 0;
  int rank = -1;  // -1: none (a load key names no rank)
  bool has_generation = false;
};
// Adds `claim`'s key (when not empty), generation and rank (when not -1) to `context`.
void AddLinkClaim(grpc::ClientContext& context, const LinkClaim& claim);
// The call's claim; PERMISSION_DENIED when the generation or the rank is present but not a
// number. Absent fields stay at LinkClaim's defaults.
absl::StatusOr<LinkClaim> ReadLinkClaim(const grpc::ServerContextBase& context);

grpc::Status ToGrpcStatus(const absl::Status& status);
absl::Status FromGrpcStatus(const grpc::Status& status);

}  // namespace ringside

#endif  // RINGSIDE_COMMON_GRPC_UTIL_H_
