#include "server/ps/ps_client.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/grpc_util.h"
#include "common/status_macros.h"
#include "server/ps/wire_share.h"

namespace ringside::server {

absl::Status CheckPsWindowBytes(int64_t bytes) {
  if (bytes < 16 || bytes > static_cast<int64_t>(kMaxPsWindowBytes)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--ps_window_bytes=", bytes, ": between 16 bytes and ", kMaxPsWindowBytes,
        " (a shard holds 1.25 windows of 16-bit elements of each share unsummed and of the sum)"));
  }
  return absl::OkStatus();
}

uint64_t PsPushSegmentBytes(uint64_t window_bytes, uint64_t segment_bytes) {
  return std::min(segment_bytes, (window_bytes > 0 ? window_bytes : kDefaultPsWindowBytes) / 4);
}

absl::StatusOr<std::vector<PsShardLink>> ConnectPsShards(const PsClientOptions& options,
                                                         uint64_t parameters, Metrics* metrics) {
  if (options.shards.empty()) {
    return absl::InvalidArgumentError("--ps: give every shard's address, in shard order");
  }
  const std::vector<ElementRange> ranges =
      EvenRanges(parameters, static_cast<int>(options.shards.size()));
  std::vector<PsShardLink> links;
  for (size_t s = 0; s < options.shards.size(); ++s) {
    PsShardLink link;
    link.index = static_cast<int>(s);
    link.address = options.shards[s];
    link.range = ranges[s];
    std::shared_ptr<grpc::Channel> channel = MakeChannel(link.address, options.security);
    link.stub = proto::ParameterShard::NewStub(channel);
    link.raw_stub = std::make_unique<grpc::GenericStub>(channel);
    if (metrics != nullptr) {
      const std::string me = WorkerName(options.rank), shard = PsShardName(link.index);
      link.send = metrics->LinkSend(me, shard, SyncMode::kPs);
      link.receive = metrics->LinkReceive(shard, me, SyncMode::kPs);
    }
    links.push_back(std::move(link));
  }
  return links;
}

absl::StatusOr<std::unique_ptr<PsClient>> PsClient::Create(const PsClientOptions& options,
                                                           uint64_t parameters, Metrics* metrics) {
  ASSIGN_OR_RETURN(std::vector<PsShardLink> links, ConnectPsShards(options, parameters, metrics));
  std::unique_ptr<PsClient> sync(new PsClient(options));
  if (options.compression.kind != CompressionKind::kNone) {
    RETURN_IF_ERROR(CheckCompressionFitsMode(options.compression, SyncMode::kPs));
    sync->codec_ = MakeGradientCodec(options.compression);
    for (const PsShardLink& link : links) {
      sync->feedback_.push_back(
          std::make_unique<WorkerCompression>(*sync->codec_, /*seed=*/0, link.range.size()));
    }
  }
  sync->links_ = std::move(links);
  return sync;
}

void CallCancellation::Track(grpc::ClientContext& context) {
  absl::MutexLock lock(&mu_);
  in_flight_.insert(&context);
  if (cancelled_) context.TryCancel();  // before the call exists: it starts cancelled
}

void CallCancellation::Untrack(grpc::ClientContext& context) {
  absl::MutexLock lock(&mu_);
  in_flight_.erase(&context);
}

void CallCancellation::Cancel() {
  absl::MutexLock lock(&mu_);
  cancelled_ = true;
  for (grpc::ClientContext* context : in_flight_) context->TryCancel();
}

void PsClient::Cancel() { calls_.Cancel(); }

size_t PsClient::PrepareShare(absl::Span<float> part) const {
  const WireDtype wire = options_.wire_dtype;
  const size_t non_finite = wire == WireDtype::kFp32 ? 0 : CountNonFinite(part);
  WireShareScale(wire, options_.workers).ScaleShare(part);  // fp16's guard (else nothing)
  return non_finite;
}

bool PsClient::Compresses(int64_t step) const {
  return CompressesStep(options_.compression, options_.compression_warmup, step);
}

absl::Status PsClient::Sum(int64_t step, absl::Span<float> gradient) {
  if (Compresses(step)) {
    // A codec takes finite values only (gradient_codec.h); the shard would refuse them too.
    if (const size_t non_finite = CountNonFinite(gradient); non_finite > 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(WorkerName(options_.rank), "'s share of step ", step, " has ", non_finite,
                       " of ", gradient.size(), " values NaN or infinite: it is not pushed"));
    }
    return Exchange(step, gradient);
  }
  const size_t own_non_finite = PrepareShare(gradient);
  RETURN_IF_ERROR(Exchange(step, gradient));
  return FinishSum(step, gradient, own_non_finite);
}

absl::Status PsClient::SumAsReady(int64_t step, absl::Span<float> gradient,
                                  const AwaitFinal& await_final) {
  if (Compresses(step)) {
    return absl::FailedPreconditionError(
        "a compressed step is pushed whole, in order (--compression takes no --bucket_bytes)");
  }
  RETURN_IF_ERROR(ExchangeAsReady(step, gradient, await_final));
  // The share's own values are gone (the sum overwrote them): the caller counted them.
  return FinishSum(step, gradient, 0);
}

absl::Status PsClient::FinishSum(int64_t step, absl::Span<float> gradient, size_t own_non_finite) {
  const WireDtype wire = options_.wire_dtype;
  if (wire == WireDtype::kFp32) return absl::OkStatus();
  WireShareScale(wire, options_.workers).UnscaleSum(gradient);
  const size_t non_finite = CountNonFinite(gradient);
  if (non_finite == 0) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "the shards' sum of step ", step, " has ", non_finite, " of ", gradient.size(),
      " values NaN or infinite (", WorkerName(options_.rank), "'s own share had ", own_non_finite,
      "): a NaN gradient, or a sum beyond the wire dtype's range; it is not used"));
}

}  // namespace ringside::server
