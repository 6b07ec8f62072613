#include "worker/member_profile.h"

#include <sched.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/file_util.h"
#include "common/grpc_util.h"
#include "common/median.h"
#include "common/model_spec.h"
#include "common/status_macros.h"
#include "common/transport_security.h"
#include "common/usable_cores.h"
#include "ring/ring_member.h"
#include "worker/batching.h"
#include "worker/dataset.h"
#include "worker/device.h"

namespace ringside::worker {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The median of `values`, at least a nanosecond: a figure of 0 or infinity is not a measurement.
double MedianSeconds(const std::vector<double>& values) { return std::max(Median(values), 1e-9); }

// Forward and backward passes over `batch_rows` synthetic rows, per row.
absl::StatusOr<double> ComputeSecondsPerSample(const ModelSpec& spec, GradientComputer& computer,
                                               int64_t batch_rows, int repeats) {
  const DataSpec data_spec{DataSpec::Kind::kSynthetic, batch_rows};
  ASSIGN_OR_RETURN(const Dataset data, LoadDataset(data_spec, spec, 1));
  std::vector<int64_t> rows(batch_rows);
  for (int64_t i = 0; i < batch_rows; ++i) rows[i] = i % data.rows();
  OwnedBatch batch;
  GatherRows(data, rows, batch);
  const std::vector<float> params = InitialParameters(spec, 1);
  std::vector<float> gradient(spec.parameter_count());
  RETURN_IF_ERROR(computer.ComputeGradient(params, batch.view(), absl::MakeSpan(gradient))
                      .status());  // warm-up: allocations, BLAS threads
  std::vector<double> seconds;
  for (int i = 0; i < repeats; ++i) {
    const Clock::time_point start = Clock::now();
    RETURN_IF_ERROR(
        computer.ComputeGradient(params, batch.view(), absl::MakeSpan(gradient)).status());
    seconds.push_back(SecondsSince(start));
  }
  return MedianSeconds(seconds) / static_cast<double>(batch_rows);
}

// Every thread's CPU time of this process so far.
double ProcessCpuSeconds() {
  timespec now{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

// Two ring members of this process, each behind its own gRPC server on 127.0.0.1, as two
// workers of a host would be; plaintext.
class LoopbackRing {
 public:
  static constexpr int kWorld = 2;

  absl::Status Start() {
    const TransportSecurity plaintext = TransportSecurity::Plaintext();
    std::vector<std::string> addresses;
    for (int rank = 0; rank < kWorld; ++rank) {
      members_[rank] = std::make_unique<ring::RingMember>(ring::RingTopology{1, kWorld, rank},
                                                          /*metrics=*/nullptr, plaintext);
      ASSIGN_OR_RETURN(servers_[rank],
                       StartServer("127.0.0.1:0", {members_[rank]->service()}, plaintext));
      addresses.push_back(absl::StrCat("127.0.0.1:", servers_[rank].port));
    }
    for (auto& member : members_) RETURN_IF_ERROR(member->Connect(addresses));
    return absl::OkStatus();
  }

  // Both ranks' allreduce of `buffers`, rank 1's on a thread of its own.
  absl::Status Allreduce(uint64_t collective, std::vector<float> (&buffers)[kWorld]) {
    absl::Status other;
    std::thread right(
        [&] { other = members_[1]->Allreduce(collective, absl::MakeSpan(buffers[1]), {}); });
    const absl::Status own = members_[0]->Allreduce(collective, absl::MakeSpan(buffers[0]), {});
    right.join();
    RETURN_IF_ERROR(own);
    return other;
  }

  // The servers stop (cancelling the members' streams) before the services they call go.
  ~LoopbackRing() {
    for (StartedServer& server : servers_) server.Shutdown(absl::ZeroDuration());
  }

 private:
  std::unique_ptr<ring::RingMember> members_[kWorld];
  StartedServer servers_[kWorld];
};

// The sync's CPU per payload byte at one end of a link: a ring allreduce of 4 MiB of float32
// between two members of this process over gRPC on loopback, timed by the process's CPU clock,
// so it holds both ends of every byte: the hop's decode, sum and encode, gRPC's framing and the
// kernel's TCP. (Without TLS; a worker's training, if it runs, counts too.)
absl::StatusOr<double> SyncCpuSecondsPerByte(int repeats) {
  constexpr size_t kElements = size_t{1} << 20;
  LoopbackRing ring;
  RETURN_IF_ERROR(ring.Start());
  std::vector<float> buffers[LoopbackRing::kWorld];
  for (std::vector<float>& buffer : buffers) buffer.assign(kElements, 1.0f);
  RETURN_IF_ERROR(ring.Allreduce(1, buffers));  // warm-up: connections, buffers, threads
  std::vector<double> seconds;
  for (int i = 0; i < repeats; ++i) {
    const double start = ProcessCpuSeconds();
    RETURN_IF_ERROR(ring.Allreduce(i + 2, buffers));
    seconds.push_back(ProcessCpuSeconds() - start);
  }
  // At N = 2 each rank sends 2(N−1)/N·K = K elements and receives as many.
  constexpr double kEnds = LoopbackRing::kWorld * 2.0 * kElements * sizeof(float);
  return MedianSeconds(seconds) / kEnds;
}

// A shard's sum of one worker's share into the step's running sum, bytes per second.
double ShardBytesPerSecond(int repeats) {
  constexpr size_t kElements = size_t{1} << 20;
  std::vector<float> sum(kElements, 0.0f);
  const std::vector<float> share(kElements, 1.0f);
  std::vector<double> seconds;
  for (int i = 0; i < repeats; ++i) {
    const Clock::time_point start = Clock::now();
    for (size_t e = 0; e < kElements; ++e) sum[e] += share[e];
    seconds.push_back(SecondsSince(start));
  }
  const double median = MedianSeconds(seconds);
  return kElements * sizeof(float) / median;
}

// A profile allocates the parameters, the gradient and a batch's activations: bounded before
// any of them is.
absl::Status CheckProfileSize(const ModelSpec& spec, int64_t batch_rows) {
  uint64_t widths = 0;
  for (const int width : spec.layers()) widths += static_cast<uint64_t>(width);
  if (spec.parameter_count() > kMaxProfileParameters ||
      widths * static_cast<uint64_t>(batch_rows) > kMaxProfileActivations) {
    return absl::InvalidArgumentError(absl::StrCat(
        "profile of ", spec.ToString(), " with ", batch_rows, " rows: over ", kMaxProfileParameters,
        " parameters or ", kMaxProfileActivations, " activations"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<proto::MemberProfile> ProfileThisProcess(const proto::ProfileRequest& request,
                                                        const std::string& device) {
  ASSIGN_OR_RETURN(const ModelSpec spec, ModelSpec::Parse(request.model(), request.activation()));
  RETURN_IF_ERROR(CheckProfileSize(spec, request.batch_rows()));
  ASSIGN_OR_RETURN(const std::unique_ptr<GradientComputer> computer,
                   MakeGradientComputer(device, spec));
  proto::MemberProfile profile;
  profile.set_device(computer->device());
  ASSIGN_OR_RETURN(
      const double compute,
      ComputeSecondsPerSample(spec, *computer, request.batch_rows(), request.repeats()));
  profile.set_compute_seconds_per_sample(compute);
  ASSIGN_OR_RETURN(const double sync_cpu, SyncCpuSecondsPerByte(request.repeats()));
  profile.set_sync_cpu_seconds_per_byte(sync_cpu);
  profile.set_shard_bytes_per_second(ShardBytesPerSecond(request.repeats()));
  profile.set_usable_cores(UsableCores());
  return profile;
}

}  // namespace ringside::worker
