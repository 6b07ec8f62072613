#include "server/probe/link_probe.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/auth.h"
#include "common/grpc_util.h"
#include "common/link_fit.h"
#include "common/median.h"
#include "common/status_macros.h"

namespace ringside::probe {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kMaxDeviceChars = 64;

// A failed call to `member`, naming it and gRPC's reason with gRPC's code.
absl::Status MemberError(const grpc::Status& status, const std::string& member, const char* what) {
  return absl::Status(
      FromGrpcStatus(status).code(),
      absl::StrCat(what, " of member ", member, " failed: ", status.error_message()));
}

// One echo's round trip, or the member's error naming it.
absl::StatusOr<double> TimeEcho(proto::LinkProbe::Stub& stub, const std::string& member,
                                const proto::ProbePayload& request,
                                const LinkProbeOptions& options) {
  grpc::ClientContext context;
  SetDeadline(context, options.timeout);
  context.AddMetadata(kProbeTokenMetadata, options.token);
  proto::ProbePayload reply;
  const Clock::time_point start = Clock::now();
  const grpc::Status status = stub.Echo(&context, request, &reply);
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (!status.ok()) return MemberError(status, member, "probe");
  if (reply.payload().size() != request.payload().size()) {
    return absl::DataLossError(absl::StrCat("member ", member, " echoed ", reply.payload().size(),
                                            " bytes of ", request.payload().size()));
  }
  return seconds;
}

bool IsPositive(double value) { return std::isfinite(value) && value > 0; }

absl::Status CheckProfile(const proto::MemberProfile& profile, const std::string& member) {
  const std::pair<const char*, double> figures[] = {
      {"compute_seconds_per_sample", profile.compute_seconds_per_sample()},
      {"sync_cpu_seconds_per_byte", profile.sync_cpu_seconds_per_byte()},
      {"shard_bytes_per_second", profile.shard_bytes_per_second()},
      {"usable_cores", profile.usable_cores()}};
  for (const auto& [name, value] : figures) {
    if (!IsPositive(value)) {
      return absl::InvalidArgumentError(
          absl::StrCat("member ", member, "'s profile: ", name, " ", value, " is not positive"));
    }
  }
  if (profile.device().empty() || profile.device().size() > kMaxDeviceChars) {
    return absl::InvalidArgumentError(
        absl::StrCat("member ", member, "'s profile names no device"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckProfileRequest(const proto::ProfileRequest& request) {
  if (request.model().empty() || request.model().size() > kMaxProfileModelChars) {
    return absl::InvalidArgumentError(
        absl::StrCat("profile model: 1 to ", kMaxProfileModelChars, " characters"));
  }
  if (request.activation().empty() || request.activation().size() > kMaxProfileActivationChars) {
    return absl::InvalidArgumentError(
        absl::StrCat("profile activation: 1 to ", kMaxProfileActivationChars, " characters"));
  }
  if (request.batch_rows() < 1 || request.batch_rows() > kMaxProfileBatchRows) {
    return absl::InvalidArgumentError(
        absl::StrCat("profile batch rows ", request.batch_rows(), ": 1 to ", kMaxProfileBatchRows));
  }
  if (request.repeats() < 1 || request.repeats() > kMaxProfileRepeats) {
    return absl::InvalidArgumentError(
        absl::StrCat("profile repeats ", request.repeats(), ": 1 to ", kMaxProfileRepeats));
  }
  return absl::OkStatus();
}

grpc::ServerUnaryReactor* LinkProbeService::Echo(grpc::CallbackServerContext* context,
                                                 const proto::ProbePayload* request,
                                                 proto::ProbePayload* reply) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (!SecretsEqual(MetadataValue(*context, kProbeTokenMetadata), token_)) {
    reactor->Finish(grpc::Status(grpc::StatusCode::PERMISSION_DENIED, "no probe token"));
  } else if (request->payload().size() > kMaxProbeMessageBytes) {
    reactor->Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "probe payload over 4 MiB"));
  } else {
    reply->set_payload(request->payload());
    reactor->Finish(grpc::Status::OK);
  }
  return reactor;
}

grpc::Status LinkProbeService::Profile(grpc::ServerContext* context,
                                       const proto::ProfileRequest* request,
                                       proto::MemberProfile* reply) {
  if (!SecretsEqual(MetadataValue(*context, kProbeTokenMetadata), token_)) {
    return grpc::Status(grpc::StatusCode::PERMISSION_DENIED, "no probe token");
  }
  if (profiler_ == nullptr) {
    return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "this member does not profile itself");
  }
  if (const absl::Status checked = CheckProfileRequest(*request); !checked.ok()) {
    return ToGrpcStatus(checked);
  }
  std::lock_guard<std::mutex> one_at_a_time(profiling_);
  // A caller whose deadline passed while an earlier profile ran no longer waits for this one.
  if (context->IsCancelled()) {
    return grpc::Status(grpc::StatusCode::CANCELLED,
                        "the caller left while an earlier profile ran");
  }
  absl::StatusOr<proto::MemberProfile> profile = profiler_(*request);
  if (!profile.ok()) return ToGrpcStatus(profile.status());
  *reply = *std::move(profile);
  return grpc::Status::OK;
}

absl::StatusOr<LinkProbe> ProbeLink(const std::string& member, const LinkProbeOptions& options) {
  if (options.repeats < 1) return absl::InvalidArgumentError("probe repeats must be >= 1");
  auto stub = proto::LinkProbe::NewStub(MakeChannel(member, options.security));
  const uint64_t fit_from = std::min(options.fit_from_bytes, kMaxProbeMessageBytes / 2);
  std::vector<MessageTiming> timings;
  for (uint64_t bytes = 1024; bytes <= kMaxProbeMessageBytes; bytes *= 2) {
    proto::ProbePayload request;
    request.set_payload(std::string(bytes, 'p'));
    std::vector<double> round_trips;
    for (int i = 0; i < options.repeats; ++i) {
      ASSIGN_OR_RETURN(const double seconds, TimeEcho(*stub, member, request, options));
      round_trips.push_back(seconds);
    }
    const double round_trip = Median(round_trips);
    timings.push_back({bytes, round_trip / 2});
    if (bytes >= std::max(kAlwaysProbedBytes, 2 * fit_from) &&
        round_trip > absl::ToDoubleSeconds(options.round_trip_budget)) {
      break;
    }
  }
  std::vector<MessageTiming> fitted;
  for (const MessageTiming& timing : timings) {
    if (timing.bytes >= fit_from) fitted.push_back(timing);
  }
  absl::StatusOr<LinkFit> fit = FitLatencyBandwidth(fitted);
  if (!fit.ok()) return Annotate(fit.status(), absl::StrCat("link to ", member));
  const double latency = fit_from > 0 ? timings.front().seconds : fit->latency_seconds;
  LinkProbe probed;
  probed.link = absl::StrCat("probe->", member);
  probed.latency_seconds = latency;
  probed.bytes_per_second = fit->bytes_per_second();
  return probed;
}

absl::StatusOr<proto::MemberProfile> ProfileMember(const std::string& member,
                                                   const proto::ProfileRequest& request,
                                                   const LinkProbeOptions& options,
                                                   absl::Duration deadline) {
  RETURN_IF_ERROR(CheckProfileRequest(request));
  auto stub = proto::LinkProbe::NewStub(MakeChannel(member, options.security));
  grpc::ClientContext context;
  SetDeadline(context, deadline);
  context.AddMetadata(kProbeTokenMetadata, options.token);
  proto::MemberProfile profile;
  const grpc::Status status = stub->Profile(&context, request, &profile);
  if (!status.ok()) return MemberError(status, member, "profile");
  RETURN_IF_ERROR(CheckProfile(profile, member));
  return profile;
}

}  // namespace ringside::probe
