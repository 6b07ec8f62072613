#include "daemons/controller_daemon.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "common/cluster_files.h"
#include "common/file_util.h"
#include "common/grpc_util.h"
#include "common/net.h"
#include "common/status_macros.h"
#include "control/controller_service.h"
#include "control/job_spec.h"
#include "control/membership.h"
#include "prometheus/registry.h"

namespace ringside::server {
namespace {

void ExportTopology(const Topology& topology, Metrics& metrics) {
  metrics.ExportMembership(static_cast<int>(topology.workers.size()), topology.generation,
                           topology.mode);
}

}  // namespace
absl::Status RunController(const ControllerOptions& options, const TerminationSignals& signals,
                           std::ostream& log) {
  if (options.workers < 1 || options.ps_shards < 0) {
    return absl::InvalidArgumentError("--workers must be >= 1 and --ps_shards >= 0");
  }
  if (options.heartbeat_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--heartbeat_timeout must be positive");
  }
  if (options.checkpoint_every < 0 ||
      (options.checkpoint_every > 0 && options.checkpoint_dir.empty())) {
    return absl::InvalidArgumentError(
        "--checkpoint_every must be >= 0, and > 0 only with a --checkpoint_dir to write to");
  }
  ASSIGN_OR_RETURN(const std::string token, ReadJoinToken(options.join_token_file));
  MembershipConfig config{options.workers, options.ps_shards, token, options.heartbeat_timeout,
                          options.mode};
  Membership membership(config);
  auto registry = std::make_shared<prometheus::Registry>();
  Metrics metrics(registry);
  ASSIGN_OR_RETURN(std::unique_ptr<MetricsServer> metrics_server,
                   MetricsServer::Start(options.metrics_listen, registry));
  ControllerService service(membership, JobSpecOf(options.training), options.heartbeat_timeout,
                            log);
  ASSIGN_OR_RETURN(StartedServer server, StartServer(options.listen, {&service}));
  ExportTopology(membership.topology(), metrics);
  log << "controller: serving on " << ParseHostPort(options.listen)->host << ":" << server.port
      << ", waiting for " << options.workers << " workers and " << options.ps_shards
      << " shards, metrics at " << metrics_server->url() << "\n";
  log.flush();
  if (!options.ready_file.empty()) {
    RETURN_IF_ERROR(WriteFileAtomically(
        options.ready_file, ReadyFileText({server.port, metrics_server->port(), /*address=*/""})));
  }
  uint64_t exported_generation = 0;
  while (!signals.WaitFor(options.heartbeat_timeout / 4)) {
    const std::vector<uint64_t> dropped = membership.Expire(absl::Now());
    for (uint64_t id : dropped) {
      log << "controller: dropped member " << id << " (silent for " << options.heartbeat_timeout
          << ")\n";
    }
    const Topology topology = membership.topology();
    if (!dropped.empty() || topology.generation != exported_generation) {
      exported_generation = topology.generation;
      ExportTopology(topology, metrics);
      service.Notify();
      log << "controller: generation " << topology.generation << ", " << topology.workers.size()
          << " workers, mode " << SyncModeName(topology.mode) << "\n";
      log.flush();
    }
  }
  return absl::OkStatus();
}

}  // namespace ringside::server
