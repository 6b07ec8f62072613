// ShardState's compressed steps (shard_state.h, "Compression"): a push decoded once as it
// arrives, and the reply encoded once, under the shard's error feedback, for every worker.
#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/metrics.h"
#include "common/payload_codec.h"
#include "common/status_macros.h"
#include "server/ps/shard_state.h"

namespace ringside::server {

absl::Status ShardState::AddCompressedSegment(int worker, uint64_t step, uint64_t offset,
                                              uint64_t elements,
                                              absl::Span<const absl::string_view> pieces) {
  RETURN_IF_ERROR(check_.Worker(worker));
  std::shared_ptr<const StepCodec> codec;
  {
    absl::MutexLock lock(&mu_);
    RETURN_IF_ERROR(CheckStep(step));
    codec = codec_;  // the step's until every share of it is complete, this one included
  }
  if (codec == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("worker ", worker,
                                                   " sent a compressed segment in a push of step ",
                                                   step, " that is not compressed"));
  }
  // Bounded before anything is allocated for it: no more than a shard holds of a share.
  if (elements > range_elements_) {
    return absl::InvalidArgumentError(absl::StrCat("worker ", worker, "'s compressed segment of ",
                                                   elements, " elements exceeds the range of ",
                                                   range_elements_));
  }
  if (elements > held_elements_) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "worker ", worker, "'s compressed segment of ", elements, " elements exceeds the ",
        held_elements_, " a shard holds of a share unsummed"));
  }
  std::string joined;
  const absl::string_view wire = ContiguousBytes(pieces, joined);
  auto decoded = std::make_shared<std::vector<float>>(elements);
  if (absl::Status status = codec->codec->Decode(SegmentKey{0, static_cast<int64_t>(step), offset},
                                                 wire, absl::MakeSpan(*decoded));
      !status.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("worker ", worker, "'s ", codec->text,
                                                   " segment of step ", step, " at ", offset, ": ",
                                                   status.message()));
  }
  const absl::string_view bytes(reinterpret_cast<const char*>(decoded->data()),
                                decoded->size() * sizeof(float));
  return KeepSegment(worker, step, offset, bytes.size(), /*compressed=*/true, {bytes},
                     std::move(decoded));
}

void ShardState::EncodeReplies(const Segment& segment, bool begins_step) {
  if (segment.codec == nullptr) return;
  if (feedback_codec_ != segment.codec) {  // a codec of its own: a residual of zeros
    feedback_.reset();
    feedback_.emplace(*segment.codec->codec, /*seed=*/0, /*range_begin=*/0, range_elements_);
    feedback_codec_ = segment.codec;
  }
  if (begins_step || encoded_ == nullptr) {
    encoded_ = std::make_shared<EncodedReply>();
    encoded_->codec = segment.codec;
    encoded_->segment_elements = std::max<uint64_t>(1, segment.codec_segment);
    encoded_->segments.resize((range_elements_ + encoded_->segment_elements - 1) /
                              encoded_->segment_elements);
  }
  // Every share's received part ends on a codec segment's end (AgreeOnSegmentLocked), so the
  // applier's segment is whole codec segments.
  const uint64_t length = encoded_->segment_elements;
  for (uint64_t at = segment.begin; at < segment.end; at += length) {
    const uint64_t count = std::min(length, range_elements_ - at);
    codec_sum_.resize(count);
    codec_applied_.resize(count);
    // The sum is a ring of slots: a codec segment may wrap.
    ForEachRingRun(at, at + count, sum_elements_, [&](uint64_t first, uint64_t slot, uint64_t n) {
      std::copy_n(sum_->begin() + slot, n, codec_sum_.begin() + (first - at));
    });
    encoded_->segments[at / length] = feedback_->EncodeReply(
        static_cast<int64_t>(segment.step), at, codec_sum_, absl::MakeSpan(codec_applied_));
    ForEachRingRun(at, at + count, sum_elements_, [&](uint64_t first, uint64_t slot, uint64_t n) {
      std::copy_n(codec_applied_.begin() + (first - at), n, sum_->begin() + slot);
    });
  }
}

}  // namespace ringside::server
