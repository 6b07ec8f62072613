// The checks a shard makes of every push before it keeps anything of it, alike for each
// consistency mode. Thread-safe.
#ifndef RINGSIDE_SERVER_PS_PUSH_CHECK_H_
#define RINGSIDE_SERVER_PS_PUSH_CHECK_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
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

// NaNs and infinities among the `count` elements of `dtype` in `pieces`, decoded a block at a
// time (no copy of the payload).
size_t CountNonFiniteIn(WireDtype dtype, const std::vector<absl::string_view>& pieces,
                        uint64_t count);

}  // namespace ringside::server

#endif  // RINGSIDE_SERVER_PS_PUSH_CHECK_H_
