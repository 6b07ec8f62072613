#include "cli/cluster_probe_run.h"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/auth.h"
#include "common/grpc_util.h"
#include "common/model_spec.h"
#include "common/status_macros.h"
#include "common/wire_dtype.h"
#include "server/probe/link_probe.h"
#include "worker/batching.h"
#include "worker/dataset.h"
#include "worker/device.h"

namespace ringside::cli {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

absl::StatusOr<double> ComputeSecondsPerSample(const ProbeOptions& options) {
  ASSIGN_OR_RETURN(const ModelSpec spec, ModelSpec::Parse(options.model, options.activation));
  ASSIGN_OR_RETURN(std::unique_ptr<worker::GradientComputer> computer,
                   worker::MakeGradientComputer(options.device, spec));
  const worker::DataSpec data_spec{worker::DataSpec::Kind::kSynthetic, options.batch_rows};
  ASSIGN_OR_RETURN(const worker::Dataset data, worker::LoadDataset(data_spec, spec, 1));
  std::vector<int64_t> rows(options.batch_rows);
  for (int64_t i = 0; i < options.batch_rows; ++i) rows[i] = i % data.rows();
  worker::OwnedBatch batch;
  worker::GatherRows(data, rows, batch);
  const std::vector<float> params = InitialParameters(spec, 1);
  std::vector<float> gradient(spec.parameter_count());
  RETURN_IF_ERROR(computer->ComputeGradient(params, batch.view(), absl::MakeSpan(gradient))
                      .status());  // warm-up: allocations, BLAS threads
  std::vector<double> seconds;
  for (int i = 0; i < options.links.repeats; ++i) {
    const Clock::time_point start = Clock::now();
    RETURN_IF_ERROR(
        computer->ComputeGradient(params, batch.view(), absl::MakeSpan(gradient)).status());
    seconds.push_back(SecondsSince(start));
  }
  return Median(seconds) / static_cast<double>(options.batch_rows);
}

// A ring hop's CPU work on 4 MiB of float32: decode a received payload, add it in, encode the
// sum; per payload byte, the median of a few.
double SyncCpuSecondsPerByte(int repeats) {
  constexpr size_t kElements = size_t{1} << 20;
  std::vector<float> sum(kElements, 1.0f);
  std::vector<float> received(kElements, 2.0f);
  std::string wire(kElements * sizeof(float), '\0');
  std::vector<double> seconds;
  for (int i = 0; i < repeats; ++i) {
    const Clock::time_point start = Clock::now();
    std::memcpy(received.data(), wire.data(), wire.size());
    for (size_t e = 0; e < kElements; ++e) sum[e] += received[e];
    std::memcpy(wire.data(), sum.data(), wire.size());
    seconds.push_back(SecondsSince(start));
  }
  return Median(seconds) / static_cast<double>(wire.size());
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
  const double median = std::max(Median(seconds), 1e-9);
  return kElements * sizeof(float) / median;
}

int UsableCores() {
  cpu_set_t cpus;
  if (sched_getaffinity(0, sizeof(cpus), &cpus) == 0) return CPU_COUNT(&cpus);
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

// Every member's link, in the members' order.
absl::StatusOr<std::vector<LinkProbe>> ProbeLinks(const ProbeOptions& options) {
  std::vector<absl::StatusOr<LinkProbe>> probed(options.members.size(),
                                                absl::UnknownError("not probed"));
  if (options.concurrent_links) {
    std::vector<std::thread> threads;
    for (size_t i = 0; i < options.members.size(); ++i) {
      threads.emplace_back(
          [&, i] { probed[i] = probe::ProbeLink(options.members[i], options.links); });
    }
    for (std::thread& thread : threads) thread.join();
  } else {
    for (size_t i = 0; i < options.members.size(); ++i) {
      probed[i] = probe::ProbeLink(options.members[i], options.links);
    }
  }
  std::vector<LinkProbe> links;
  for (absl::StatusOr<LinkProbe>& link : probed) {
    if (!link.ok()) return link.status();
    links.push_back(*std::move(link));
  }
  return links;
}

absl::Status CheckProbeOptions(const ProbeOptions& options) {
  if (options.members.empty()) return absl::InvalidArgumentError("the probe needs a member");
  if (options.links.repeats < 1) return absl::InvalidArgumentError("probe repeats must be >= 1");
  if (options.batch_rows < 1 || options.processes_per_host < 1) {
    return absl::InvalidArgumentError("probe batch rows and processes per host must be >= 1");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ClusterProbe> RunClusterProbe(const ProbeOptions& options) {
  RETURN_IF_ERROR(CheckProbeOptions(options));
  ClusterProbe probe;
  probe.model = options.model;
  probe.activation = options.activation;
  probe.device = options.device;
  ASSIGN_OR_RETURN(probe.links, ProbeLinks(options));
  const auto slowest = std::min_element(probe.links.begin(), probe.links.end(),
                                        [](const LinkProbe& a, const LinkProbe& b) {
                                          return a.bytes_per_second < b.bytes_per_second;
                                        });
  ClusterCosts& costs = probe.costs;
  costs.link_bytes_per_second = slowest->bytes_per_second;
  costs.link_latency_seconds = slowest->latency_seconds;
  ASSIGN_OR_RETURN(costs.compute_seconds_per_sample, ComputeSecondsPerSample(options));
  costs.sync_cpu_seconds_per_byte = SyncCpuSecondsPerByte(options.links.repeats);
  costs.cores_per_process = static_cast<double>(UsableCores()) / options.processes_per_host;
  costs.shard_bytes_per_second = ShardBytesPerSecond(options.links.repeats);
  return probe;
}

absl::StatusOr<ClusterProbe> RunLoopbackProbe(ProbeOptions options, int members) {
  if (options.links.token.empty()) {
    ASSIGN_OR_RETURN(options.links.token, RandomSecret());
  }
  probe::LinkProbeService service(options.links.token);
  std::vector<StartedServer> servers;
  options.members.clear();
  for (int i = 0; i < members; ++i) {
    ASSIGN_OR_RETURN(StartedServer server,
                     StartServer("127.0.0.1:0", {&service}, options.links.security));
    options.members.push_back(absl::StrCat("127.0.0.1:", server.port));
    servers.push_back(std::move(server));
  }
  return RunClusterProbe(options);
}

}  // namespace ringside::cli
