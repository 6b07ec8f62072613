// The parameter server as a worker's trainer uses it: one long-lived object over every shard of
// the job, reconfigured at each generation, as ring::Collective is for the ring (and Gloo keeps
// one context). It owns the generation's clients (PsClient's Step streams for synchronous
// training; StalePsClient's PushPull streams when the shards hold the state: --staleness, async,
// --backup_workers), the shards' transfer (Load, ReadState, GetParameters) and the sticky
// generation: a generation installed after its successor was announced starts cancelled, as the
// ring's inbox refuses a stale generation.
//
// Threads: Reconfigure, Connect, Load and ReadState on the trainer's thread; Sum, SumAsReady and
// PrepareShare on the thread that syncs a step (the trainer's, or an overlapped step's sync
// thread), never during a Reconfigure; Supersede and transfer() from any thread. Thread-safe in
// that sense: the generation's clients are swapped under a lock and used outside it.
// Errors: FAILED_PRECONDITION when no generation is configured (or its kind of client is not the
// one asked for); CANCELLED once superseded; otherwise the clients' (server/ps/ps_client.h,
// server/ps/push_pull_client.h, server/ps/shard_transfer.h).
#ifndef RINGSIDE_SERVER_PS_SHARD_GROUP_H_
#define RINGSIDE_SERVER_PS_SHARD_GROUP_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "common/compression.h"
#include "common/metrics.h"
#include "common/optimizer.h"
#include "common/ranges.h"
#include "common/transport_security.h"
#include "common/wire_dtype.h"
#include "server/ps/ps_client.h"
#include "server/ps/push_pull_client.h"
#include "server/ps/shard_transfer.h"

namespace ringside::server {

// The worker's, for every generation.
struct ShardGroupOptions {
  uint64_t segment_bytes = uint64_t{1} << 20;
  uint64_t window_bytes = kDefaultPsWindowBytes;  // PsClientOptions::window_bytes
  absl::Duration timeout = absl::Seconds(60);     // per step, shard and transfer
  TransportSecurity security;                     // of the channels to the shards
  // The ps_push fault point (worker/fault_injection.h), asked once this worker's share is on its
  // way to the first shard (PsClientOptions::pushed_to_first_shard); true: the worker is lost
  // there and sends nothing more. Null: none.
  std::function<bool()> lost_after_first_push;
  // Where Load says it is waiting for a shard that has not taken the generation yet; null: not
  // said. Must outlive the group.
  std::ostream* log = nullptr;
};

// One generation's shards, as the controller's assignment gives them, and the job's shape.
struct ShardGroupTopology {
  uint64_t parameters = 0;  // K, the flat parameter vector's length
  WireDtype wire_dtype = WireDtype::kFp32;
  // --staleness=k, async or --backup_workers (common/training_options.h ShardsHoldTheState):
  // steps push gradients and pull parameters (PushPullLinks) instead of summing (Sum).
  bool shards_hold_state = false;
  uint64_t generation = 0;
  int rank = 0;
  int workers = 1;
  std::vector<std::string> shards;     // addresses, in shard order
  std::vector<std::string> keys;       // this worker's link key per shard (common/auth.h)
  std::vector<std::string> load_keys;  // rank 0's load key per shard
  // Rank 0's: shards that left holding their range of the state, and its read key for each
  // (ShardTransferOptions::departed).
  std::vector<std::string> departed;
  std::vector<std::string> departed_keys;
  // The job's --compression and --compression_warmup (PsClientOptions).
  Compression compression = {};
  int64_t compression_warmup = 0;
};

class ShardGroup final {
 public:
  // `metrics` must outlive the group unless null.
  ShardGroup(ShardGroupOptions options, Metrics* metrics);
  ShardGroup(const ShardGroup&) = delete;
  ShardGroup& operator=(const ShardGroup&) = delete;

  // The shards of `topology`'s generation from now on, for transfers (a regroup reads the state
  // from them, whatever the generation's mode); the step clients of the one before are dropped.
  void Reconfigure(const ShardGroupTopology& topology);
  // Opens the generation's step clients (a generation in ps mode): Sum and SumAsReady, or
  // PushPullLinks when the shards hold the state. INVALID_ARGUMENT when there is no shard.
  absl::Status Connect();

  // Synchronous training (PsClient): this worker's share of `step` pushed, the step's sum back.
  absl::Status Sum(int64_t step, absl::Span<float> gradient);
  absl::Status SumAsReady(int64_t step, absl::Span<float> gradient,
                          const PsClient::AwaitFinal& await_final);
  // PsClient::PrepareShare; 0 and nothing done without a synchronous generation.
  size_t PrepareShare(absl::Span<float> part) const;
  // When the shards hold the state: one link per shard for the generation's push-pull steps
  // (worker/push_pull_sync.h), kept valid by the links themselves, with the
  // lost_after_first_push point on the first.
  absl::StatusOr<std::vector<std::unique_ptr<StaleShardLink>>> PushPullLinks();
  // The shard map of the parameters (EvenRanges(K, S)).
  std::vector<ElementRange> ranges() const;

  // Rank 0 hands the shards `state` for the generation. A shard learns the generation on its own
  // watch stream, so a load can reach it first (it has no job yet, still the previous
  // generation's range, or is restarting): the load is made again, with a growing pause, until
  // the shards take it, the generation is superseded, or half the timeout passes (the other
  // members wait for the load behind a barrier within the whole timeout).
  absl::Status Load(const JobStateView& state);
  // Instead, when the shards hold the state and the generation keeps the last one's shard map:
  // every shard keeps the state it serves (KeepShardStates, `optimizer` its layout), made again
  // as Load is; the step they resume at. NOT_FOUND from a shard holding none to keep.
  absl::StatusOr<uint64_t> KeepServedStates(OptimizerKind optimizer);
  // The job's state as the shards hold it (ReadShardStates), `optimizer` its layout.
  absl::StatusOr<JobState> ReadState(const OptimizerConfig& optimizer) const;
  // How the generation's shards are reached for a transfer: a copy, for a reader on another
  // thread (the test evaluator's ReadShardParameters).
  ShardTransferOptions transfer() const;

  // The controller announced `generation`: steps of an older generation in flight end now
  // (CANCELLED), and an older generation configured later starts cancelled.
  void Supersede(uint64_t generation);

 private:
  // One generation's shards, and its step clients once connected; shared with a step in flight.
  struct Generation {
    ShardGroupTopology topology;
    std::shared_ptr<PsClient> sync;
    std::shared_ptr<StalePsClient> push_pull;
  };
  std::shared_ptr<const Generation> current() const;
  // `load` made again, with a growing pause, while a shard lags behind the generation (Load).
  absl::Status LoadUntilTaken(absl::string_view what,
                              const std::function<absl::Status(const ShardTransferOptions&,
                                                               const ShardGroupTopology&)>& load);
  bool SupersededAfter(uint64_t generation) const;

  const ShardGroupOptions options_;
  Metrics* const metrics_;
  mutable absl::Mutex mu_;
  std::shared_ptr<const Generation> current_ ABSL_GUARDED_BY(mu_);
  uint64_t superseded_by_ ABSL_GUARDED_BY(mu_) = 0;  // the newest generation announced
};

}  // namespace ringside::server

#endif  // RINGSIDE_SERVER_PS_SHARD_GROUP_H_
