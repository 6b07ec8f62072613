// What a member of a cluster measures of itself for `ringside plan`'s probe (cli/
// cluster_probe_run.h): a sample's compute on the job's model and device, the sync work's CPU
// seconds per byte, a shard's service rate and the cores this process may use. Each timing is
// the median of `repeats`. Thread-compatible; the timings take the cores they are given, so run
// one at a time. Errors: as ModelSpec::Parse, MakeGradientComputer and the computer's.
#ifndef RINGSIDE_WORKER_MEMBER_PROFILE_H_
#define RINGSIDE_WORKER_MEMBER_PROFILE_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace ringside::worker {

// Forward and backward passes of `model` on `device` over `batch_rows` synthetic rows, per row.
absl::StatusOr<double> ComputeSecondsPerSample(const std::string& model,
                                               const std::string& activation,
                                               const std::string& device, int64_t batch_rows,
                                               int repeats);

// A ring hop's CPU work on 4 MiB of float32: decode a received payload, add it in, encode the
// sum; per payload byte.
double SyncCpuSecondsPerByte(int repeats);

// A shard's sum of one worker's share into the step's running sum, bytes per second.
double ShardBytesPerSecond(int repeats);

// The cores this process may run on (its affinity mask).
int UsableCores();

}  // namespace ringside::worker

#endif  // RINGSIDE_WORKER_MEMBER_PROFILE_H_
