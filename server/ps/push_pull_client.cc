#include "server/ps/push_pull_client.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/auth.h"
#include "common/grpc_util.h"
#include "common/status_macros.h"

namespace ringside::server {
namespace {

// One shard's PushPull stream of one step, as a gRPC callback reactor: writes the share in
// segments (one write in flight), half-closes, reads the parameters back into its own buffer.
// The trainer's thread starts it and waits for OnDone; gRPC's callback threads run the rest.
class PushPullCall final
    : public grpc::ClientBidiReactor<proto::PsGradientPush, proto::PsPulledValues> {
 public:
  PushPullCall(StalePsClient& client, const StalePsClient::Shard& shard, uint64_t step,
               uint64_t read_version, absl::Span<const float> gradient)
      : client_(client),
        shard_(shard),
        gradient_(gradient.begin(), gradient.end()),
        where_(absl::StrCat(PsShardName(shard.index), " (", shard.address, ") step ", step)),
        segment_elements_(std::max<uint64_t>(1, client.options().segment_bytes / sizeof(float))) {
    const PsClientOptions& options = client.options();
    SetDeadline(context_, options.timeout);
    context_.set_wait_for_ready(true);
    // The key and what it claims, checked by the shard before it reads the push.
    AddLinkClaim(context_, LinkClaim{static_cast<size_t>(shard.index) < options.keys.size()
                                         ? options.keys[shard.index]
                                         : "",
                                     options.generation, options.rank, true});
    push_.set_generation(options.generation);
    push_.set_worker_rank(static_cast<uint32_t>(options.rank));
    push_.set_step(step);
    push_.set_read_version(read_version);
    push_.set_range_elements(gradient_.size());
    values_.resize(gradient_.size());
  }

  void Start() {
    if (shard_.send.expected_bytes != nullptr) {  // the cost model's bytes: the range, once
      shard_.send.expected_bytes->Increment(static_cast<double>(gradient_.size() * sizeof(float)));
    }
    client_.calls().Track(context_);
    shard_.stub->async()->PushPull(&context_, this);
    StartRead(&reply_);
    WriteSegment();
    StartCall();
  }

  void OnWriteDone(bool ok) override {
    if (!ok) return;  // the call is over; OnDone says why
    if (shard_.send.bytes != nullptr) {
      shard_.send.bytes->Increment(static_cast<double>(push_.payload().size()));
    }
    if (shard_.send.messages != nullptr) shard_.send.messages->Increment();
    if (sent_ >= gradient_.size() && written_ > 0) {
      StartWritesDone();
    } else {
      WriteSegment();
    }
  }

  void OnReadDone(bool ok) override {
    if (!ok) return;
    const uint64_t count = reply_.payload().size() / sizeof(float);
    if (reply_.range_elements() != values_.size() || reply_.offset() != received_ ||
        reply_.payload().size() % sizeof(float) != 0 || count > values_.size() - received_ ||
        (received_ > 0 && reply_.version() != version_)) {
      reply_error_ = absl::InternalError(
          absl::StrCat("reply segment (offset ", reply_.offset(), ", ", reply_.payload().size(),
                       " bytes) does not continue the range at ", received_));
      context_.TryCancel();
      return;
    }
    if (count > 0) {
      std::memcpy(values_.data() + received_, reply_.payload().data(), reply_.payload().size());
    }
    received_ += count;
    version_ = reply_.version();
    if (shard_.receive.bytes != nullptr) {
      shard_.receive.bytes->Increment(static_cast<double>(reply_.payload().size()));
    }
    StartRead(&reply_);
  }

  void OnDone(const grpc::Status& status) override {
    absl::Status result;
    if (!reply_error_.ok()) {
      result = Annotate(reply_error_, where_);
    } else if (!status.ok()) {
      result = Annotate(FromGrpcStatus(status), where_);
    } else if (received_ != values_.size()) {
      result = absl::InternalError(absl::StrCat(where_, ": the shard returned ", received_, " of ",
                                                values_.size(), " parameters"));
    }
    absl::MutexLock lock(&mu_);
    result_ = std::move(result);
    done_ = true;
  }

  // Waits for the end; the parameters' version, or why the call failed.
  absl::StatusOr<uint64_t> Wait(absl::Span<float> params) {
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(&done_));
    }
    client_.calls().Untrack(context_);
    if (!result_.ok()) return result_;
    if (params.size() != values_.size()) {
      return absl::InternalError(absl::StrCat(where_, ": the range does not fit the worker's"));
    }
    std::copy(values_.begin(), values_.end(), params.begin());
    return version_;
  }

  void Cancel() { context_.TryCancel(); }

 private:
  void WriteSegment() {
    const uint64_t count = std::min<uint64_t>(segment_elements_, gradient_.size() - sent_);
    push_.set_offset(sent_);
    push_.set_payload(reinterpret_cast<const char*>(gradient_.data() + sent_),
                      count * sizeof(float));
    sent_ += count;
    ++written_;
    StartWrite(&push_);
  }

  StalePsClient& client_;
  const StalePsClient::Shard& shard_;
  const std::vector<float> gradient_;  // a copy: the caller's buffer is free once Start returns
  const std::string where_;
  const uint64_t segment_elements_;
  grpc::ClientContext context_;
  // Write side: touched by Start and then OnWriteDone only.
  proto::PsGradientPush push_;
  uint64_t sent_ = 0;
  uint64_t written_ = 0;
  // Read side: touched by OnReadDone only, then read by OnDone and (after it) Wait.
  proto::PsPulledValues reply_;
  std::vector<float> values_;
  uint64_t received_ = 0;
  uint64_t version_ = 0;
  absl::Status reply_error_;

  absl::Mutex mu_;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status result_;  // written before done_ is set, read after
};

class GrpcStaleLink final : public StaleShardLink {
 public:
  GrpcStaleLink(StalePsClient& client, const StalePsClient::Shard& shard)
      : client_(client), shard_(shard) {}
  ~GrpcStaleLink() override {
    if (call_ != nullptr) {  // started and never finished: end it before it is freed
      call_->Cancel();
      call_->Wait({}).IgnoreError();
    }
  }

  absl::Status Start(uint64_t step, uint64_t read_version,
                     absl::Span<const float> gradient) override {
    if (call_ != nullptr) return absl::FailedPreconditionError("a step is already in flight");
    if (gradient.size() != shard_.range.size()) {
      return absl::InvalidArgumentError("the gradient does not fit the shard's range");
    }
    call_ = std::make_unique<PushPullCall>(client_, shard_, step, read_version, gradient);
    call_->Start();
    return absl::OkStatus();
  }

  absl::StatusOr<uint64_t> Finish(absl::Span<float> params) override {
    if (call_ == nullptr) return absl::FailedPreconditionError("Finish without Start");
    std::unique_ptr<PushPullCall> call = std::move(call_);
    return call->Wait(params);
  }

 private:
  StalePsClient& client_;
  const StalePsClient::Shard& shard_;
  std::unique_ptr<PushPullCall> call_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<StalePsClient>> StalePsClient::Create(const PsClientOptions& options,
                                                                     uint64_t parameters,
                                                                     Metrics* metrics) {
  ASSIGN_OR_RETURN(std::vector<Shard> shards, ConnectPsShards(options, parameters, metrics));
  std::unique_ptr<StalePsClient> client(new StalePsClient(options));
  for (const Shard& shard : shards) client->ranges_.push_back(shard.range);
  client->shards_ = std::move(shards);
  return client;
}

StalePsClient::~StalePsClient() = default;

std::vector<std::unique_ptr<StaleShardLink>> StalePsClient::Links() {
  std::vector<std::unique_ptr<StaleShardLink>> links;
  for (const Shard& shard : shards_) links.push_back(std::make_unique<GrpcStaleLink>(*this, shard));
  return links;
}

void StalePsClient::Cancel() { calls_.Cancel(); }

}  // namespace ringside::server
