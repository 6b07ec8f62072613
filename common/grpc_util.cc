#include "common/grpc_util.h"

#include <algorithm>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/auth.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/security/server_credentials.h"

namespace ringside {

namespace {

struct IntArgument {
  const char* name;
  int value;
};
// Bulk-transfer tuning shared by both ends of every connection: tensors move in MiB-sized
// messages, so large HTTP/2 frames, a deep per-stream window and large socket reads cut the
// per-byte CPU cost (framing, window updates, syscalls) that bounds loopback throughput.
constexpr IntArgument kThroughputArguments[] = {
    {GRPC_ARG_HTTP2_MAX_FRAME_SIZE, 4 << 20},    {GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, 16 << 20},
    {GRPC_ARG_TCP_READ_CHUNK_SIZE, 1 << 20},     {GRPC_ARG_TCP_MIN_READ_CHUNK_SIZE, 256 << 10},
    {GRPC_ARG_TCP_MAX_READ_CHUNK_SIZE, 4 << 20},
};

std::shared_ptr<grpc::ChannelCredentials> ChannelCredentials(const TransportSecurity& security) {
  if (!security.is_tls()) return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions options;
  options.pem_root_certs = security.ca_pem();
  options.pem_private_key = security.key_pem();
  options.pem_cert_chain = security.cert_pem();
  return grpc::SslCredentials(options);
}

std::shared_ptr<grpc::ServerCredentials> ServerCredentials(const TransportSecurity& security) {
  if (!security.is_tls()) return grpc::InsecureServerCredentials();
  // Mutual: a member is whoever holds a certificate from the job's CA, so a client without one
  // never reaches a service (health included).
  grpc::SslServerCredentialsOptions options(
      GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  options.pem_root_certs = security.ca_pem();
  options.pem_key_cert_pairs.push_back({security.key_pem(), security.cert_pem()});
  return grpc::SslServerCredentials(options);
}

}  // namespace

std::shared_ptr<grpc::Channel> MakeChannel(const std::string& address,
                                           const TransportSecurity& security, ChannelUse use) {
  grpc::ChannelArguments args;
  const bool background = use == ChannelUse::kBackgroundRead;
  for (const IntArgument& argument : kThroughputArguments) {
    const bool window = std::string(argument.name) == GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES;
    args.SetInt(argument.name, window && background ? 1 << 20 : argument.value);
  }
  if (background) args.SetInt(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  args.SetMaxReceiveMessageSize(kMaxMessageBytes);
  args.SetMaxSendMessageSize(kMaxMessageBytes);
  // Detect a dead peer on an idle long-lived stream within seconds, not TCP's minutes. gRPC also
  // sets the keepalive timeout as the socket's TCP_USER_TIMEOUT (gRPC proposal A18): a
  // connection whose sent data stays unacknowledged that long is closed (ETIMEDOUT). A congested
  // link (the lab's six colocated workers and shards at 10 Mbit/s, the shapers' queues dropping)
  // leaves a starved flow's retransmissions unacknowledged for over 5 s, so 5 s killed live
  // links mid-step; 20 s, gRPC's default, does not, and a dead member is still found first by
  // the controller's heartbeat and the collective's deadline.
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 10000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 20000);
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  // Reconnect quickly after a peer restarts (the default backoff grows to two minutes).
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  // The time a connection attempt is given (gRPC names it a backoff; its default is 20 s). An
  // address that no longer answers (a container or pod gone, its packets dropped, no reset sent)
  // is given up after 5 s and the name looked up again, within the controller's 10 s heartbeat
  // timeout and a collective's deadline; a live peer's TCP and TLS handshake takes milliseconds.
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 5000);
  // A peer replaced at a new address under the same name (a container or pod made again) is
  // found at once: the default rate limit lets a failed channel look its name up again only
  // after 30 s, past the heartbeat timeout, so a member would be dropped meanwhile.
  args.SetInt(GRPC_ARG_DNS_MIN_TIME_BETWEEN_RESOLUTIONS_MS, 1000);
  // A private subchannel per channel: each peer link is its own TCP connection.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return grpc::CreateCustomChannel(address, ChannelCredentials(security), args);
}

void SetDeadline(grpc::ClientContext& context, absl::Duration timeout) {
  context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
}

StartedServer& StartedServer::operator=(StartedServer&& other) {
  if (this != &other) {
    Shutdown();
    server = std::move(other.server);
    port = other.port;
  }
  return *this;
}

StartedServer::~StartedServer() { Shutdown(); }

void StartedServer::Shutdown(absl::Duration grace) {
  if (server == nullptr) return;
  server->Shutdown(absl::ToChronoTime(absl::Now() + grace));
  server->Wait();
  server.reset();
}

void StartedServer::StopReportingReady() {
  if (server == nullptr || server->GetHealthCheckService() == nullptr) return;
  server->GetHealthCheckService()->SetServingStatus(false);
}

absl::StatusOr<StartedServer> StartServer(const std::string& listen,
                                          const std::vector<grpc::Service*>& services,
                                          const TransportSecurity& security) {
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(listen, ServerCredentials(security), &port);
  builder.SetMaxReceiveMessageSize(kMaxMessageBytes);
  builder.SetMaxSendMessageSize(kMaxMessageBytes);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  for (const IntArgument& argument : kThroughputArguments) {
    builder.AddChannelArgument(argument.name, argument.value);
  }
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 5000);
  for (grpc::Service* service : services) builder.RegisterService(service);
  StartedServer started;
  started.server = builder.BuildAndStart();
  if (started.server == nullptr || port == 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen for gRPC on ", listen, " (is the port in use?)"));
  }
  started.port = port;
  return started;
}

absl::Status ValidateSegmentBytes(int64_t segment_bytes) {
  if (segment_bytes >= 4 && segment_bytes <= kMaxMessageBytes / 2) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("--segment_bytes=", segment_bytes,
                                                 " must be in [4, ", kMaxMessageBytes / 2, "]"));
}

std::string MetadataValue(const grpc::ServerContextBase& context, const char* key) {
  const auto& metadata = context.client_metadata();
  auto it = metadata.find(key);
  if (it == metadata.end()) return "";
  return std::string(it->second.data(), std::min<size_t>(it->second.size(), 256));
}

void AddLinkClaim(grpc::ClientContext& context, const LinkClaim& claim) {
  if (!claim.key.empty()) context.AddMetadata(kLinkKeyMetadata, claim.key);
  context.AddMetadata(kLinkGenerationMetadata, absl::StrCat(claim.generation));
  if (claim.rank >= 0) context.AddMetadata(kLinkRankMetadata, absl::StrCat(claim.rank));
}

absl::StatusOr<LinkClaim> ReadLinkClaim(const grpc::ServerContextBase& context) {
  LinkClaim claim;
  claim.key = MetadataValue(context, kLinkKeyMetadata);
  const std::string generation = MetadataValue(context, kLinkGenerationMetadata);
  const std::string rank = MetadataValue(context, kLinkRankMetadata);
  if (!generation.empty()) {
    if (!absl::SimpleAtoi(generation, &claim.generation)) {
      return absl::PermissionDeniedError("the call's link generation is not a number; refused");
    }
    claim.has_generation = true;
  }
  if (!rank.empty() && (!absl::SimpleAtoi(rank, &claim.rank) || claim.rank < 0)) {
    return absl::PermissionDeniedError("the call's link rank is not a rank; refused");
  }
  return claim;
}

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

absl::Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

}  // namespace ringside
