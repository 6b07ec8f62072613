// A compressed parameter-server step, both sides, as plain code over payloads in memory
// (--compression, common/compression.h): what the Step stream is to carry when a job compresses,
// kept apart from the stream so that it is tested without gRPC.
//
//   1. Worker (WorkerCompression): per segment [at, at + n) of its gradient, adds the gradient to
//      its residual and pushes the codec's encoding of that (ErrorFeedback), keeping the rest.
//   2. Shard (ShardCompression::SumPushes): checks every worker's payload of a segment first,
//      then decodes and adds them in rank order into the segment's sum (float32, the same bits
//      whatever the arrival order). One bad payload refuses the segment, INVALID_ARGUMENT, and
//      changes neither the sum nor any residual.
//   3. Shard (ShardCompression::EncodeReply): adds the sum to its own residual over its range and
//      replies with the codec's encoding of that, keeping the rest (1-bit Adam's server error);
//      what it applies to its own copy is that reply decoded, so its range and every worker's
//      copy take the same values.
//   4. Worker (WorkerCompression::DecodeReply): decodes the reply into the segment of the sum its
//      optimiser takes.
// Every payload of a segment is keyed by (job seed, step, the segment's offset in the whole
// gradient), which random-k draws its coordinates from. On the Step stream (ps_client.h,
// shard_state.h) each shard's range is a gradient of its own: a worker keeps a WorkerCompression
// per shard over that range, and the key is (0, step, offset in the range); top-k and sign, the
// kinds a server carries, draw nothing from it.
//
// Residuals are reset (Reset) at every regroup: a new generation, a mode switch, a lost or joined
// member, a loaded state or checkpoint. They are never carried in a checkpoint: parameters and
// optimiser state, equal on every member, do not depend on them.
//
// Thread-compatible: one owner (a worker's sync, a shard's applier); distinct segments touch
// disjoint elements.
#ifndef RINGSIDE_SERVER_PS_COMPRESSED_EXCHANGE_H_
#define RINGSIDE_SERVER_PS_COMPRESSED_EXCHANGE_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "common/error_feedback.h"
#include "common/gradient_codec.h"

namespace ringside::server {

class WorkerCompression {
 public:
  // `codec` must outlive this object; the residual covers the whole gradient of `elements`.
  WorkerCompression(const GradientCodec& codec, uint64_t seed, uint64_t elements)
      : codec_(codec), seed_(seed), feedback_(elements) {}

  // Step 1: the push of gradient[at, at + segment.size()) (`segment`) of step `step`.
  std::string EncodePush(int64_t step, uint64_t at, absl::Span<const float> segment);
  // Step 4: the shard's reply for the segment at `at` decoded into `out`; INVALID_ARGUMENT
  // (and `out` unchanged) for a malformed one.
  absl::Status DecodeReply(int64_t step, uint64_t at, absl::string_view reply,
                           absl::Span<float> out) const;
  void Reset() { feedback_.Reset(); }
  absl::Span<const float> residual() const { return feedback_.residual(); }
  const GradientCodec& codec() const { return codec_; }

 private:
  const GradientCodec& codec_;
  const uint64_t seed_;
  ErrorFeedback feedback_;
};

class ShardCompression {
 public:
  // `codec` must outlive this object; the residual covers the shard's range, which begins at
  // `range_begin` of the whole gradient and holds `range_elements`.
  ShardCompression(const GradientCodec& codec, uint64_t seed, uint64_t range_begin,
                   uint64_t range_elements)
      : codec_(codec), seed_(seed), range_begin_(range_begin), feedback_(range_elements) {}

  // Step 2: every worker's push of the segment at `at` (relative to the range) of `step`, in rank
  // order, decoded and added into `sum` (the segment's). All or nothing.
  absl::Status SumPushes(int64_t step, uint64_t at, absl::Span<const absl::string_view> pushes,
                         absl::Span<float> sum) const;
  // Step 3: the reply for the segment at `at` whose sum is `sum`; `applied` (sum.size() elements)
  // receives the reply decoded, what the shard's optimiser takes.
  std::string EncodeReply(int64_t step, uint64_t at, absl::Span<const float> sum,
                          absl::Span<float> applied);
  void Reset() { feedback_.Reset(); }
  absl::Span<const float> residual() const { return feedback_.residual(); }

 private:
  SegmentKey KeyOf(int64_t step, uint64_t at) const { return {seed_, step, range_begin_ + at}; }

  const GradientCodec& codec_;
  const uint64_t seed_;
  const uint64_t range_begin_;
  ErrorFeedback feedback_;
};

}  // namespace ringside::server

#endif  // RINGSIDE_SERVER_PS_COMPRESSED_EXCHANGE_H_
