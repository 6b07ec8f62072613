#include "server/ps/received_share.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace ringside::server {

HeldShareReader::HeldShareReader(WireDtype dtype, const HeldPayloads& payloads, uint64_t begin)
    : dtype_(dtype), payloads_(payloads) {
  if (!payloads_.empty()) Open(begin - payloads_.front()->first);
}

void HeldShareReader::Read(absl::Span<float> out, bool add) {
  while (!out.empty()) {
    const uint64_t take = std::min<uint64_t>(out.size(), left_);
    reader_->Read(out.subspan(0, take), add);
    out.remove_prefix(take);
    left_ -= take;
    if (left_ == 0 && next_ < payloads_.size()) Open(0);
  }
}

void HeldShareReader::Open(uint64_t skip) {
  const HeldPayload& payload = *payloads_[next_++];
  reader_.emplace(dtype_, payload.pieces);
  reader_->Skip(skip);
  left_ = payload.count - skip;
}

absl::Status ReceivedShare::Begin(int worker, uint64_t step) {
  if (state_ != State::kIdle) {
    return absl::AlreadyExistsError(absl::StrCat("worker ", worker, " already ",
                                                 state_ == State::kDone ? "pushed" : "is pushing",
                                                 " step ", step));
  }
  state_ = State::kPushing;
  received_ = 0;
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> ReceivedShare::Check(const PushCheck& check, int worker, uint64_t step,
                                              const SegmentRule& rule, uint64_t offset,
                                              uint64_t bytes,
                                              const std::vector<absl::string_view>& pieces,
                                              bool decoded) const {
  if (state_ != State::kPushing) {
    return absl::FailedPreconditionError(
        absl::StrCat("worker ", worker, " sent a segment outside a push of step ", step));
  }
  const size_t width = WireBytesPerElement(rule.dtype);
  if (bytes % width != 0) {
    return absl::InvalidArgumentError(absl::StrCat("segment of ", bytes,
                                                   " bytes is not a whole number of ",
                                                   WireDtypeName(rule.dtype), " elements"));
  }
  const uint64_t count = bytes / width;
  // Before anything of it is kept, as long as a copy would take.
  if (!decoded) RETURN_IF_ERROR(check.Finite(worker, step, rule.dtype, pieces, count));
  // In order, a segment begins where the share's received part ends; descending, it ends where
  // that part (counted from the range's end) begins.
  const uint64_t left = rule.range_elements - received_;
  const bool continues = rule.descending ? count <= left && offset == left - count
                                         : offset == received_ && count <= left;
  if (!continues) {
    return absl::InvalidArgumentError(
        absl::StrCat("segment at ", offset, " of ", count, " elements does not continue worker ",
                     worker, "'s share ", rule.descending ? "(last part first) " : "", "after ",
                     received_, " elements within a range of ", rule.range_elements));
  }
  return count;
}

void ReceivedShare::Keep(uint64_t offset, uint64_t count, std::vector<absl::string_view> pieces,
                         std::shared_ptr<const void> owner) {
  if (count > 0) {
    held_.push_back(std::make_shared<const HeldPayload>(
        HeldPayload{offset, count, received_, std::move(pieces), std::move(owner)}));
  }
  received_ += count;
}

absl::Status ReceivedShare::Finish(int worker, uint64_t step, uint64_t range_elements) {
  if (state_ != State::kPushing || received_ != range_elements) {
    return absl::InvalidArgumentError(absl::StrCat("worker ", worker, "'s share of step ", step,
                                                   " is incomplete: ", received_, " of ",
                                                   range_elements, " elements"));
  }
  state_ = State::kDone;
  return absl::OkStatus();
}

HeldPayloads ReceivedShare::Hand(uint64_t from, uint64_t to, bool descending) {
  HeldPayloads held;
  for (const auto& payload : held_) {
    if (payload->pushed_before >= to) break;
    if (payload->pushed_before + payload->count > from) held.push_back(payload);
  }
  while (!held_.empty() && held_.front()->pushed_before + held_.front()->count <= to) {
    held_.pop_front();
  }
  // Descending, push order runs from the range's end.
  if (descending) std::reverse(held.begin(), held.end());
  return held;
}

}  // namespace ringside::server
