#include "worker/device.h"

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "worker/cpu_gradient_computer.h"

// The only CUDA switch in the project: the CUDA target exists only when CMake found CUDA.
#if RINGSIDE_HAVE_CUDA
#include "worker/cuda/cuda_gradient_computer.h"

namespace ringside::worker {
namespace {
constexpr bool kBuiltWithCuda = true;
absl::StatusOr<int> QueryCudaDevices() { return CudaDevicesPresent(); }
absl::StatusOr<std::unique_ptr<GradientComputer>> MakeCuda(const ModelSpec& model, int index) {
  return MakeCudaGradientComputer(model, index);
}
}  // namespace
}  // namespace ringside::worker
#else
namespace ringside::worker {
namespace {
constexpr bool kBuiltWithCuda = false;
absl::Status NoCudaBuild() {
  return absl::UnavailableError(
      "this build has no CUDA support (CMake found no CUDA compiler); use --device=cpu");
}
absl::StatusOr<int> QueryCudaDevices() { return NoCudaBuild(); }
absl::StatusOr<std::unique_ptr<GradientComputer>> MakeCuda(const ModelSpec&, int) {
  return NoCudaBuild();
}
}  // namespace
}  // namespace ringside::worker
#endif

namespace ringside::worker {
namespace {
constexpr int kMaxCudaIndex = 1023;
}  // namespace

std::string DeviceSpec::ToString() const {
  switch (kind) {
    case Kind::kAuto:
      return "auto";
    case Kind::kCpu:
      return "cpu";
    case Kind::kCuda:
      return absl::StrCat("cuda:", index);
  }
  return "unknown";
}

absl::StatusOr<DeviceSpec> ParseDevice(absl::string_view text) {
  if (text == "auto") return DeviceSpec{DeviceSpec::Kind::kAuto, 0};
  if (text == "cpu") return DeviceSpec{DeviceSpec::Kind::kCpu, 0};
  if (text == "cuda") return DeviceSpec{DeviceSpec::Kind::kCuda, 0};
  int index = -1;
  if (absl::StartsWith(text, "cuda:") && absl::SimpleAtoi(text.substr(5), &index) && index >= 0 &&
      index <= kMaxCudaIndex) {
    return DeviceSpec{DeviceSpec::Kind::kCuda, index};
  }
  return absl::InvalidArgumentError(
      absl::StrCat("bad device '", text, "' (want auto, cpu, cuda or cuda:<index>)"));
}

bool BuiltWithCuda() { return kBuiltWithCuda; }

absl::StatusOr<int> CudaDeviceCount() { return QueryCudaDevices(); }

absl::StatusOr<std::unique_ptr<GradientComputer>> MakeGradientComputer(absl::string_view device,
                                                                       const ModelSpec& model) {
  ASSIGN_OR_RETURN(const DeviceSpec spec, ParseDevice(device));
  switch (spec.kind) {
    case DeviceSpec::Kind::kCpu:
      return std::make_unique<CpuGradientComputer>(model);
    case DeviceSpec::Kind::kAuto:
      if (CudaDeviceCount().ok()) return MakeCuda(model, 0);
      return std::make_unique<CpuGradientComputer>(model);
    case DeviceSpec::Kind::kCuda: {
      const absl::StatusOr<int> devices = CudaDeviceCount();
      if (!devices.ok()) {
        return Annotate(devices.status(), absl::StrCat("--device=", device, ": no CUDA device"));
      }
      const int count = *devices;
      if (spec.index >= count) {
        return absl::FailedPreconditionError(
            absl::StrCat("--device=", device, ": only ", count, " CUDA device(s) present"));
      }
      return MakeCuda(model, spec.index);
    }
  }
  return absl::InternalError("unhandled device kind");
}

}  // namespace ringside::worker
