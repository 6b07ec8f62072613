#include "worker/member_profile.h"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "common/model_spec.h"
#include "common/status_macros.h"
#include "worker/batching.h"
#include "worker/dataset.h"
#include "worker/device.h"

namespace ringside::worker {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

}  // namespace

absl::StatusOr<double> ComputeSecondsPerSample(const std::string& model,
                                               const std::string& activation,
                                               const std::string& device, int64_t batch_rows,
                                               int repeats) {
  ASSIGN_OR_RETURN(const ModelSpec spec, ModelSpec::Parse(model, activation));
  ASSIGN_OR_RETURN(std::unique_ptr<GradientComputer> computer, MakeGradientComputer(device, spec));
  const DataSpec data_spec{DataSpec::Kind::kSynthetic, batch_rows};
  ASSIGN_OR_RETURN(const Dataset data, LoadDataset(data_spec, spec, 1));
  std::vector<int64_t> rows(batch_rows);
  for (int64_t i = 0; i < batch_rows; ++i) rows[i] = i % data.rows();
  OwnedBatch batch;
  GatherRows(data, rows, batch);
  const std::vector<float> params = InitialParameters(spec, 1);
  std::vector<float> gradient(spec.parameter_count());
  RETURN_IF_ERROR(computer->ComputeGradient(params, batch.view(), absl::MakeSpan(gradient))
                      .status());  // warm-up: allocations, BLAS threads
  std::vector<double> seconds;
  for (int i = 0; i < repeats; ++i) {
    const Clock::time_point start = Clock::now();
    RETURN_IF_ERROR(
        computer->ComputeGradient(params, batch.view(), absl::MakeSpan(gradient)).status());
    seconds.push_back(SecondsSince(start));
  }
  return Median(seconds) / static_cast<double>(batch_rows);
}

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

}  // namespace ringside::worker
