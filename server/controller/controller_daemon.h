// ringside-controller's life behind a thin main: serve the Controller service (and gRPC
// health) until SIGINT/SIGTERM, expire silent members every quarter of the heartbeat timeout,
// and export ringside_world_size, ringside_generation and ringside_mode_info.
// Membership, topology and live mode changes are pushed to watchers (workers and shards follow
// them); see docs/architecture.md.
// Errors: INVALID_ARGUMENT for bad options (no join token file, or an empty one, among them);
// a token file that cannot be read, its own error naming the flag (NOT_FOUND when missing);
// UNAVAILABLE when a port cannot be bound; with a --checkpoint_dir, the checkpoint keeper's
// errors (server/controller/checkpoint_keeper.h) and a membership record that cannot be read or
// restored (annotated with its path).
#ifndef RINGSIDE_SERVER_CONTROLLER_CONTROLLER_DAEMON_H_
#define RINGSIDE_SERVER_CONTROLLER_CONTROLLER_DAEMON_H_

#include <cstdint>
#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "common/metrics.h"
#include "common/termination_signals.h"
#include "common/training_options.h"
#include "common/transport_security.h"

namespace ringside::server {

struct ControllerOptions {
  int workers = 4;
  int ps_shards = 2;
  SyncMode mode = SyncMode::kRing;
  std::string join_token_file;
  std::string operator_token_file;  // guards SetMode; empty: no mode switches
  absl::Duration heartbeat_timeout = absl::Seconds(10);
  std::string listen = "127.0.0.1:0";
  std::string metrics_listen = "127.0.0.1:0";
  std::string ready_file;  // written (JSON: ports) once serving; empty: none
  TrainingOptions training;
  // The controller's durable directory (empty: none): its membership record, so a restarted
  // controller resumes the job's members and generation numbering, and the job's checkpoints.
  std::string checkpoint_dir;
  int64_t checkpoint_every = 0;  // steps between checkpoints; 0: none (needs checkpoint_dir)
  TransportSecurity security;    // of the Controller server
};

absl::Status RunController(const ControllerOptions& options, const TerminationSignals& signals,
                           std::ostream& log);

}  // namespace ringside::server

#endif  // RINGSIDE_SERVER_CONTROLLER_CONTROLLER_DAEMON_H_
