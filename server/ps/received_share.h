// A worker's share of one step as a shard receives it, the intake every consistency mode shares
// (ShardState's synchronous steps, PushPullShard's pushes): the share arrives as segments, in
// order (or, synchronous with buckets, last part first); each is checked to continue the share and
// to hold finite values, then kept as received, in the slices gRPC read it into, until the
// shard's applier decodes it (HeldShareReader). No share is copied on the way in. The checks a
// push's header passes first (generation, worker, range) are PushCheck's (push_check.h); what a
// mode checks beyond these (a step's dtype and order, how far a share may run ahead of its sum) is
// its own.
// Not thread-safe: a shard guards its shares with its own lock. A HeldPayload never changes once
// kept, so the applier reads it without that lock.
// Errors: FAILED_PRECONDITION for a segment outside a push; INVALID_ARGUMENT for a segment that is
// not a whole number of elements, does not continue the share or overruns its range, holds a NaN
// or an infinity, or a share finished incomplete; ALREADY_EXISTS for a second push of a share.
#ifndef RINGSIDE_SERVER_PS_RECEIVED_SHARE_H_
#define RINGSIDE_SERVER_PS_RECEIVED_SHARE_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "common/wire_dtype.h"
#include "server/ps/push_check.h"

namespace ringside::server {

// One segment of a share as it was received: elements [first, first + count) of the range in the
// step's wire dtype, in `pieces`, which `owner` keeps valid.
struct HeldPayload {
  uint64_t first = 0;
  uint64_t count = 0;
  uint64_t pushed_before = 0;  // elements of the share pushed before it (push order)
  std::vector<absl::string_view> pieces;
  std::shared_ptr<const void> owner;
};
using HeldPayloads = std::vector<std::shared_ptr<const HeldPayload>>;

// Reads a share's elements in range order across its held payloads, decoding the wire dtype.
class HeldShareReader {
 public:
  // From range element `begin`, which the first of `payloads` (in range order) holds. `payloads`
  // must outlive the reader.
  HeldShareReader(WireDtype dtype, const HeldPayloads& payloads, uint64_t begin);
  // The next out.size() elements into `out`, added to it when `add`. The payloads hold every
  // element asked for (ReceivedShare::Hand), so none is missing.
  void Read(absl::Span<float> out, bool add);

 private:
  // Opens payloads_[next_], skipping its first `skip` elements.
  void Open(uint64_t skip);

  const WireDtype dtype_;
  const HeldPayloads& payloads_;
  size_t next_ = 0;
  std::optional<WirePiecesReader> reader_;
  uint64_t left_ = 0;  // elements of the open payload not yet read
};

// What a share's segment must be: of the step's `dtype`, continuing the share within a range of
// `range_elements` (from the range's end when `descending`).
struct SegmentRule {
  WireDtype dtype = WireDtype::kFp32;
  bool descending = false;
  uint64_t range_elements = 0;
};

class ReceivedShare {
 public:
  enum class State { kIdle, kPushing, kDone };

  State state() const { return state_; }
  uint64_t received() const { return received_; }  // elements, in push order

  // A push of the share begins: ALREADY_EXISTS while one is open or after one was finished.
  absl::Status Begin(int worker, uint64_t step);
  // The element count of a segment of `pieces` (`bytes` bytes) at `offset`, once it is checked:
  // inside a push, a whole number of `rule.dtype` elements, finite (`check`'s report; unless
  // `decoded`, a compressed segment whose codec checked every value) and continuing the share.
  // Keeps nothing.
  absl::StatusOr<uint64_t> Check(const PushCheck& check, int worker, uint64_t step,
                                 const SegmentRule& rule, uint64_t offset, uint64_t bytes,
                                 const std::vector<absl::string_view>& pieces, bool decoded) const;
  // Keeps a segment Check counted.
  void Keep(uint64_t offset, uint64_t count, std::vector<absl::string_view> pieces,
            std::shared_ptr<const void> owner);
  // The worker says the share is complete: INVALID_ARGUMENT unless every element arrived.
  absl::Status Finish(int worker, uint64_t step, uint64_t range_elements);
  // The payloads that hold elements [from, to) of the share (in push order), in range order;
  // those wholly below `to` are no longer kept.
  HeldPayloads Hand(uint64_t from, uint64_t to, bool descending);
  // Forgets the push: the share may be pushed again.
  void Reset() { *this = ReceivedShare{}; }

 private:
  State state_ = State::kIdle;
  uint64_t received_ = 0;
  // Its payloads not yet wholly handed over, in push order.
  std::deque<std::shared_ptr<const HeldPayload>> held_;
};

}  // namespace ringside::server

#endif  // RINGSIDE_SERVER_PS_RECEIVED_SHARE_H_
