#include "server/ps_daemon.h"

#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/file_util.h"
#include "common/grpc_util.h"
#include "common/metrics.h"
#include "common/net.h"
#include "common/ranges.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"
#include "prometheus/registry.h"
#include "server/ps_service.h"
#include "server/shard_state.h"
#include "worker/model_spec.h"

namespace ringside::server {

absl::Status ValidateShardOptions(const ShardOptions& options) {
  if (options.ps_shards < 1) return absl::InvalidArgumentError("--ps_shards must be >= 1");
  if (options.shard < 0 || options.shard >= options.ps_shards) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--shard=", options.shard, " is not in [0, --ps_shards=", options.ps_shards, ")"));
  }
  if (options.workers < 1) return absl::InvalidArgumentError("--workers must be >= 1");
  if (options.segment_bytes < 4 || options.segment_bytes > kMaxMessageBytes / 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("--segment_bytes must be in [4, ", kMaxMessageBytes / 2, "]"));
  }
  if (options.elements < 0) return absl::InvalidArgumentError("--elements must be >= 0");
  if (options.elements > 0) return absl::OkStatus();
  return worker::ModelSpec::Parse(options.training.model, options.training.activation).status();
}

namespace {

// The whole initial parameter vector: the model's, or zeros for a benchmark shard.
absl::StatusOr<std::vector<float>> InitialVector(const ShardOptions& options) {
  if (options.elements > 0) return std::vector<float>(static_cast<size_t>(options.elements), 0.0f);
  ASSIGN_OR_RETURN(const worker::ModelSpec spec,
                   worker::ModelSpec::Parse(options.training.model, options.training.activation));
  return worker::InitialParameters(spec, options.training.seed);
}

}  // namespace

absl::Status RunShard(const ShardOptions& options, const TerminationSignals& signals,
                      std::ostream& log) {
  RETURN_IF_ERROR(ValidateShardOptions(options));
  ASSIGN_OR_RETURN(const std::vector<float> all, InitialVector(options));
  const ElementRange range = EvenRanges(all.size(), options.ps_shards)[options.shard];
  const std::string name = PsShardName(options.shard);

  auto registry = std::make_shared<prometheus::Registry>();
  Metrics metrics(registry);
  ASSIGN_OR_RETURN(std::unique_ptr<MetricsServer> metrics_server,
                   MetricsServer::Start(options.metrics_listen, registry));
  ShardStepMetrics step_metrics;
  step_metrics.wait_seconds = &metrics.PsWaitSeconds();
  step_metrics.update_seconds = &metrics.StepSeconds(SyncMode::kPs, StepPhase::kUpdate);
  step_metrics.steps = &metrics.StepsTotal(SyncMode::kPs);
  ShardConfig config{options.generation, options.workers, options.shard};
  ASSIGN_OR_RETURN(std::unique_ptr<ShardState> state,
                   ShardState::Create(config, {all.begin() + range.begin, all.begin() + range.end},
                                      options.training.optimizer, step_metrics));
  ShardLinkMetrics links;
  for (int w = 0; w < options.workers; ++w) {
    links.from_worker.push_back(metrics.LinkReceive(WorkerName(w), name, SyncMode::kPs));
    links.to_worker.push_back(metrics.LinkSend(name, WorkerName(w), SyncMode::kPs));
  }
  metrics.WorldSize().Set(options.workers);
  metrics.Generation().Set(static_cast<double>(options.generation));
  metrics.ModeInfo(SyncMode::kPs).Set(1);
  metrics.ModeInfo(SyncMode::kRing).Set(0);
  ParameterShardService service(*state, std::move(links),
                                static_cast<uint64_t>(options.segment_bytes));
  ASSIGN_OR_RETURN(StartedServer server, StartServer(options.listen, {&service}));
  const std::string host = ParseHostPort(options.listen)->host;
  log << name << ": ParameterShard on " << host << ":" << server.port << " owns parameters ["
      << range.begin << ", " << range.end << ") of " << all.size() << ", metrics at "
      << metrics_server->url() << "\n";
  log.flush();
  if (!options.ready_file.empty()) {
    const nlohmann::json ready = {{"port", server.port},
                                  {"metrics_port", metrics_server->port()},
                                  {"range_begin", range.begin},
                                  {"range_end", range.end}};
    RETURN_IF_ERROR(WriteFileAtomically(options.ready_file, ready.dump() + "\n"));
  }
  signals.Wait();
  log << name << ": stopping after step " << state->current_step() << "\n";
  return absl::OkStatus();
}

}  // namespace ringside::server
