// The probe protocol (proto/probe.proto), both sides: LinkProbeService, what a member serves
// (`ringside plan`'s loopback members, a worker given --probe_token_file), and its callers:
// ProbeLink times echoes of 1 KiB to 4 MiB (doubling, a few of each, the median kept; with a
// budget, sizes past 64 KiB stop once one's round trip outlasts it) through MakeChannel with the
// job's transport security and fits them to α + β·m (common/link_fit.h), one way being half a
// round trip; ProfileMember asks the member to measure itself (the measuring is the member's
// MemberProfiler: this layer knows no model or device). Errors: UNAVAILABLE / DEADLINE_EXCEEDED
// / PERMISSION_DENIED naming the member and gRPC's reason; DATA_LOSS for a short echo;
// INVALID_ARGUMENT for a fit that fails or a profile out of range.
#ifndef RINGSIDE_SERVER_PROBE_LINK_PROBE_H_
#define RINGSIDE_SERVER_PROBE_LINK_PROBE_H_

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/cluster_probe.h"
#include "common/transport_security.h"
#include "proto/probe.grpc.pb.h"

namespace ringside::probe {

inline constexpr char kProbeTokenMetadata[] = "ringside-probe-token";
inline constexpr uint64_t kMaxProbeMessageBytes = uint64_t{4} << 20;
inline constexpr uint64_t kAlwaysProbedBytes = uint64_t{64} << 10;
inline constexpr size_t kMaxProfileModelChars = 256;
inline constexpr size_t kMaxProfileActivationChars = 32;
inline constexpr int64_t kMaxProfileBatchRows = 4096;
inline constexpr int kMaxProfileRepeats = 20;

// A member's measurement of itself for a request already within the bounds above.
using MemberProfiler =
    std::function<absl::StatusOr<proto::MemberProfile>(const proto::ProfileRequest&)>;

// INVALID_ARGUMENT naming the field unless every field of `request` is within the bounds above.
absl::Status CheckProfileRequest(const proto::ProfileRequest& request);

// To a caller presenting `token` (PERMISSION_DENIED otherwise): echoes every payload of at most
// kMaxProbeMessageBytes, and answers Profile with `profiler`, one request at a time (a profile
// times the cores it is given; the next waits; one whose caller has left is not run). A null
// profiler: Profile is UNIMPLEMENTED. Echo is a callback method; Profile, which takes seconds,
// runs on the server's synchronous threads. Thread-safe.
class LinkProbeService final
    : public proto::LinkProbe::WithCallbackMethod_Echo<proto::LinkProbe::Service> {
 public:
  explicit LinkProbeService(std::string token, MemberProfiler profiler = nullptr)
      : token_(std::move(token)), profiler_(std::move(profiler)) {}
  grpc::ServerUnaryReactor* Echo(grpc::CallbackServerContext* context,
                                 const proto::ProbePayload* request,
                                 proto::ProbePayload* reply) override;
  grpc::Status Profile(grpc::ServerContext* context, const proto::ProfileRequest* request,
                       proto::MemberProfile* reply) override;

 private:
  const std::string token_;
  const MemberProfiler profiler_;
  std::mutex profiling_;  // held while a profile runs
};

struct LinkProbeOptions {
  std::string token;  // the members' secret
  TransportSecurity security;
  absl::Duration timeout = absl::Seconds(10);  // each echo's deadline
  int repeats = 5;                             // echoes per size (>= 1); the median is kept
  // Past kAlwaysProbedBytes, no larger size is sent once a size's median round trip is over this
  // (a slow link's 4 MiB echo takes seconds); infinite: every size.
  absl::Duration round_trip_budget = absl::InfiniteDuration();
  // A shaper's burst lets the first bytes of a message through at line speed, which bends the
  // line the fit assumes. Non-zero: the bandwidth is fitted to the sizes of at least this many
  // bytes only (capped at half of kMaxProbeMessageBytes, so two sizes remain), and the latency is
  // the smallest size's one-way time. 0: every size, one fit.
  uint64_t fit_from_bytes = 0;
};

// The link to `member` (HOST:PORT of a LinkProbeService), named "probe->MEMBER".
absl::StatusOr<LinkProbe> ProbeLink(const std::string& member, const LinkProbeOptions& options);

// `member`'s profile of itself, within `deadline`, through `options`' secret and security; a
// reply whose figures are not finite and positive is refused (INVALID_ARGUMENT naming it).
absl::StatusOr<proto::MemberProfile> ProfileMember(const std::string& member,
                                                   const proto::ProfileRequest& request,
                                                   const LinkProbeOptions& options,
                                                   absl::Duration deadline);

}  // namespace ringside::probe

#endif  // RINGSIDE_SERVER_PROBE_LINK_PROBE_H_
