// The ParameterShard service's state hand-over (Load): an elastic job moving its parameters and
// optimiser state onto the shards when a ps-mode generation begins.
#include <algorithm>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/auth.h"
#include "common/grpc_util.h"
#include "common/status_macros.h"
#include "ps/ps_refusals.h"
#include "ps/ps_service.h"

namespace ringside::server {
namespace {

bool SameTransfer(const proto::PsStateSegment& a, const proto::PsStateSegment& b) {
  return a.generation() == b.generation() && a.workers() == b.workers() && a.step() == b.step() &&
         a.range_begin() == b.range_begin() && a.range_elements() == b.range_elements() &&
         a.state_elements() == b.state_elements();
}

class LoadReactor final : public grpc::ServerReadReactor<proto::PsStateSegment> {
 public:
  LoadReactor(grpc::CallbackServerContext* context, ParameterShardService& service)
      : context_(context), service_(service), load_(service) {
    StartRead(&segment_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      if (context_->IsCancelled()) {
        Finish(grpc::Status(grpc::StatusCode::CANCELLED, "load cancelled; nothing changed"));
      } else {
        Finish(ToGrpcStatus(load_.Finish()));
      }
      return;
    }
    // Before anything is stored: the load must be the designated member's of its generation.
    absl::Status status;
    if (!checked_key_) {
      status =
          service_.CheckLoadKey(MetadataValue(*context_, kLinkKeyMetadata), segment_.generation());
      checked_key_ = true;
    }
    if (status.ok()) status = load_.Add(segment_);
    if (!status.ok()) {
      Finish(ToGrpcStatus(status));
      return;
    }
    StartRead(&segment_);
  }

  void OnDone() override { delete this; }

 private:
  grpc::CallbackServerContext* const context_;
  const ParameterShardService& service_;
  bool checked_key_ = false;  // on the first segment (StateLoad keeps the generation unchanged)
  StateLoad load_;
  proto::PsStateSegment segment_;
};

}  // namespace

absl::StatusOr<uint64_t> ParameterShardService::CheckLoad(
    const proto::PsStateSegment& first) const {
  absl::MutexLock lock(&mu_);
  return CheckLoadLocked(first);
}

absl::StatusOr<uint64_t> ParameterShardService::CheckLoadLocked(
    const proto::PsStateSegment& first) const {
  if (!job_.has_value()) {
    return absl::FailedPreconditionError(
        "this shard has no assignment from the controller yet, so it cannot check the state");
  }
  if (first.range_begin() != job_->range.begin || first.range_elements() != job_->range.size()) {
    return absl::InvalidArgumentError(absl::StrCat("state for range [", first.range_begin(), ", ",
                                                   first.range_begin() + first.range_elements(),
                                                   ") but ", PsShardName(job_->shard), " owns [",
                                                   job_->range.begin, ", ", job_->range.end, ")"));
  }
  if (first.workers() < 1 || first.workers() > kMaxLoadWorkers) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a generation of ", first.workers(), " workers; a shard takes 1 to ", kMaxLoadWorkers));
  }
  if (current_ != nullptr && first.generation() < current_->state->config().generation) {
    return absl::FailedPreconditionError(absl::StrCat("state for generation ", first.generation(),
                                                      " but the shard already serves ",
                                                      current_->state->config().generation));
  }
  const uint64_t expected =
      job_->range.size() + Optimizer::StateSize(job_->optimizer.kind, job_->range.size());
  if (first.state_elements() != expected) {
    return absl::InvalidArgumentError(
        absl::StrCat("state of ", first.state_elements(), " elements; this shard's range and ",
                     OptimizerName(job_->optimizer.kind), " state take ", expected));
  }
  return expected;
}

absl::Status ParameterShardService::FinishLoad(const proto::PsStateSegment& first,
                                               std::vector<float> sequence) {
  // The job and the generation served may have changed while the state streamed in (the
  // controller's next assignment, another worker's Load): the state is checked against both
  // again before it is cut up, and once more when it replaces the generation served. The first
  // check passing means the sequence has the size the current job takes: CheckLoad sized it by
  // the same header.
  ShardJob job;
  {
    absl::MutexLock lock(&mu_);
    RETURN_IF_ERROR(CheckLoadLocked(first).status());
    job = *job_;
  }
  const auto range_end = sequence.begin() + static_cast<ptrdiff_t>(job.range.size());
  const std::vector<float> optimizer_state(range_end, sequence.end());
  sequence.erase(range_end, sequence.end());
  const int workers = static_cast<int>(first.workers());  // at most kMaxLoadWorkers
  ASSIGN_OR_RETURN(
      std::unique_ptr<ShardState> state,
      ShardState::Restore(ShardConfig{first.generation(), workers, job.shard}, first.step(),
                          std::move(sequence), optimizer_state, job.optimizer, metrics_.steps));
  ShardGeneration generation;
  generation.state = std::move(state);
  if (metrics_.links) generation.links = metrics_.links(job.shard, workers);
  std::shared_ptr<const ShardGeneration> previous;
  {
    absl::MutexLock lock(&mu_);
    RETURN_IF_ERROR(CheckLoadLocked(first).status());
    if (job_->shard != job.shard) {
      return absl::FailedPreconditionError(
          absl::StrCat("the shard became ", PsShardName(job_->shard), " during a load for ",
                       PsShardName(job.shard), "; nothing changed"));
    }
    previous =
        std::exchange(current_, std::make_shared<const ShardGeneration>(std::move(generation)));
  }
  if (previous != nullptr) previous->state->Close();
  return absl::OkStatus();
}

absl::Status StateLoad::Add(const proto::PsStateSegment& segment) {
  if (!began_) {
    ASSIGN_OR_RETURN(const uint64_t elements, service_.CheckLoad(segment));
    first_ = segment;
    first_.clear_payload();
    sequence_.resize(elements);
    began_ = true;
  } else if (!SameTransfer(first_, segment)) {
    return absl::InvalidArgumentError("a load stream carries one state; a segment changed it");
  }
  const std::string& payload = segment.payload();
  if (payload.size() % sizeof(float) != 0 || segment.offset() != received_ ||
      payload.size() / sizeof(float) > sequence_.size() - received_) {
    return absl::InvalidArgumentError(
        absl::StrCat("state segment of ", payload.size(), " bytes at offset ", segment.offset(),
                     " does not continue the state at ", received_, " of ", sequence_.size()));
  }
  if (!payload.empty()) std::memcpy(sequence_.data() + received_, payload.data(), payload.size());
  received_ += payload.size() / sizeof(float);
  return absl::OkStatus();
}

absl::Status StateLoad::Finish() {
  if (!began_ || received_ != sequence_.size()) {
    return absl::InvalidArgumentError(absl::StrCat("incomplete state: ", received_, " of ",
                                                   sequence_.size(), " elements; nothing changed"));
  }
  return service_.FinishLoad(first_, std::move(sequence_));
}

grpc::ServerReadReactor<proto::PsStateSegment>* ParameterShardService::Load(
    grpc::CallbackServerContext* context, proto::PsLoadReply* /*reply*/) {
  return new LoadReactor(context, *this);
}

}  // namespace ringside::server
