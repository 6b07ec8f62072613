// The checks a shard makes of every push before it keeps anything of it, alike for each
// consistency mode (the synchronous Step stream and the push-pull PushPull stream): the push is of
// the generation served, from one of its workers, for a range of the shard's length, and carries
// no NaN or infinity (counted and logged: NonFiniteReport). What a mode checks beyond that (the
// step, the order of segments, the dtype a step's pushes agree on) is its own. A plain value over
// no transport, so tests build one in memory.
// Thread-safe: immutable once built (NonFiniteReport's `log` must be thread-safe).
// Errors: FAILED_PRECONDITION for another generation; INVALID_ARGUMENT for anything else. A refused
// push is kept nowhere.
#ifndef RINGSIDE_SERVER_PS_PUSH_CHECK_H_
#define RINGSIDE_SERVER_PS_PUSH_CHECK_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "common/wire_dtype.h"
#include "prometheus/counter.h"

namespace ringside::server {

// What a shard does besides refusing (INVALID_ARGUMENT) a push that carries a NaN or an
// infinity, which is never kept nor applied: counts it and logs one line naming the worker
// (its rank), the step and the generation. Null members: nothing. `log` is called on the
// pushing thread (gRPC's), so it must be thread-safe.
struct NonFiniteReport {
  prometheus::Counter* refused = nullptr;  // ringside_nonfinite_refused_total{what="push"}
  std::function<void(const std::string& line)> log;

  // The refusal: counted, logged and returned.
  absl::Status Refuse(int shard, uint64_t generation, int worker, uint64_t step, size_t non_finite,
                      size_t elements) const;
};

// Who a shard serves in one generation: what a push is checked against.
struct ShardIdentity {
  uint64_t generation = 1;
  int workers = 1;
  int shard = 0;
  uint64_t range_elements = 0;  // of the flat parameter vector, the shard's range
};

class PushCheck {
 public:
  explicit PushCheck(ShardIdentity identity, NonFiniteReport nonfinite = {})
      : identity_(identity), nonfinite_(std::move(nonfinite)) {}

  const ShardIdentity& identity() const { return identity_; }

  // The push's header: Generation, Worker and Range, in that order.
  absl::Status Header(uint64_t generation, int worker, uint64_t range_elements) const;
  absl::Status Generation(uint64_t generation) const;
  // A rank of the generation's workers.
  absl::Status Worker(int worker) const;
  // A share of the shard's whole range.
  absl::Status Range(int worker, uint64_t range_elements) const;
  // No NaN or infinity among `values` (a whole share, say), or among the `count` elements of
  // `dtype` in `pieces` (a segment as received, decoded a block at a time, never copied); else
  // the refusal, counted and logged.
  absl::Status Finite(int worker, uint64_t step, absl::Span<const float> values) const;
  absl::Status Finite(int worker, uint64_t step, WireDtype dtype,
                      const std::vector<absl::string_view>& pieces, uint64_t count) const;

 private:
  const ShardIdentity identity_;
  const NonFiniteReport nonfinite_;
};

}  // namespace ringside::server

#endif  // RINGSIDE_SERVER_PS_PUSH_CHECK_H_
