// A parameter-server shard's push validation under arbitrary call sequences: BeginPush,
// AddSegment, FinishPush and AbandonPush on a ShardState (server/ps/shard_state.h) with ranks,
// steps, offsets, range lengths, wire dtypes (float32, float16, bfloat16), orders (in order, or
// last part first: --bucket_bytes) and payloads taken from the input, as the Step streams of
// misbehaving or dying workers would make them. Each payload comes in two pieces cut anywhere,
// as the received slices the Step stream sums from (common/payload_codec.h) may cut it.
//
// Checks, besides the sanitizers: every call is answered as a plain model of the rules says (so
// nothing out of sequence, ragged or too long is ever accepted, a refused push changes nothing,
// and a share abandoned after part of its step was summed loses the step); the applied step
// count never runs ahead of the steps completed by every worker and reaches it within seconds (a
// hang is a failure); and each applied step's sum is exactly the complete shares in rank order,
// summed segment by segment as the shares arrive, never a part of one.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "common/optimizer.h"
#include "common/wire_dtype.h"
#include "server/ps/shard_state.h"
#include "tests/fuzz/fuzz_input.h"

namespace ringside::fuzz {
namespace {

using server::ShardState;

constexpr uint64_t kGeneration = 5;

// The rules of shard_state.h, written out plainly. A step completes once every share holds
// every element (the half-close only confirms it); a share abandoned after part of its step was
// summed (every share covered it) loses the step.
struct Model {
  enum class Push { kIdle, kPushing, kDone };
  struct Share {
    Push state = Push::kIdle;
    uint64_t received = 0;
    std::vector<float> values;
  };
  int workers = 1;
  uint64_t range = 0;
  uint64_t collecting = 0;  // the step being collected
  uint64_t handed = 0;      // elements of it every share holds (summed)
  bool lost = false;
  bool closed = false;
  std::vector<Share> shares;
  std::vector<std::vector<float>> sums;  // of the steps completed here, in order
  WireDtype dtype = WireDtype::kFp32;    // of the step collected: its first push's
  bool descending = false;               // likewise its order

  bool ValidWorker(int worker) const { return worker >= 0 && worker < workers; }

  absl::StatusCode CheckStep(uint64_t step) const {
    if (closed || step != collecting) return absl::StatusCode::kFailedPrecondition;
    return lost ? absl::StatusCode::kAborted : absl::StatusCode::kOk;
  }

  absl::StatusCode Begin(uint64_t generation, int worker, uint64_t step, uint64_t elements,
                         WireDtype wire, bool last_first) {
    if (generation != kGeneration) return absl::StatusCode::kFailedPrecondition;
    if (!ValidWorker(worker) || elements != range) return absl::StatusCode::kInvalidArgument;
    if (absl::StatusCode code = CheckStep(step); code != absl::StatusCode::kOk) return code;
    // The step's first push sets its dtype; every later one must push in it.
    const bool any_began = std::any_of(shares.begin(), shares.end(),
                                       [](const Share& s) { return s.state != Push::kIdle; });
    if (!any_began) {
      dtype = wire;
      descending = last_first;
    } else if (wire != dtype || last_first != descending) {
      return absl::StatusCode::kInvalidArgument;
    }
    Share& share = shares[worker];
    if (share.state != Push::kIdle) return absl::StatusCode::kAlreadyExists;
    share = Share{Push::kPushing, 0, std::vector<float>(range)};
    return absl::StatusCode::kOk;
  }

  absl::StatusCode Add(int worker, uint64_t step, uint64_t offset, const std::string& payload) {
    if (!ValidWorker(worker)) return absl::StatusCode::kInvalidArgument;
    if (absl::StatusCode code = CheckStep(step); code != absl::StatusCode::kOk) return code;
    Share& share = shares[worker];
    if (share.state != Push::kPushing) return absl::StatusCode::kFailedPrecondition;
    const size_t width = WireBytesPerElement(dtype);
    const uint64_t count = payload.size() / width;
    // In order from the range's start, or (descending) each segment ending where the last began.
    const uint64_t left = range - share.received;
    const bool continues = descending ? count <= left && offset == left - count
                                      : offset == share.received && count <= left;
    if (payload.size() % width != 0 || !continues) return absl::StatusCode::kInvalidArgument;
    std::vector<float> decoded(count);
    for (uint64_t i = 0; i < count; ++i) {  // one element at a time: decoded as it arrives
      DecodeWire(dtype, payload.data() + i * width, absl::MakeSpan(&decoded[i], 1));
    }
    // A NaN or an infinity is refused and nothing of the segment kept (issue 51).
    if (CountNonFinite(decoded) != 0) return absl::StatusCode::kInvalidArgument;
    std::copy(decoded.begin(), decoded.end(), share.values.begin() + offset);
    share.received += count;
    Advance();
    return absl::StatusCode::kOk;
  }

  absl::StatusCode Finish(int worker, uint64_t step) {
    if (!ValidWorker(worker)) return absl::StatusCode::kInvalidArgument;
    if (step < collecting) return absl::StatusCode::kOk;  // complete: every share was
    if (absl::StatusCode code = CheckStep(step); code != absl::StatusCode::kOk) return code;
    Share& share = shares[worker];
    if (share.state != Push::kPushing || share.received != range) {
      return absl::StatusCode::kInvalidArgument;
    }
    share.state = Push::kDone;
    Advance();
    return absl::StatusCode::kOk;
  }

  // Where worker's next segment of `bytes` bytes continues its share (any offset when it cannot).
  uint64_t Continuing(int worker, size_t bytes) const {
    const Share& share = shares[worker];
    const uint64_t count = bytes / WireBytesPerElement(dtype);
    if (!descending) return share.received;
    return count <= range - share.received ? range - share.received - count : 0;
  }

  void Advance() {
    uint64_t ready = range;
    bool all_began = true;
    for (const Share& share : shares) {
      ready = std::min(ready, share.received);
      all_began = all_began && share.state != Push::kIdle;
    }
    handed = std::max(handed, ready);
    if (!all_began || ready != range) return;
    std::vector<float> sum = shares[0].values;  // rank order, as the shard sums
    for (size_t w = 1; w < shares.size(); ++w) {
      for (uint64_t i = 0; i < range; ++i) sum[i] += shares[w].values[i];
    }
    RoundToWire(dtype, absl::MakeSpan(sum));  // the sum as the replies carry it
    sums.push_back(std::move(sum));
    for (Share& done : shares) done = Share{};
    ++collecting;
    handed = 0;
  }

  void Abandon(int worker, uint64_t step) {
    if (!ValidWorker(worker) || step != collecting || lost) return;
    Share& share = shares[worker];
    if (share.state == Push::kIdle || share.received == range) return;
    if (handed == 0) {
      share = Share{};
    } else {
      lost = true;
    }
  }
};

bool SameFloats(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    // The same additions in the same order; NaN payloads may differ with vectorisation.
    if (!(a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i])) ||
          std::memcmp(&a[i], &b[i], sizeof(float)) == 0)) {
      return false;
    }
  }
  return true;
}

void CheckCode(absl::StatusCode expected, const absl::Status& status, const char* call) {
  FUZZ_CHECK(status.code() == expected, "%s: the rules say %s, the shard says %s", call,
             absl::StatusCodeToString(expected).c_str(), status.ToString().c_str());
}

// The shard's answer for one step, asked for as soon as the model completed it: the shard keeps
// a step's sum only until every worker has begun the next (shard_state.h), as a reply stream
// would hold it.
struct AppliedAnswer {
  absl::Notification done;
  server::Values sum;
};

// Asks for the sum of each step the model completed since the last call.
void AskForNewSums(ShardState& state, const Model& model, uint64_t first_step,
                   std::vector<std::unique_ptr<AppliedAnswer>>& answers) {
  while (answers.size() < model.sums.size()) {
    AppliedAnswer* answer = answers.emplace_back(std::make_unique<AppliedAnswer>()).get();
    state.WhenApplied(first_step + answers.size() - 1, [answer](server::Values values) {
      answer->sum = std::move(values);
      answer->done.Notify();
    });
  }
}

// Every step completed in the model is applied within seconds, with exactly the model's sum.
void CheckApplied(ShardState& state, const Model& model, uint64_t first_step,
                  const std::vector<std::unique_ptr<AppliedAnswer>>& answers) {
  const uint64_t completed = model.sums.size();
  const uint64_t applied = state.current_step();
  FUZZ_CHECK(applied >= first_step && applied <= first_step + completed,
             "%lu steps applied, %lu completed from step %lu", applied, completed, first_step);
  if (completed == 0 || model.closed) return;
  for (uint64_t i = 0; i < completed; ++i) {
    FUZZ_CHECK(answers[i]->done.WaitForNotificationWithTimeout(absl::Seconds(5)),
               "step %lu, completed by every worker, not applied after 5 s", first_step + i);
    FUZZ_CHECK(answers[i]->sum != nullptr && SameFloats(*answers[i]->sum, model.sums[i]),
               "step %lu's sum is not the sum of its complete shares", first_step + i);
  }
  FUZZ_CHECK(state.current_step() == first_step + completed, "%lu steps applied, expected %lu",
             state.current_step(), first_step + completed);
}

}  // namespace
}  // namespace ringside::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ringside;
  using namespace ringside::fuzz;
  namespace op = ps_push_ops;
  FuzzReader in(data, size);
  Model model;
  model.workers = 1 + in.Byte() % 3;
  model.range = in.Byte() % 9;
  const uint64_t first_step = in.Byte() % 4;
  model.collecting = first_step;
  model.shares.resize(model.workers);

  OptimizerConfig sgd;
  sgd.learning_rate = 0.5f;
  std::vector<std::unique_ptr<AppliedAnswer>> answers;  // outlives the state's applier
  const std::vector<float> initial(model.range, 1.0f);
  // A restored shard (first_step > 0) goes through the same rules from its step on.
  absl::StatusOr<std::unique_ptr<ShardState>> created =
      first_step == 0 ? ShardState::Create({kGeneration, model.workers, 0}, initial, sgd)
                      : ShardState::Restore({kGeneration, model.workers, 0}, first_step, initial,
                                            {static_cast<float>(first_step)}, sgd);
  FUZZ_CHECK(created.ok(), "%s", created.status().ToString().c_str());
  ShardState& state = **created;

  // A worker rank (one past each end too) and a step near the one being collected.
  auto worker = [&] { return static_cast<int>(in.Byte() % (model.workers + 2)) - 1; };
  auto step = [&] {
    const uint64_t delta = in.Byte() % 4;
    return delta == 0 && model.collecting > 0 ? model.collecting - 1 : model.collecting + delta / 3;
  };
  uint64_t applied_before = state.current_step();
  while (!in.empty()) {
    switch (in.Byte() % op::kCount) {
      case op::kBegin: {
        const int w = worker();
        const uint64_t s = step();
        const uint8_t range = in.Byte();
        const uint64_t elements = range < 224 ? model.range : range % 16;
        const uint64_t generation = in.Byte() < 240 ? kGeneration : kGeneration - 1;
        constexpr WireDtype kDtypes[] = {WireDtype::kFp32, WireDtype::kFp16, WireDtype::kBf16};
        const uint8_t how = in.Byte();
        const WireDtype dtype = kDtypes[how % 3];
        const bool descending = how / 3 % 2 == 1;
        const absl::StatusCode expected =
            model.Begin(generation, w, s, elements, dtype, descending);
        CheckCode(expected, state.BeginPush(generation, w, s, elements, dtype, descending),
                  "BeginPush");
        break;
      }
      case op::kAdd: {
        const int w = worker();
        const uint64_t s = step();
        const uint8_t at = in.Byte();
        const bool valid = model.ValidWorker(w);
        auto owner = std::make_shared<const std::string>(in.Bytes(in.Byte() % 40));
        const std::string& payload = *owner;
        // Mostly where the share continues, sometimes anywhere.
        const uint64_t offset = at < 200 && valid ? model.Continuing(w, payload.size())
                                                  : (at < 250 ? at % 12 : ~uint64_t{0});
        const absl::StatusCode expected = model.Add(w, s, offset, payload);
        // In two pieces, as received slices may hold it, cut anywhere (within an element too).
        const size_t cut = at % (payload.size() + 1);
        const absl::string_view bytes(payload);
        // The shard holds them until they are summed: `owner` keeps them.
        std::vector<absl::string_view> pieces = {bytes.substr(0, cut), bytes.substr(cut)};
        CheckCode(expected, state.AddSegment(w, s, offset, std::move(pieces), std::move(owner)),
                  "AddSegment");
        break;
      }
      case op::kFinish: {
        const int w = worker();
        const uint64_t s = step();
        const absl::StatusCode expected = model.Finish(w, s);
        CheckCode(expected, state.FinishPush(w, s), "FinishPush");
        break;
      }
      case op::kAbandon: {
        const int w = worker();
        const uint64_t s = step();
        model.Abandon(w, s);
        state.AbandonPush(w, s);
        break;
      }
      case op::kWait:
        CheckApplied(state, model, first_step, answers);
        break;
      case op::kClose:
        if (in.Byte() % 4 == 0) {
          CheckApplied(state, model, first_step, answers);  // what completed before still counts
          model.closed = true;
          state.Close();
        }
        break;
    }
    AskForNewSums(state, model, first_step, answers);
    const uint64_t applied = state.current_step();
    FUZZ_CHECK(applied >= applied_before && applied <= first_step + model.sums.size(),
               "applied steps went from %lu to %lu with %lu completed", applied_before, applied,
               model.sums.size());
    applied_before = applied;
  }
  CheckApplied(state, model, first_step, answers);
  return 0;
}
