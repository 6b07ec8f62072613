// A parameter-server shard's compressed steps (server/ps/shard_state.h, "Compression") under
// arbitrary call sequences: BeginPush, AddCompressedSegment, FinishPush and AbandonPush with a
// top-k or sign codec, offsets, element counts and payloads from the input (well-formed encodings
// of values taken from it, those with a byte changed, or raw bytes), each payload in two pieces
// cut anywhere, as received slices may hold it.
//
// Checks, besides the sanitizers: every call is answered as a plain model of the rules says (a
// payload its codec refuses, a segment out of sequence or of another length than the step's, is
// refused and changes nothing); and each completed step is applied within seconds with exactly
// the model's values: the decoded shares summed in rank order, encoded segment by segment under
// the shard's error feedback (the plain ShardCompression, kept across steps) and decoded again.
#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "common/compression.h"
#include "common/optimizer.h"
#include "server/ps/compressed_exchange.h"
#include "server/ps/shard_state.h"
#include "tests/fuzz/fuzz_input.h"

namespace ringside::fuzz {
namespace {

using server::ShardState;

constexpr uint64_t kGeneration = 3;

// The rules of a compressed step, written out plainly.
struct Model {
  enum class Push { kIdle, kPushing, kDone };
  struct Share {
    Push state = Push::kIdle;
    uint64_t received = 0;
    std::vector<float> values;
  };
  const GradientCodec* codec = nullptr;
  std::unique_ptr<server::ShardCompression> feedback;  // the shard's, across steps
  int workers = 1;
  uint64_t range = 1;
  uint64_t collecting = 0;
  uint64_t handed = 0;
  uint64_t segment = 0;  // the step's segment length; 0 before its first segment
  bool any_began = false;
  bool lost = false;
  std::vector<Share> shares;
  std::vector<std::vector<float>> applied;  // of the steps completed, in order

  bool ValidWorker(int worker) const { return worker >= 0 && worker < workers; }

  absl::StatusCode CheckStep() const {
    return lost ? absl::StatusCode::kAborted : absl::StatusCode::kOk;
  }

  absl::StatusCode Begin(int worker) {
    if (!ValidWorker(worker)) return absl::StatusCode::kInvalidArgument;
    if (absl::StatusCode code = CheckStep(); code != absl::StatusCode::kOk) return code;
    Share& share = shares[worker];
    if (share.state != Push::kIdle) return absl::StatusCode::kAlreadyExists;
    share = Share{Push::kPushing, 0, std::vector<float>(range)};
    any_began = true;
    return absl::StatusCode::kOk;
  }

  absl::StatusCode Add(int worker, uint64_t offset, uint64_t elements, const std::string& wire) {
    if (!ValidWorker(worker)) return absl::StatusCode::kInvalidArgument;
    if (absl::StatusCode code = CheckStep(); code != absl::StatusCode::kOk) return code;
    if (!any_began || elements > range) return absl::StatusCode::kInvalidArgument;
    const SegmentKey key{0, static_cast<int64_t>(collecting), offset};
    if (!codec->Check(key, wire, elements).ok()) return absl::StatusCode::kInvalidArgument;
    Share& share = shares[worker];
    if (share.state != Push::kPushing) return absl::StatusCode::kFailedPrecondition;
    if (offset != share.received || elements > range - share.received) {
      return absl::StatusCode::kInvalidArgument;
    }
    if (segment == 0 ? elements == 0 : elements != std::min(segment, range - offset)) {
      return absl::StatusCode::kInvalidArgument;
    }
    if (segment == 0) segment = elements;
    const absl::Status decoded =
        codec->Decode(key, wire, absl::MakeSpan(share.values).subspan(offset, elements));
    FUZZ_CHECK(decoded.ok(), "a checked payload did not decode: %s", decoded.ToString().c_str());
    share.received += elements;
    Advance();
    return absl::StatusCode::kOk;
  }

  absl::StatusCode Finish(int worker) {
    if (!ValidWorker(worker)) return absl::StatusCode::kInvalidArgument;
    if (absl::StatusCode code = CheckStep(); code != absl::StatusCode::kOk) return code;
    Share& share = shares[worker];
    if (share.state != Push::kPushing || share.received != range) {
      return absl::StatusCode::kInvalidArgument;
    }
    share.state = Push::kDone;
    Advance();
    return absl::StatusCode::kOk;
  }

  void Abandon(int worker) {
    if (!ValidWorker(worker) || lost) return;
    Share& share = shares[worker];
    if (share.state == Push::kIdle || share.received == range) return;
    if (handed == 0) {
      share = Share{};
    } else {
      lost = true;
    }
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
    std::vector<float> out(range);
    for (uint64_t at = 0; at < range; at += segment) {
      const uint64_t n = std::min(segment, range - at);
      feedback->EncodeReply(static_cast<int64_t>(collecting), at,
                            absl::MakeConstSpan(sum).subspan(at, n),
                            absl::MakeSpan(out).subspan(at, n));
    }
    applied.push_back(std::move(out));
    for (Share& done : shares) done = Share{};
    ++collecting;
    handed = 0;
    segment = 0;
    any_began = false;
  }
};

void CheckCode(absl::StatusCode expected, const absl::Status& status, const char* call) {
  FUZZ_CHECK(status.code() == expected, "%s: the rules say %s, the shard says %s", call,
             absl::StatusCodeToString(expected).c_str(), status.ToString().c_str());
}

struct Answer {
  absl::Notification done;
  server::Summed summed;
};

}  // namespace
}  // namespace ringside::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ringside;
  using namespace ringside::fuzz;
  namespace op = ps_compressed_push_ops;
  FuzzReader in(data, size);
  Model model;
  model.workers = 1 + in.Byte() % 3;
  model.range = 1 + in.Byte() % 48;
  const uint8_t kind = in.Byte();
  const float fraction = static_cast<float>(in.Byte() % 255 + 1) / 255.0f;
  const Compression compression = kind % 2 == 0 ? Compression{CompressionKind::kTopK, fraction}
                                                : Compression{CompressionKind::kSign, 1};
  const std::unique_ptr<GradientCodec> codec = MakeGradientCodec(compression);
  model.codec = codec.get();
  model.feedback = std::make_unique<server::ShardCompression>(*codec, 0, 0, model.range);
  model.shares.resize(model.workers);

  OptimizerConfig sgd;
  sgd.learning_rate = 0.5f;
  std::vector<std::unique_ptr<Answer>> answers;  // outlives the state's applier
  absl::StatusOr<std::unique_ptr<ShardState>> created = ShardState::Create(
      {kGeneration, model.workers, 0}, std::vector<float>(model.range, 1.0f), sgd);
  FUZZ_CHECK(created.ok(), "%s", created.status().ToString().c_str());
  ShardState& state = **created;

  auto worker = [&] { return static_cast<int>(in.Byte() % (model.workers + 2)) - 1; };
  while (!in.empty()) {
    switch (in.Byte() % op::kCount) {
      case op::kBegin: {
        const int w = worker();
        CheckCode(model.Begin(w),
                  state.BeginPush(kGeneration, w, model.collecting, model.range, WireDtype::kFp32,
                                  false, compression),
                  "BeginPush");
        break;
      }
      case op::kAdd: {
        const int w = worker();
        const uint8_t how = in.Byte();
        const uint8_t count = in.Byte();
        const bool valid = model.ValidWorker(w);
        // Mostly where the share continues with the step's length, sometimes anything.
        const uint64_t offset = how < 200 && valid ? model.shares[w].received : how % 50;
        const uint64_t left = model.range - std::min(model.range, offset);
        const uint64_t elements = how < 200 && model.segment > 0 ? std::min(model.segment, left)
                                  : count < 240                  ? count % (left + 1)
                                                                 : count;
        std::string wire;
        if (how % 4 == 3) {  // raw bytes
          wire = in.Bytes(in.Byte() % 64);
        } else {
          std::vector<float> values(std::min<uint64_t>(elements, 255));
          for (float& value : values) value = static_cast<float>(int{in.Byte()} - 128) / 16.0f;
          wire.assign(codec->EncodedBytes(values.size()), '\0');
          codec->Encode(SegmentKey{0, static_cast<int64_t>(model.collecting), offset},
                        absl::MakeSpan(values), wire.data());
          if (how % 4 == 2 && !wire.empty()) wire[in.Byte() % wire.size()] ^= in.Byte() | 1;
        }
        const uint64_t step = model.collecting;  // the model may complete it
        const absl::StatusCode expected = model.Add(w, offset, elements, wire);
        const size_t cut = how % (wire.size() + 1);
        const absl::string_view bytes(wire);
        const absl::string_view pieces[] = {bytes.substr(0, cut), bytes.substr(cut)};
        CheckCode(expected, state.AddCompressedSegment(w, step, offset, elements, pieces),
                  "AddCompressedSegment");
        break;
      }
      case op::kFinish: {
        const int w = worker();
        const uint64_t step = model.collecting;
        CheckCode(model.Finish(w), state.FinishPush(w, step), "FinishPush");
        break;
      }
      case op::kAbandon: {
        const int w = worker();
        model.Abandon(w);
        state.AbandonPush(w, model.collecting);
        break;
      }
    }
    // Each step completed is asked for at once: the shard keeps its sum only until every worker
    // has begun the next.
    while (answers.size() < model.applied.size()) {
      Answer* answer = answers.emplace_back(std::make_unique<Answer>()).get();
      state.WhenSummed(answers.size() - 1, std::numeric_limits<uint64_t>::max(),
                       [answer](server::Summed summed) {
                         answer->summed = std::move(summed);
                         answer->done.Notify();
                       });
    }
  }
  for (size_t step = 0; step < answers.size(); ++step) {
    Answer& answer = *answers[step];
    FUZZ_CHECK(answer.done.WaitForNotificationWithTimeout(absl::Seconds(5)),
               "step %zu, completed by every worker, not applied after 5 s", step);
    const server::Summed& summed = answer.summed;
    FUZZ_CHECK(summed.sum != nullptr && summed.encoded != nullptr, "step %zu has no reply: %s",
               step, summed.ended.ToString().c_str());
    FUZZ_CHECK(summed.sum->size() >= model.range &&
                   std::memcmp(summed.sum->data(), model.applied[step].data(),
                               model.range * sizeof(float)) == 0,
               "step %zu's applied values are not the encoded sum decoded", step);
  }
  return 0;
}
