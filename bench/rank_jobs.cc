#include "bench/rank_jobs.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/checksum.h"
#include "common/file_util.h"
#include "common/grpc_util.h"
#include "common/metrics.h"
#include "common/net.h"
#include "common/optimizer.h"
#include "common/rank_result.h"
#include "common/status_macros.h"
#include "prometheus/registry.h"
#include "ring/ring_member.h"
#include "server/ps/ps_client.h"
#include "worker/parameter_sync.h"

namespace ringside::bench {
namespace {

absl::Status Validate(const RankJobOptions& options, int world, absl::string_view addresses) {
  if (world < 1 || options.rank < 0 || options.rank >= world) {
    return absl::InvalidArgumentError(absl::StrCat("--rank=", options.rank, " is not in [0, ",
                                                   world, "), the ranks ", addresses, " allows"));
  }
  if (options.elements < 0) return absl::InvalidArgumentError("--elements must be >= 0");
  if (options.iters < 1) return absl::InvalidArgumentError("--iters must be >= 1");
  if (options.warmup < 0) return absl::InvalidArgumentError("--warmup must be >= 0");
  RETURN_IF_ERROR(ValidateSegmentBytes(options.segment_bytes));
  if (options.result_file.empty()) return absl::InvalidArgumentError("--result_file is required");
  return absl::OkStatus();
}

// Logs the outcome and writes the result file; a failed value check is an error.
absl::Status Report(const RankJobOptions& options, int metrics_port, const RankResult& result,
                    const std::string& what, absl::Span<const float> final_values,
                    std::ostream& log) {
  log << WorkerName(options.rank) << ": " << options.iters << " " << what << ", "
      << result.seconds_per_op * 1e3 << " ms each (median), "
      << (result.check_ok ? "values checked" : "WRONG VALUES") << "\n";
  nlohmann::json json = RankResultJson(result);
  json["metrics_port"] = metrics_port;
  json["checksum"] = ChecksumHex(final_values);
  RETURN_IF_ERROR(WriteFileAtomically(options.result_file, json.dump() + "\n"));
  if (!result.check_ok) {
    return absl::InternalError(
        absl::StrCat("values differ from the expected by ", result.max_abs_error));
  }
  if (options.linger_until != nullptr) options.linger_until->WaitForNotification();
  return absl::OkStatus();
}

}  // namespace

absl::Status RunRingRank(const RankJobOptions& options, std::ostream& log) {
  const int world = static_cast<int>(options.peers.size());
  RETURN_IF_ERROR(Validate(options, world, "--peers"));
  for (const std::string& peer : options.peers) {
    RETURN_IF_ERROR(Annotate(ParseHostPort(peer).status(), "--peers"));
  }
  auto registry = std::make_shared<prometheus::Registry>();
  Metrics metrics(registry);
  ASSIGN_OR_RETURN(std::unique_ptr<MetricsServer> metrics_server,
                   MetricsServer::Start(options.metrics_listen, registry));
  const ring::RingTopology topology{/*generation=*/1, world, options.rank};
  ring::RingMember member(topology, &metrics, options.security);
  ASSIGN_OR_RETURN(StartedServer server,
                   StartServer(options.peers[options.rank], {member.service()}, options.security));
  metrics.ExportMembership(world, /*generation=*/1, SyncMode::kRing);
  RETURN_IF_ERROR(member.Connect(options.peers));

  ring::AllreduceOptions allreduce;
  allreduce.segment_bytes = static_cast<uint64_t>(options.segment_bytes);
  allreduce.timeout = options.timeout;
  allreduce.op = ring::ReduceOp::kSum;
  std::vector<float> data(static_cast<size_t>(options.elements));
  uint64_t collective = 0;
  absl::Status failure;
  const RankResult result = RunTimedIterations(
      options.rank, world, options.warmup, options.iters, absl::MakeSpan(data),
      [&] { failure = member.Allreduce(++collective, absl::MakeSpan(data), allreduce); },
      [&] { return !failure.ok(); });
  RETURN_IF_ERROR(failure);
  return Report(options, metrics_server->port(), result,
                absl::StrCat("allreduces of ", options.elements, " floats"), data, log);
}

absl::Status RunPsRank(const RankJobOptions& options, std::ostream& log) {
  RETURN_IF_ERROR(Validate(options, options.workers, "--workers"));
  if (options.shards.empty()) {
    return absl::InvalidArgumentError("--ps: give every shard's address, in shard order");
  }
  auto registry = std::make_shared<prometheus::Registry>();
  Metrics metrics(registry);
  ASSIGN_OR_RETURN(std::unique_ptr<MetricsServer> metrics_server,
                   MetricsServer::Start(options.metrics_listen, registry));
  metrics.ExportMembership(options.workers, /*generation=*/1, SyncMode::kPs);
  server::PsClientOptions ps;
  ps.rank = options.rank;
  ps.shards = options.shards;
  ps.segment_bytes = static_cast<uint64_t>(options.segment_bytes);
  ps.timeout = options.timeout;
  ps.security = options.security;
  // The benchmark shards' optimiser (ringside-ps --elements): SGD with learning rate 1.
  ASSIGN_OR_RETURN(Optimizer optimizer,
                   Optimizer::Create(OptimizerConfig{OptimizerKind::kSgd, 1.0f},
                                     static_cast<size_t>(options.elements)));
  ASSIGN_OR_RETURN(std::unique_ptr<server::PsClient> client,
                   server::PsClient::Create(ps, static_cast<uint64_t>(options.elements), &metrics));
  worker::SumThenUpdate sync(
      SyncMode::kPs, [&client](int64_t step, absl::Span<float> g) { return client->Sum(step, g); },
      optimizer);
  std::vector<float> gradient(static_cast<size_t>(options.elements));
  std::vector<float> params(gradient.size());
  absl::Status failure;
  // Each step refills the gradient (the last one left the sum there). Benchmark shards start at
  // zero and apply SGD with lr 1: after step `it` every parameter is exactly -(it + 1) times the
  // sum of the pushed fills (small integers, exact in float32).
  const RankResult result = RunTimedSteps(
      options.rank, options.workers, options.warmup, options.iters, absl::MakeSpan(gradient),
      [&](int it) {
        failure = sync.Step(it, absl::MakeSpan(gradient), absl::MakeSpan(params)).status();
      },
      [&](int it) {
        return MaxAbsErrorOfScaledSum(options.workers, -static_cast<float>(it + 1), params);
      },
      [&] { return !failure.ok(); });
  RETURN_IF_ERROR(failure);
  return Report(options, metrics_server->port(), result,
                absl::StrCat("push-pull steps of ", options.elements, " floats over ",
                             options.shards.size(), " shards"),
                params, log);
}

}  // namespace ringside::bench
