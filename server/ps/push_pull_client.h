// The worker's side of the parameter server under bounded staleness or async
// (server/ps/push_pull_shard.h is the shard's): one shard as a worker sees it. A step pushes the
// worker's gradient share of the shard's range and then pulls the parameters it computes its
// next step on, which the shard hands out once the staleness rule lets it start that step. The
// two halves are separate so a worker pushes to every shard before it waits on any.
//
// Implementations: StalePsClient's links below (ParameterShard.PushPull over gRPC), and an
// in-process one over a PushPullShard for tests (tests/support/stale_links.h).
#ifndef RINGSIDE_SERVER_PS_PUSH_PULL_CLIENT_H_
#define RINGSIDE_SERVER_PS_PUSH_PULL_CLIENT_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/metrics.h"
#include "common/ranges.h"
#include "server/ps/ps_client.h"

namespace ringside::server {

// Thread-compatible: one worker's trainer thread drives it, Start then Finish, step by step.
class StaleShardLink {
 public:
  virtual ~StaleShardLink() = default;
  // Sends this worker's gradient share of `step` for the shard's range, computed on the
  // parameters of `read_version`; does not wait for the shard to apply it.
  virtual absl::Status Start(uint64_t step, uint64_t read_version,
                             absl::Span<const float> gradient) = 0;
  // Waits (within the link's deadline) until the worker may start step `step + 1`; then fills
  // `params` (the shard's range) with the parameters to compute it on and returns their version.
  virtual absl::StatusOr<uint64_t> Finish(absl::Span<float> params) = 0;
};

// A worker's links to every shard over gRPC (one PushPull stream per shard and step, with the
// options' deadline, link key and security, as PsClient's Step streams). Owns the stubs and the
// cancellation; the links it hands out use them, so it must outlive them. Thread-safe.
class StalePsClient final {
 public:
  // `metrics` must outlive this object unless null.
  static absl::StatusOr<std::unique_ptr<StalePsClient>> Create(const PsClientOptions& options,
                                                               uint64_t parameters,
                                                               Metrics* metrics);
  ~StalePsClient();
  // One link per shard, in shard order, over ranges() (EvenRanges of the parameters).
  std::vector<std::unique_ptr<StaleShardLink>> Links();
  const std::vector<ElementRange>& ranges() const { return ranges_; }
  // Ends every call in flight, and every later one, with CANCELLED (the generation is over).
  void Cancel();

  // The links' side (push_pull_client.cc).
  using Shard = PsShardLink;
  CallCancellation& calls() { return calls_; }
  const PsClientOptions& options() const { return options_; }

 private:
  explicit StalePsClient(PsClientOptions options) : options_(std::move(options)) {}

  PsClientOptions options_;
  std::vector<ElementRange> ranges_;
  std::vector<Shard> shards_;
  CallCancellation calls_;
};

}  // namespace ringside::server

#endif  // RINGSIDE_SERVER_PS_PUSH_PULL_CLIENT_H_
