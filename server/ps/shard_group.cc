#include "server/ps/shard_group.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace ringside::server {
namespace {

// A push-pull link that keeps its generation's client (which its calls use) alive, and asks the
// ps_push fault point once its push is on its way (the first shard's link only).
class GenerationLink final : public StaleShardLink {
 public:
  GenerationLink(std::shared_ptr<StalePsClient> client, std::unique_ptr<StaleShardLink> link,
                 std::function<bool()> lost_after_push)
      : client_(std::move(client)),
        link_(std::move(link)),
        lost_after_push_(std::move(lost_after_push)) {}
  absl::Status Start(uint64_t step, uint64_t read_version,
                     absl::Span<const float> gradient) override {
    RETURN_IF_ERROR(link_->Start(step, read_version, gradient));
    if (lost_after_push_ && lost_after_push_()) {
      return absl::AbortedError("lost after the push to the first shard");
    }
    return absl::OkStatus();
  }
  absl::StatusOr<uint64_t> Finish(absl::Span<float> params) override {
    return link_->Finish(params);
  }

 private:
  std::shared_ptr<StalePsClient> client_;
  std::unique_ptr<StaleShardLink> link_;
  std::function<bool()> lost_after_push_;
};

absl::Status NotConfigured(absl::string_view what) {
  return absl::FailedPreconditionError(
      absl::StrCat("no parameter-server generation to ", what, " with"));
}

}  // namespace

ShardGroup::ShardGroup(ShardGroupOptions options, Metrics* metrics)
    : options_(std::move(options)), metrics_(metrics) {}

void ShardGroup::Reconfigure(const ShardGroupTopology& topology) {
  auto generation = std::make_shared<Generation>();
  generation->topology = topology;
  absl::MutexLock lock(&mu_);
  current_ = std::move(generation);  // a step in flight holds its own reference to the last
}

absl::Status ShardGroup::Connect() {
  const std::shared_ptr<const Generation> configured = current();
  if (configured == nullptr) return NotConfigured("connect");
  const ShardGroupTopology& topology = configured->topology;
  PsClientOptions ps;
  ps.generation = topology.generation;
  ps.rank = topology.rank;
  ps.workers = topology.workers;
  ps.wire_dtype = topology.wire_dtype;
  ps.compression = topology.compression;
  ps.compression_warmup = topology.compression_warmup;
  ps.shards = topology.shards;
  ps.keys = topology.keys;
  ps.segment_bytes = options_.segment_bytes;
  ps.window_bytes = options_.window_bytes;
  ps.timeout = options_.timeout;
  ps.security = options_.security;
  auto generation = std::make_shared<Generation>();
  generation->topology = topology;
  if (topology.shards_hold_state) {
    ASSIGN_OR_RETURN(generation->push_pull,
                     StalePsClient::Create(ps, topology.parameters, metrics_));
  } else {
    if (options_.lost_after_first_push) {
      ps.pushed_to_first_shard = [lost = options_.lost_after_first_push](int64_t) {
        return lost();
      };
    }
    ASSIGN_OR_RETURN(generation->sync, PsClient::Create(ps, topology.parameters, metrics_));
  }
  absl::MutexLock lock(&mu_);
  if (superseded_by_ > topology.generation) {
    if (generation->sync != nullptr) generation->sync->Cancel();
    if (generation->push_pull != nullptr) generation->push_pull->Cancel();
  }
  current_ = std::move(generation);
  return absl::OkStatus();
}

std::shared_ptr<const ShardGroup::Generation> ShardGroup::current() const {
  absl::MutexLock lock(&mu_);
  return current_;
}

bool ShardGroup::SupersededAfter(uint64_t generation) const {
  absl::MutexLock lock(&mu_);
  return superseded_by_ > generation;
}

absl::Status ShardGroup::Sum(int64_t step, absl::Span<float> gradient) {
  const std::shared_ptr<const Generation> generation = current();
  if (generation == nullptr || generation->sync == nullptr) return NotConfigured("sum");
  return generation->sync->Sum(step, gradient);
}

absl::Status ShardGroup::SumAsReady(int64_t step, absl::Span<float> gradient,
                                    const PsClient::AwaitFinal& await_final) {
  const std::shared_ptr<const Generation> generation = current();
  if (generation == nullptr || generation->sync == nullptr) return NotConfigured("sum");
  return generation->sync->SumAsReady(step, gradient, await_final);
}

size_t ShardGroup::PrepareShare(absl::Span<float> part) const {
  const std::shared_ptr<const Generation> generation = current();
  if (generation == nullptr || generation->sync == nullptr) return 0;
  return generation->sync->PrepareShare(part);
}

absl::StatusOr<std::vector<std::unique_ptr<StaleShardLink>>> ShardGroup::PushPullLinks() {
  const std::shared_ptr<const Generation> generation = current();
  if (generation == nullptr || generation->push_pull == nullptr) {
    return NotConfigured("push and pull");
  }
  std::vector<std::unique_ptr<StaleShardLink>> links = generation->push_pull->Links();
  for (size_t s = 0; s < links.size(); ++s) {
    links[s] = std::make_unique<GenerationLink>(
        generation->push_pull, std::move(links[s]),
        s == 0 ? options_.lost_after_first_push : std::function<bool()>());
  }
  return links;
}

std::vector<ElementRange> ShardGroup::ranges() const {
  const std::shared_ptr<const Generation> generation = current();
  if (generation == nullptr || generation->topology.shards.empty()) return {};
  return EvenRanges(generation->topology.parameters,
                    static_cast<int>(generation->topology.shards.size()));
}

ShardTransferOptions ShardGroup::transfer() const {
  const std::shared_ptr<const Generation> generation = current();
  ShardTransferOptions transfer;
  transfer.segment_bytes = options_.segment_bytes;
  transfer.timeout = options_.timeout;
  transfer.security = options_.security;
  if (generation != nullptr) {
    transfer.shards = generation->topology.shards;
    transfer.keys = generation->topology.load_keys;
    transfer.generation = generation->topology.generation;
    transfer.departed = generation->topology.departed;
    transfer.departed_keys = generation->topology.departed_keys;
  }
  return transfer;
}

absl::Status ShardGroup::Load(const JobStateView& state) {
  return LoadUntilTaken(
      "load", [&](const ShardTransferOptions& shards, const ShardGroupTopology& topology) {
        return LoadShards(shards, topology.generation, topology.workers, state);
      });
}

absl::StatusOr<uint64_t> ShardGroup::KeepServedStates(OptimizerKind optimizer) {
  uint64_t step = 0;
  RETURN_IF_ERROR(LoadUntilTaken("keep the state", [&](const ShardTransferOptions& shards,
                                                       const ShardGroupTopology& topology) {
    absl::StatusOr<uint64_t> kept = KeepShardStates(shards, topology.generation, topology.workers,
                                                    topology.parameters, optimizer);
    if (kept.ok()) step = *kept;
    return kept.status();
  }));
  return step;
}

absl::Status ShardGroup::LoadUntilTaken(
    absl::string_view what,
    const std::function<absl::Status(const ShardTransferOptions&, const ShardGroupTopology&)>&
        load) {
  const std::shared_ptr<const Generation> generation = current();
  if (generation == nullptr) return NotConfigured(what);
  const ShardGroupTopology& topology = generation->topology;
  const ShardTransferOptions shards = transfer();
  const absl::Time deadline = absl::Now() + options_.timeout / 2;
  constexpr absl::Duration kFirstPause = absl::Milliseconds(5);
  absl::Duration pause = kFirstPause;
  while (true) {
    const absl::Status status = load(shards, topology);
    // No job yet (FAILED_PRECONDITION), the previous generation's range (INVALID_ARGUMENT), or
    // restarting (UNAVAILABLE). Loading again is harmless: the same state for the same
    // generation, and nobody pushes before the barrier that follows the load.
    const bool lagging = status.code() == absl::StatusCode::kFailedPrecondition ||
                         status.code() == absl::StatusCode::kInvalidArgument ||
                         status.code() == absl::StatusCode::kUnavailable;
    if (status.ok() || !lagging || absl::Now() + pause > deadline ||
        SupersededAfter(topology.generation)) {
      return status;
    }
    if (pause == kFirstPause && options_.log != nullptr) {
      *options_.log << WorkerName(topology.rank) << ": " << status.message()
                    << "; loading the shards again until they take generation "
                    << topology.generation << "\n";
      options_.log->flush();
    }
    absl::SleepFor(pause);
    pause = std::min(2 * pause, absl::Milliseconds(200));
  }
}

absl::StatusOr<JobState> ShardGroup::ReadState(const OptimizerConfig& optimizer) const {
  const std::shared_ptr<const Generation> generation = current();
  if (generation == nullptr) return NotConfigured("read the state");
  return ReadShardStates(transfer(), generation->topology.generation,
                         generation->topology.parameters, optimizer);
}

void ShardGroup::Supersede(uint64_t generation) {
  absl::MutexLock lock(&mu_);
  superseded_by_ = std::max(superseded_by_, generation);
  if (current_ == nullptr || current_->topology.generation >= generation) return;
  if (current_->sync != nullptr) current_->sync->Cancel();
  if (current_->push_pull != nullptr) current_->push_pull->Cancel();
}

}  // namespace ringside::server
