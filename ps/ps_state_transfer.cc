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
      : context_(context), service_(service) {
    StartRead(&segment_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      if (context_->IsCancelled()) {
        Finish(grpc::Status(grpc::StatusCode::CANCELLED, "load cancelled; nothing changed"));
      } else if (!began_ || received_ != sequence_.size()) {
        Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                            absl::StrCat("incomplete state: ", received_, " of ", sequence_.size(),
                                         " elements; nothing changed")));
      } else {
        Finish(ToGrpcStatus(service_.FinishLoad(first_, std::move(sequence_))));
      }
      return;
    }
    absl::Status status = Add();
    if (!status.ok()) {
      Finish(ToGrpcStatus(status));
      return;
    }
    StartRead(&segment_);
  }

  void OnDone() override { delete this; }

 private:
  absl::Status Add() {
    if (!began_) {
      RETURN_IF_ERROR(
          service_.CheckLoadKey(MetadataValue(*context_, kLinkKeyMetadata), segment_.generation()));
      ASSIGN_OR_RETURN(const uint64_t elements, service_.CheckLoad(segment_));
      first_ = segment_;
      first_.clear_payload();
      sequence_.resize(elements);
      began_ = true;
    } else if (!SameTransfer(first_, segment_)) {
      return absl::InvalidArgumentError("a load stream carries one state; a segment changed it");
    }
    const std::string& payload = segment_.payload();
    if (payload.size() % sizeof(float) != 0 || segment_.offset() != received_ ||
        payload.size() / sizeof(float) > sequence_.size() - received_) {
      return absl::InvalidArgumentError(
          absl::StrCat("state segment of ", payload.size(), " bytes at offset ", segment_.offset(),
                       " does not continue the state at ", received_, " of ", sequence_.size()));
    }
    if (!payload.empty()) std::memcpy(sequence_.data() + received_, payload.data(), payload.size());
    received_ += payload.size() / sizeof(float);
    return absl::OkStatus();
  }

  grpc::CallbackServerContext* const context_;
  ParameterShardService& service_;
  proto::PsStateSegment segment_;
  proto::PsStateSegment first_;  // the transfer's header fields
  bool began_ = false;
  std::vector<float> sequence_;
  uint64_t received_ = 0;
};

}  // namespace

absl::StatusOr<uint64_t> ParameterShardService::CheckLoad(
    const proto::PsStateSegment& first) const {
  absl::MutexLock lock(&mu_);
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
  if (first.workers() < 1 || first.workers() > kMaxWorkers) {
    return absl::InvalidArgumentError(absl::StrCat("a generation of ", first.workers(),
                                                   " workers; a shard takes 1 to ", kMaxWorkers));
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
  ShardJob job;
  {
    absl::MutexLock lock(&mu_);
    job = *job_;
  }
  const auto range_end = sequence.begin() + static_cast<ptrdiff_t>(job.range.size());
  const std::vector<float> optimizer_state(range_end, sequence.end());
  sequence.erase(range_end, sequence.end());
  const int workers = static_cast<int>(first.workers());
  ASSIGN_OR_RETURN(
      std::unique_ptr<ShardState> state,
      ShardState::Restore(ShardConfig{first.generation(), workers, job.shard}, first.step(),
                          std::move(sequence), optimizer_state, job.optimizer, metrics_.steps));
  ShardGeneration generation;
  generation.state = std::move(state);
  if (metrics_.links) generation.links = metrics_.links(job.shard, workers);
  Serve(std::move(generation));
  return absl::OkStatus();
}

grpc::ServerReadReactor<proto::PsStateSegment>* ParameterShardService::Load(
    grpc::CallbackServerContext* context, proto::PsLoadReply* /*reply*/) {
  return new LoadReactor(context, *this);
}

}  // namespace ringside::server
