#include "server/ps/shard_state.h"

#include <algorithm>
#include <atomic>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/metrics.h"
#include "common/status_macros.h"

namespace ringside::server {

// The applier sums this many elements of every share before the next ones, so the sum's part it
// adds into stays in the cache while the N shares are added (a segment may be far larger).
constexpr uint64_t kSumBlockElements = 8192;

namespace {

absl::Status CheckShardConfig(const ShardConfig& config) {
  if (config.workers < 1) return absl::InvalidArgumentError("a shard needs at least one worker");
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<ShardState>> ShardState::Create(ShardConfig config,
                                                               std::vector<float> initial,
                                                               const OptimizerConfig& optimizer,
                                                               ShardStepMetrics metrics) {
  RETURN_IF_ERROR(CheckShardConfig(config));
  ASSIGN_OR_RETURN(Optimizer state, Optimizer::Create(optimizer, initial.size()));
  return std::unique_ptr<ShardState>(
      new ShardState(config, /*step=*/0, std::move(initial), std::move(state), metrics));
}

absl::StatusOr<std::unique_ptr<ShardState>> ShardState::Restore(
    ShardConfig config, uint64_t step, std::vector<float> values,
    absl::Span<const float> optimizer_state, const OptimizerConfig& optimizer,
    ShardStepMetrics metrics) {
  ASSIGN_OR_RETURN(Optimizer state, Optimizer::Create(optimizer, values.size()));
  RETURN_IF_ERROR(Annotate(state.ImportState(optimizer_state),
                           absl::StrCat("restoring ", PsShardName(config.shard))));
  return Restore(config, step, std::move(values), std::move(state), metrics);
}

absl::StatusOr<std::unique_ptr<ShardState>> ShardState::Restore(ShardConfig config, uint64_t step,
                                                                std::vector<float> values,
                                                                Optimizer optimizer,
                                                                ShardStepMetrics metrics) {
  RETURN_IF_ERROR(CheckShardConfig(config));
  if (optimizer.size() != values.size()) {
    return absl::InvalidArgumentError(absl::StrCat("an optimiser of ", optimizer.size(),
                                                   " elements for a range of ", values.size()));
  }
  if (static_cast<uint64_t>(optimizer.steps()) != step) {
    return absl::InvalidArgumentError(absl::StrCat("optimizer state has taken ", optimizer.steps(),
                                                   " steps but the shard is restored at step ",
                                                   step));
  }
  return std::unique_ptr<ShardState>(
      new ShardState(config, step, std::move(values), std::move(optimizer), metrics));
}

ShardState::ShardState(ShardConfig config, uint64_t step, std::vector<float> values,
                       Optimizer optimizer, ShardStepMetrics metrics)
    : config_(config),
      range_elements_(values.size()),
      held_elements_(
          std::max<uint64_t>(1, std::min<uint64_t>(values.size(), config.held_share_elements))),
      sum_elements_(
          std::min<uint64_t>(values.size(), std::max<uint64_t>(1, config.sum_buffer_elements))),
      metrics_(metrics),
      check_(ShardIdentity{config.generation, config.workers, config.shard, values.size()},
             metrics.nonfinite),
      collecting_(step),
      shares_(static_cast<size_t>(config.workers)),
      answered_(static_cast<size_t>(config.workers)),
      current_{step, nullptr, nullptr},
      optimizer_(std::move(optimizer)),
      values_(std::move(values)),
      applier_([this](const ApplierThread::Liveness& liveness) { ApplyLoop(liveness); }) {}

ShardState::~ShardState() {
  std::vector<Reader> readers;
  std::vector<std::weak_ptr<ParameterRead>> reads;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    segment_ready_.Signal();
    readers.swap(readers_);
    reads.swap(reads_);
  }
  RefuseReaders(std::move(readers),
                absl::AbortedError(absl::StrCat(PsShardName(config_.shard), "'s generation ",
                                                config_.generation, " ended before a step did")));
  // A read still streaming must not touch values_ once they are gone.
  for (const std::weak_ptr<ParameterRead>& weak : reads) {
    if (Read read = weak.lock()) {
      read->Abort(absl::AbortedError(absl::StrCat(PsShardName(config_.shard), "'s generation ",
                                                  config_.generation, " ended during the read")));
    }
  }
  // applier_, destroyed first, joins the applier, or (run on it, from a callback that dropped the
  // last reference) tells it to return as soon as that callback is destroyed.
}

void ShardState::Close() {
  ReadyCallbacks ready;
  std::vector<Reader> readers;
  absl::Status unreadable;
  {
    absl::MutexLock lock(&mu_);
    closed_ = true;
    ready = ReadyLocked();  // a closed state answers every waiter and reader
    readers.swap(readers_);
    unreadable = UnreadableLocked();
  }
  RefuseReaders(std::move(readers), unreadable);
  for (auto& [done, summed] : ready) done(std::move(summed));
}

absl::Status ShardState::CheckStep(uint64_t step) const {
  if (closed_) {
    return absl::FailedPreconditionError(absl::StrCat(
        PsShardName(config_.shard), " has moved past generation ", config_.generation));
  }
  if (step != collecting_) {
    return absl::FailedPreconditionError(
        absl::StrCat(PsShardName(config_.shard), " is collecting step ", collecting_, ", not step ",
                     step, step < collecting_ ? " (already applied)" : " (ahead of the others)"));
  }
  if (lost_) return LostStatus();
  return absl::OkStatus();
}

absl::Status ShardState::LostStatus() const {
  return absl::AbortedError(absl::StrCat(
      "step ", collecting_, " is lost on ", PsShardName(config_.shard), ": ",
      WorkerName(lost_worker_), " left it after part of it was summed; generation ",
      config_.generation, " must regroup (take the latest assignment from the controller)"));
}

void ShardState::ApplyLoop(const ApplierThread::Liveness& liveness) {
  while (true) {
    Segment segment;
    ApplyHook hook;
    bool begins_step = false;
    std::vector<Read> reads;
    {
      absl::MutexLock lock(&mu_);
      while (!stopping_ && (segments_.empty() || closed_)) segment_ready_.Wait(&mu_);
      if (stopping_) return;
      segment = std::move(segments_.front());
      segments_.pop_front();
      hook = apply_hook_;
      applying_ = true;
      begins_step = sum_ == nullptr;
      if (begins_step) sum_ = SumBufferLocked();
      reads = ReadsOfLocked(segment.step, /*remove=*/false);
    }
    // No read can begin meanwhile (applying_), and only this thread writes values_.
    for (const Read& read : reads) read->SaveBefore(segment.begin, segment.end);
    // The workers' answer first: the segment's sum is final before the shard steps its own copy
    // of the range with it (which no worker waits for).
    Sum(segment, begins_step, hook);
    PublishSum(segment);
    if (liveness.owner_destroyed()) return;
    Step(segment);
    PublishStep(segment);
    if (liveness.owner_destroyed()) return;
  }
}

std::shared_ptr<std::vector<float>> ShardState::SumBufferLocked() {
  // Every worker has begun this step (a segment is handed over only then), and none does before
  // it has the whole of the last step's sum: nobody asks for that sum again. A reply stream still
  // finishing may hold it; then it keeps it and this step gets a buffer of its own.
  if (current_.sum != nullptr && current_.sum.use_count() == 1) {
    // Made non-const by this class (below); only ever read through Values since.
    auto buffer = std::const_pointer_cast<std::vector<float>>(std::move(current_.sum));
    current_.sum = nullptr;
    // use_count() reads relaxed: this orders the last other holder's reads, released when it
    // dropped its reference, before the applier's writes.
    std::atomic_thread_fence(std::memory_order_acquire);
    return buffer;
  }
  return std::make_shared<std::vector<float>>(sum_elements_);
}

void ShardState::Sum(const Segment& segment, bool begins_step, const ApplyHook& hook) {
  const absl::Time start = absl::Now();
  if (begins_step) {  // every element of sum_ is written before it is read or published
    optimizer_.BeginStep();
    update_time_ = absl::ZeroDuration();
  }
  // Rank order, element by element: ((0 + 1) + ...) + (N-1), the bits of a whole-range sum,
  // decoded straight from the received payloads. The sum's slots wrap at their own size.
  std::vector<HeldShareReader> shares;
  shares.reserve(segment.held.size());
  for (const HeldPayloads& held : segment.held)
    shares.emplace_back(segment.dtype, held, segment.begin);
  ForEachRingRun(segment.begin, segment.end, sum_elements_,
                 [&](uint64_t /*first*/, uint64_t at, uint64_t count) {
                   for (uint64_t done = 0; done < count; done += kSumBlockElements) {
                     const absl::Span<float> sum = absl::MakeSpan(*sum_).subspan(
                         at + done, std::min(kSumBlockElements, count - done));
                     for (size_t w = 0; w < shares.size(); ++w) shares[w].Read(sum, /*add=*/w > 0);
                   }
                 });
  if (hook) hook(segment.step, segment.begin, segment.end);
  // 16-bit: the sum as the replies carry it (encoded once), which the optimiser then applies;
  // compressed: the sum's encoding decoded, likewise.
  ForEachRingRun(segment.begin, segment.end, sum_elements_,
                 [&](uint64_t /*first*/, uint64_t at, uint64_t count) {
                   RoundToWire(segment.dtype, absl::MakeSpan(*sum_).subspan(at, count));
                 });
  EncodeReplies(segment, begins_step);
  update_time_ += absl::Now() - start;
}

void ShardState::Step(const Segment& segment) {
  const absl::Time start = absl::Now();
  // The optimiser applies what the workers decode, multiplied back for fp16 (wire_share.h).
  const WireShareScale scale(segment.dtype, config_.workers);
  ForEachRingRun(
      segment.begin, segment.end, sum_elements_, [&](uint64_t first, uint64_t at, uint64_t count) {
        const absl::Span<const float> gradient =
            scale.UnscaledSum(absl::MakeConstSpan(*sum_).subspan(at, count), scaled_);
        // The piece lies within the range by construction, so the optimiser cannot refuse.
        optimizer_.StepPiece(first, absl::MakeSpan(values_).subspan(first, count), gradient)
            .IgnoreError();
      });
  update_time_ += absl::Now() - start;
}

void ShardState::PublishSum(const Segment& segment) {
  ReadyCallbacks ready;
  {
    absl::MutexLock lock(&mu_);
    // applying_ stays: values_ will change
    partial_ = Partial{segment.step, sum_, segment.known, encoded_};
    ready = ReadyLocked();
  }
  for (auto& [done, summed] : ready) done(std::move(summed));
  // `ready` is cleared on return: that may drop the last reference to this state (see
  // ~ShardState); the loop checks for it before touching anything.
}

void ShardState::PublishStep(Segment& segment) {
  ReadyCallbacks ready;
  std::vector<Reader> readers;
  std::vector<Read> completed, answers;
  {
    absl::MutexLock lock(&mu_);
    applying_ = false;
    if (!segment.last) return;  // the segment's sum is published already
    current_ = Published{segment.step + 1, std::move(sum_), std::move(encoded_)};
    sum_ = nullptr;
    encoded_ = nullptr;
    partial_ = Partial{};
    completed = ReadsOfLocked(segment.step, /*remove=*/true);
    readers.swap(readers_);
    // values_ holds the step just published until this thread applies the next one.
    for (size_t r = 0; r < readers.size(); ++r) answers.push_back(NewReadLocked());
    ready = ReadyLocked();
  }
  for (const Read& read : completed) read->Complete();
  for (size_t r = 0; r < readers.size(); ++r) readers[r](std::move(answers[r]));
  if (metrics_.steps != nullptr) metrics_.steps->Increment();
  if (metrics_.wait_seconds != nullptr) {
    metrics_.wait_seconds->Observe(absl::ToDoubleSeconds(segment.last_push - segment.first_push));
  }
  if (metrics_.update_seconds != nullptr) {
    metrics_.update_seconds->Observe(absl::ToDoubleSeconds(update_time_));
  }
  for (auto& [done, summed] : ready) done(std::move(summed));
  // As PublishSum's: `ready` may hold the last reference to this state.
}

std::optional<Summed> ShardState::AnswerLocked(const Waiter& waiter) const {
  // A replaced generation answers nothing more as applied, even a step its applier finished.
  if (closed_) {
    return Summed{
        nullptr, 0,
        absl::AbortedError(absl::StrCat(
            PsShardName(config_.shard), " moved to a new generation before step ", waiter.step,
            " was answered; take the latest assignment from the controller"))};
  }
  if (waiter.step < current_.step) {
    // A waiter's step is the one being collected or applied; an older one is not kept.
    if (waiter.step + 1 == current_.step && current_.sum != nullptr) {
      return Summed{current_.sum, range_elements_, {}, current_.encoded};
    }
    return Summed{
        nullptr, 0,
        absl::FailedPreconditionError(absl::StrCat(
            "step ", waiter.step, "'s sum is no longer kept on ", PsShardName(config_.shard), ": ",
            current_.step, " steps are applied and every worker has begun a later one"))};
  }
  if (lost_ && waiter.step >= collecting_) return Summed{nullptr, 0, LostStatus()};
  if (partial_.sum != nullptr && partial_.step == waiter.step && partial_.end > waiter.after) {
    return Summed{partial_.sum, partial_.end, {}, partial_.encoded};
  }
  return std::nullopt;
}

ShardState::ReadyCallbacks ShardState::ReadyLocked() {
  ReadyCallbacks ready;
  for (auto it = waiters_.begin(); it != waiters_.end();) {
    std::optional<Summed> answer = AnswerLocked(*it);
    if (answer.has_value()) {
      ready.emplace_back(std::move(it->done), *std::move(answer));
      it = waiters_.erase(it);
    } else {
      ++it;
    }
  }
  return ready;
}

void ShardState::WhenSummed(uint64_t step, uint64_t after, std::function<void(Summed)> done) {
  std::optional<Summed> answer;
  {
    absl::MutexLock lock(&mu_);
    Waiter waiter{step, after, std::move(done)};
    answer = AnswerLocked(waiter);
    if (!answer.has_value()) {
      waiters_.push_back(std::move(waiter));
      return;
    }
    done = std::move(waiter.done);
  }
  done(*std::move(answer));
}

void ShardState::WhenApplied(uint64_t step, std::function<void(Values)> done) {
  // No partial sum is ever past the whole range: only the whole step (or its end) answers.
  WhenSummed(step, std::numeric_limits<uint64_t>::max(),
             [done = std::move(done)](Summed summed) { done(std::move(summed.sum)); });
}

}  // namespace ringside::server
