#include "server/probe/link_probe.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/auth.h"
#include "common/grpc_util.h"
#include "common/link_fit.h"
#include "common/status_macros.h"

namespace ringside::probe {
namespace {

using Clock = std::chrono::steady_clock;

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
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
  if (!status.ok()) {
    return absl::Status(
        FromGrpcStatus(status).code(),
        absl::StrCat("probe of member ", member, " failed: ", status.error_message()));
  }
  if (reply.payload().size() != request.payload().size()) {
    return absl::DataLossError(absl::StrCat("member ", member, " echoed ", reply.payload().size(),
                                            " bytes of ", request.payload().size()));
  }
  return seconds;
}

}  // namespace

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
  return LinkProbe{absl::StrCat("probe->", member), latency, fit->bytes_per_second()};
}

}  // namespace ringside::probe
