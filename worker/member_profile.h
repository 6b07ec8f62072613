// What a member of a cluster measures of itself for `ringside plan`'s probe (cli/
// cluster_probe_run.h; served to it by a worker given --probe_token_file, server/probe/
// link_probe.h): a sample's compute on the job's model and device, the sync's CPU seconds per
// byte at one end of a link (a real ring allreduce between two members of this process over
// gRPC on loopback: both ends' hop work, gRPC and the kernel's TCP), a shard's service rate and
// the cores this process may use (common/usable_cores.h). Each timing is the median of `repeats`.
// Thread-compatible; the timings take the cores they are given, so run one at a time. Errors: as
// ModelSpec::Parse, MakeGradientComputer and the computer's, StartServer's and the allreduce's;
// INVALID_ARGUMENT for a profile over kMaxProfileParameters or kMaxProfileActivations.
#ifndef RINGSIDE_WORKER_MEMBER_PROFILE_H_
#define RINGSIDE_WORKER_MEMBER_PROFILE_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "proto/probe.pb.h"

namespace ringside::worker {

// The largest profile a member runs: its parameters and gradient, and a batch's activations
// (rows × the sum of the layers' widths), are allocated.
inline constexpr uint64_t kMaxProfileParameters = uint64_t{1} << 26;
inline constexpr uint64_t kMaxProfileActivations = uint64_t{1} << 26;

// The whole profile for `request` (within server/probe's bounds) on `device` (--device).
absl::StatusOr<proto::MemberProfile> ProfileThisProcess(const proto::ProfileRequest& request,
                                                        const std::string& device);

}  // namespace ringside::worker

#endif  // RINGSIDE_WORKER_MEMBER_PROFILE_H_
