// ringside-ps's whole life behind a thin main: one parameter-server shard serving
// ParameterShard (and the gRPC health service) until SIGINT/SIGTERM. The shard owns range
// `shard` of the shard map EvenRanges(parameters, ps_shards) (contiguous, balanced by bytes,
// free to cut across layers).
//   Static (--shard --ps_shards --workers): the shard derives its initial parameters from the
//   job flags (--model, --activation, --seed), exactly as every worker does.
//   Elastic (--controller): the shard registers, learns its index and the job from its
//   assignment, and serves whatever state the workers Load for each ps-mode generation.
// Errors: INVALID_ARGUMENT for options that do not fit together (a join token file that cannot
// be read gives its own error); UNAVAILABLE for a port; an elastic shard's registration status
// (server/controller/controller_client.h: RegisterMember), then, once it runs, why it lost its
// membership (ControllerClient::failure()).
#ifndef RINGSIDE_SERVER_PS_PS_DAEMON_H_
#define RINGSIDE_SERVER_PS_PS_DAEMON_H_

#include <cstdint>
#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "common/termination_signals.h"
#include "common/training_options.h"
#include "common/transport_security.h"
#include "server/controller/job_spec.h"

namespace ringside::server {

struct ShardOptions {
  int shard = 0;
  int ps_shards = 1;
  int workers = 1;
  uint64_t generation = 1;
  std::string listen = "127.0.0.1:0";
  std::string metrics_listen = "127.0.0.1:0";
  int64_t segment_bytes = int64_t{1} << 20;
  TrainingOptions training;    // model, activation, seed and optimiser are used
  int64_t elements = 0;        // > 0: a benchmark shard of that many zero parameters, no model
  std::string ready_file;      // written (JSON: ports) once serving; empty: none
  MemberOptions member;        // elastic when member.controller is set
  TransportSecurity security;  // of the server and of the channel to the controller
  // Test only (--fault_at): end with SIGKILL at a named point of the leave, as kill -9 would
  // there (worker/fault_injection.h says why such points are in the product): `leave_sent`, once
  // the controller took the leave, before the hand-over; `handover`, once the next generation's
  // rank 0 has begun reading the range's state, before any of it is sent. Empty: none.
  std::string fault_at;
};

absl::Status ValidateShardOptions(const ShardOptions& options);
absl::Status RunShard(const ShardOptions& options, const TerminationSignals& signals,
                      std::ostream& log);

}  // namespace ringside::server

#endif  // RINGSIDE_SERVER_PS_PS_DAEMON_H_
