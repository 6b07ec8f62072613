// A client of the standard gRPC health service (grpc.health.v1.Health/Check), for
// `ringside health --address=HOST:PORT` (docker-compose health checks; Debian has no
// grpc_health_probe) and tests. Debian's libgrpc++-dev ships the health service's server side
// but not its generated client, so the call is made by method name with the request and reply
// encoded by hand (two tiny protobuf messages).
//
// Thread-safe (no shared state). Errors: the RPC's own status (UNAVAILABLE for a refused
// connection, DEADLINE_EXCEEDED, NOT_FOUND for a service the server does not know), or
// UNAVAILABLE naming the reported status when it is not SERVING; INVALID_ARGUMENT for a bad
// address or a reply that does not parse.
#ifndef RINGSIDE_CLI_HEALTH_CHECK_H_
#define RINGSIDE_CLI_HEALTH_CHECK_H_

#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "common/transport_security.h"

namespace ringside::cli {

// OK when the server at `address` reports SERVING for `service` ("" = the server as a whole)
// within `timeout`, asked over `security` (a TLS server answers only a client with a
// certificate from its CA: the health service is no way around it).
absl::Status CheckHealth(const std::string& address, absl::Duration timeout,
                         const TransportSecurity& security, const std::string& service = "");

}  // namespace ringside::cli

#endif  // RINGSIDE_CLI_HEALTH_CHECK_H_
