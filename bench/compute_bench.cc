#include "bench/compute_bench.h"

#include <chrono>
#include <cstdio>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/model_spec.h"
#include "common/status_macros.h"
#include "worker/batching.h"
#include "worker/dataset.h"
#include "worker/device.h"

namespace ringside::bench {
namespace {

using worker::GradientComputer;

// Times ComputeGradient on one fixed batch until min_seconds have passed (at least one step).
absl::Status Measure(const ComputeBenchOptions& options, const ModelSpec& spec,
                     const worker::Dataset& data, GradientComputer& computer,
                     ComputeBenchRecord& record) {
  const std::vector<float> params = InitialParameters(spec, options.seed);
  std::vector<float> gradient(spec.parameter_count());
  std::vector<int64_t> rows(options.batch_size);
  for (int64_t i = 0; i < options.batch_size; ++i) rows[i] = i % data.rows();
  worker::OwnedBatch batch;
  worker::GatherRows(data, rows, batch);
  for (int64_t i = 0; i < options.warmup_steps; ++i) {
    RETURN_IF_ERROR(
        computer.ComputeGradient(params, batch.view(), absl::MakeSpan(gradient)).status());
  }
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  double elapsed = 0.0;
  do {  // at least one timed step
    ASSIGN_OR_RETURN(const worker::GradientStats stats,
                     computer.ComputeGradient(params, batch.view(), absl::MakeSpan(gradient)));
    record.final_loss = stats.mean_loss;
    ++record.steps;
    elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  } while (record.steps < options.max_steps && elapsed < options.min_seconds);
  record.seconds = elapsed;
  record.samples_per_second =
      elapsed > 0.0 ? static_cast<double>(record.steps * options.batch_size) / elapsed : 0.0;
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateComputeBenchOptions(const ComputeBenchOptions& options) {
  if (options.models.empty() || options.devices.empty()) {
    return absl::InvalidArgumentError("compute bench needs at least one model and one device");
  }
  for (const std::string& model : options.models) {
    RETURN_IF_ERROR(ModelSpec::Parse(model, options.activation).status());
  }
  for (const std::string& device : options.devices) {
    RETURN_IF_ERROR(worker::ParseDevice(device).status());
  }
  if (options.batch_size < 1 || options.batch_size > worker::kMaxBatchRows) {
    return absl::InvalidArgumentError(
        absl::StrCat("--batch_size must be in [1, ", worker::kMaxBatchRows, "]"));
  }
  if (!(options.min_seconds >= 0.0) || options.warmup_steps < 0 || options.max_steps < 1) {
    return absl::InvalidArgumentError(
        "need min_seconds >= 0, warmup_steps >= 0 and max_steps >= 1");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<ComputeBenchRecord>> MeasureCompute(const ComputeBenchOptions& options) {
  RETURN_IF_ERROR(ValidateComputeBenchOptions(options));
  std::vector<ComputeBenchRecord> records;
  for (const std::string& model : options.models) {
    ASSIGN_OR_RETURN(const ModelSpec spec, ModelSpec::Parse(model, options.activation));
    const worker::DataSpec data_spec{worker::DataSpec::Kind::kSynthetic, options.batch_size};
    ASSIGN_OR_RETURN(const worker::Dataset data,
                     worker::LoadDataset(data_spec, spec, options.seed));
    for (const std::string& device : options.devices) {
      ComputeBenchRecord record;
      record.model = model;
      record.device = device;
      record.parameters = spec.parameter_count();
      record.batch_size = options.batch_size;
      absl::StatusOr<std::unique_ptr<GradientComputer>> computer =
          worker::MakeGradientComputer(device, spec);
      if (!computer.ok()) {
        record.skipped = std::string(computer.status().message());
        records.push_back(record);
        continue;
      }
      record.device = (*computer)->device();
      RETURN_IF_ERROR(Annotate(Measure(options, spec, data, **computer, record),
                               absl::StrCat(model, " on ", record.device)));
      records.push_back(record);
    }
  }
  return records;
}

absl::Status RunComputeBench(const ComputeBenchOptions& options, std::ostream& out) {
  ASSIGN_OR_RETURN(const std::vector<ComputeBenchRecord> records, MeasureCompute(options));
  out << absl::StrFormat("%-20s %10s %-7s %6s %8s %9s %14s\n", "model", "parameters", "device",
                         "batch", "steps", "seconds", "samples/s");
  for (const ComputeBenchRecord& r : records) {
    if (!r.skipped.empty()) {
      out << absl::StrFormat("%-20s %10d %-7s skipped: %s\n", r.model, r.parameters, r.device,
                             r.skipped);
      continue;
    }
    out << absl::StrFormat("%-20s %10d %-7s %6d %8d %9.3f %14.0f\n", r.model, r.parameters,
                           r.device, r.batch_size, r.steps, r.seconds, r.samples_per_second);
  }
  return absl::OkStatus();
}

}  // namespace ringside::bench
