// The parameter-server protocol's worker side: each step the worker pushes
// every shard its range of the gradient share and gets the step's summed gradient for that range
// back, all shards in parallel, over one bidirectional ParameterShard.Step stream per shard and
// step (proto/ps.proto: a single round trip, and the wait for the slowest worker is the stream's
// own wait under its deadline). Large ranges travel in segments, and the shard answers each part
// of the sum as soon as every worker's share covers it, so the reply streams back while the
// share is still being pushed (both directions of the link at once); a worker's pushes stay
// within a window of the sum it has back, so no worker's pushes crowd out another's. The trainer
// then applies the job's optimiser to the sum (worker/parameter_sync.h), exactly as every shard
// does to its range, so a worker holds the whole job's state and a lost shard loses nothing.
// Threads: none of its own. Each stream is a gRPC callback reactor (ClientBidiReactor) driven by
// gRPC's long-lived callback threads, which write the segments, read and copy the reply; the
// thread calling Sum() only starts the streams and waits for them to end (SumAsReady's also
// starts the write of each part of the share it releases, under a hold on the call).
// Gradients travel as `wire_dtype` (common/wire_dtype.h) both ways: the share is encoded for the
// push, the shard sums the decoded shares in float32 and encodes the sum once for the reply (two
// roundings per value whatever N is). fp16 divides the share by N before encoding and
// multiplies the decoded sum back (WireShareDivisor), as the shard does for its own optimiser.
// Compression (--compression: top-k or sign, after --compression_warmup steps): each shard's
// range is pushed in segments of the codec's encoding, under this worker's error feedback over
// that range (server/ps/compressed_exchange.h), and its reply, segment for segment, is decoded
// into the sum; a share holding a NaN or an infinity is then refused here (INVALID_ARGUMENT)
// before anything is pushed. The residuals live as long as the client: one generation.
// Thread-compatible (Cancel() is thread-safe). Errors: a shard's gRPC status, annotated with the
// shard and step; a reply that does not cover the range exactly, or in another dtype, is
// INTERNAL; with a 16-bit wire dtype a sum holding a NaN or an infinity is INVALID_ARGUMENT
// (never handed to the optimiser).
#ifndef RINGSIDE_SERVER_PS_PS_CLIENT_H_
#define RINGSIDE_SERVER_PS_PS_CLIENT_H_

#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "common/compression.h"
#include "common/metrics.h"
#include "common/ranges.h"
#include "common/transport_security.h"
#include "common/wire_dtype.h"
#include "grpcpp/generic/generic_stub.h"
#include "proto/ps.grpc.pb.h"
#include "server/ps/compressed_exchange.h"

namespace ringside::server {

// The most a worker's pushes to a shard may run ahead of the sum it has back (--ps_window_bytes):
// with segments of a quarter of the window and at least two bytes an element, 1.25 × 1 Mi
// elements pushed and not answered at most, within what a shard holds of each share and of the
// step's sum (kHeldShareElements and kSumBufferElements, server/ps/shard_state.h, checked there).
inline constexpr uint64_t kMaxPsWindowBytes = uint64_t{2} << 20;
inline constexpr uint64_t kDefaultPsWindowBytes = uint64_t{2} << 20;  // see window_bytes
// The window `ringside lab` gives its workers: on links of 100mbit and less, whose shaper queues
// hold 200 ms, four workers' larger windows overflow a shard's ingress queue (the lab's
// benchmark in docs/benchmarks.md measures it).
inline constexpr uint64_t kLabPsWindowBytes = uint64_t{256} << 10;
// INVALID_ARGUMENT naming --ps_window_bytes unless `bytes` is from 16 to kMaxPsWindowBytes.
absl::Status CheckPsWindowBytes(int64_t bytes);

// The workers' --segment_bytes by default: the most a push segment holds.
inline constexpr uint64_t kDefaultPsSegmentBytes = uint64_t{1} << 20;
// The bytes a push segment holds: a quarter of the window (0: kDefaultPsWindowBytes), at most
// `segment_bytes` (the worker's --segment_bytes).
uint64_t PsPushSegmentBytes(uint64_t window_bytes, uint64_t segment_bytes = kDefaultPsSegmentBytes);

struct PsClientOptions {
  uint64_t generation = 1;
  int rank = 0;
  std::vector<std::string> shards;  // ParameterShard address of every shard, in shard order
  // The link key this worker presents to each shard (common/auth.h); empty: none.
  std::vector<std::string> keys;
  uint64_t segment_bytes = kDefaultPsSegmentBytes;
  // How far this worker's pushes to a shard may run ahead of the sum it has received back
  // (--ps_window_bytes). The shard answers a part only once every worker has pushed it, so a
  // worker far ahead only takes the shard's link from the slowest one, whose pushes the replies
  // wait for: held within the window, the workers' pushes share the shard's ingress evenly and
  // its egress carries the sum as fast as the pushes arrive. Pushes travel in segments of a
  // quarter of it (at most segment_bytes). Too small for a link's bandwidth-delay product, it
  // leaves the link idle; too large for a slow link's queues, the N workers' pushes overflow the
  // shard's ingress queue. The default suits loopback and fast links, where larger segments cost
  // less of gRPC's per-message work; a shard holds a window's pushes as they were received, so it
  // costs the shard only the bytes in flight. `ringside lab` gives its shaped links
  // kLabPsWindowBytes.
  uint64_t window_bytes = kDefaultPsWindowBytes;
  WireDtype wire_dtype = WireDtype::kFp32;  // the job's --wire_dtype
  Compression compression;                  // the job's --compression: none, topk or sign
  int64_t compression_warmup = 0;           // and --compression_warmup
  int workers = 1;                          // in the generation: fp16's divisor (WireShareDivisor)
  absl::Duration timeout = absl::Seconds(60);  // per step and shard
  TransportSecurity security;                  // of the channels to the shards
  // The ps_push fault point (worker/fault_injection.h); null: none. When set, the other shards'
  // pushes wait until this worker's share has reached the first shard pushed to (shard 0; in
  // SumAsReady the last shard, once its whole range is final), and this runs in between, on the
  // thread calling Sum(). Returning
  // true means the worker is lost there: the sync cancels itself, pushing no more. An option rather
  // than a test-only seam because ringside-worker itself reaches it under --fault_at (the
  // multi-process tests kill the real binary here).
  std::function<bool(int64_t step)> pushed_to_first_shard;
  // Test observer, null in the daemons: a push to `shard` waits for the window, `written`
  // elements pushed and `received` summed back. Runs on a gRPC callback thread, under a lock.
  std::function<void(int shard, uint64_t written, uint64_t received)> window_full;
};

// The calls of a client's current generation, so that Cancel() ends them all: a call tracked
// while in flight is cancelled by Cancel(); one tracked after Cancel() starts cancelled. Used by
// both PS clients (PsClient, and StalePsClient in push_pull_client.h). Thread-safe.
class CallCancellation final {
 public:
  void Track(grpc::ClientContext& context);
  void Untrack(grpc::ClientContext& context);
  void Cancel();

 private:
  absl::Mutex mu_;
  std::set<grpc::ClientContext*> in_flight_ ABSL_GUARDED_BY(mu_);
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
};

// One shard as a worker's client reaches it: its range (EvenRanges of the parameters), stubs
// on a channel with the options' security, and the link's counters (unset without metrics).
struct PsShardLink {
  int index = 0;
  std::string address;
  ElementRange range;
  std::unique_ptr<proto::ParameterShard::Stub> stub;
  // The same channel's raw calls: Step's messages encoded and decoded by common/payload_codec.h.
  std::unique_ptr<grpc::GenericStub> raw_stub;
  LinkSendMetrics send;
  LinkReceiveMetrics receive;
};

// Every shard of `options.shards`, in shard order; INVALID_ARGUMENT when there is none.
// `metrics` must outlive the links unless null.
absl::StatusOr<std::vector<PsShardLink>> ConnectPsShards(const PsClientOptions& options,
                                                         uint64_t parameters, Metrics* metrics);

class PsClient final {
 public:
  // `metrics` must outlive this object unless null.
  static absl::StatusOr<std::unique_ptr<PsClient>> Create(const PsClientOptions& options,
                                                          uint64_t parameters, Metrics* metrics);
  // Pushes this worker's share of step `step` and leaves the step's sum over all workers in
  // `gradient` (each shard's range as it streams back).
  absl::Status Sum(int64_t step, absl::Span<float> gradient);

  // Blocks until elements [begin, K) of the share are final; returns where the final part begins
  // then (at most `begin`), or nothing when the rest never will be (the step is abandoned).
  using AwaitFinal = std::function<std::optional<uint64_t>(uint64_t begin)>;
  // The same as Sum for a share that becomes final from the end while the step runs (an
  // overlapped step, worker/overlapped_sync.h), its final parts prepared with PrepareShare. Each
  // shard's share goes last part first (PsPush.descending), each part as soon as it is final, so
  // the last layers' gradient is on the wire while the earlier ones are computed, on one shard or
  // many. The sum's bits are Sum's (the shard sums each element in rank order whenever it came),
  // and the bytes too. Abandoned: the streams begun are cancelled, CANCELLED.
  absl::Status SumAsReady(int64_t step, absl::Span<float> gradient, const AwaitFinal& await_final);
  // What Sum does to the share before it is pushed, for a part of it (fp16's division by the
  // worker count, WireShareDivisor; nothing for fp32 and bf16). Returns how many of `part`'s
  // values are NaN or infinite (a 16-bit wire's check names them); 0 for fp32. Thread-safe.
  size_t PrepareShare(absl::Span<float> part) const;

  // Ends the step in flight, and every later one, with CANCELLED (the generation is over).
  // Safe from any thread.
  void Cancel();

 private:
  using ShardLink = PsShardLink;
  class ShardCall;  // one shard's Step stream of one step (ps_step_call.cc)

  explicit PsClient(PsClientOptions options) : options_(std::move(options)) {}
  bool Compresses(int64_t step) const;  // --compression, past its warm-up
  // One step's streams, every shard at once: the share (as the wire carries it) out, the sum in.
  absl::Status Exchange(int64_t step, absl::Span<float> gradient);
  // SumAsReady's streams: each shard's share released to its stream as it becomes final.
  absl::Status ExchangeAsReady(int64_t step, absl::Span<float> gradient,
                               const AwaitFinal& await_final);
  // One call a shard for step `step` (pushing in order, or `descending`), each tracked before
  // any starts, so that a Cancel() meanwhile reaches them all.
  std::vector<std::unique_ptr<ShardCall>> MakeCalls(int64_t step, absl::Span<float> gradient,
                                                    bool descending, bool compressed);
  // Waits for the calls started (after cancelling every call when `abandoned`).
  absl::Status AwaitCalls(int64_t step, std::vector<std::unique_ptr<ShardCall>>& calls,
                          const std::vector<bool>& started, bool abandoned);
  // After Exchange: fp16's sum multiplied back, and a 16-bit sum checked for NaN and infinity.
  absl::Status FinishSum(int64_t step, absl::Span<float> gradient, size_t own_non_finite);

  PsClientOptions options_;
  std::vector<ShardLink> links_;
  CallCancellation calls_;
  // --compression: the codec, and this worker's error feedback per shard (over its range).
  std::unique_ptr<GradientCodec> codec_;
  std::vector<std::unique_ptr<WorkerCompression>> feedback_;
};

}  // namespace ringside::server

#endif  // RINGSIDE_SERVER_PS_PS_CLIENT_H_
