// Ringside's benchmark rank processes, started by `ringside-bench ring` and `ringside-bench ps`
// (one process per rank, as Gloo's ranks are):
//   ring-rank  times `iters` sum-allreduces of `elements` floats filled with the benchmark
//              pattern (common/rank_result.h) over a static gRPC ring (--peers), and checks
//              every value;
//   ps-rank    times `iters` push-pull steps of `elements` floats against benchmark shards
//              (ringside-ps --elements=K --optimizer=sgd --lr=1), every returned value checked.
// Each serves /metrics (the per-link counters) and writes its RankResult JSON, plus
// "metrics_port" and "checksum" (ChecksumHex of its final buffer), to `result_file` atomically.
// Errors: INVALID_ARGUMENT for options that do not fit; the ring's or the shards' errors; a
// failed value check is INTERNAL.
#ifndef RINGSIDE_BENCH_RANK_JOBS_H_
#define RINGSIDE_BENCH_RANK_JOBS_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "common/transport_security.h"

namespace ringside::bench {

struct RankJobOptions {
  int rank = 0;
  std::vector<std::string> peers;   // ring-rank: every rank's RingPeer address, in rank order
  std::vector<std::string> shards;  // ps-rank: every shard's address, in shard order
  int workers = 0;                  // ps-rank: ranks in the job
  int64_t elements = 0;
  int iters = 1;
  int warmup = 0;
  int64_t segment_bytes = int64_t{1} << 20;
  absl::Duration timeout = absl::Seconds(60);  // per allreduce or push-pull step
  std::string metrics_listen = "127.0.0.1:0";
  std::string result_file;
  // Non-null: after the result file, keep serving /metrics until it is notified (--linger).
  const absl::Notification* linger_until = nullptr;
  TransportSecurity security;  // of the RingPeer server and every channel
};

absl::Status RunRingRank(const RankJobOptions& options, std::ostream& log);
absl::Status RunPsRank(const RankJobOptions& options, std::ostream& log);

}  // namespace ringside::bench

#endif  // RINGSIDE_BENCH_RANK_JOBS_H_
