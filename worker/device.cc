#include "worker/device.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "worker/cpu_gradient_computer.h"
#include "worker/cuda_backend.h"

// The only CUDA switch in the project: the plug-in exists only when CMake found CUDA.
#if RINGSIDE_HAVE_CUDA
namespace ringside::worker {
namespace {
constexpr bool kBuiltWithCuda = true;

// Candidate paths of the plug-in: $RINGSIDE_CUDA_MODULE, next to the executable, then where
// this build put it.
std::vector<std::string> CudaModuleCandidates() {
  std::vector<std::string> paths;
  if (const char* env = std::getenv("RINGSIDE_CUDA_MODULE"); env != nullptr && *env != '\0') {
    paths.push_back(env);
  }
  char exe[4096];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n > 0) {
    std::string dir(exe, static_cast<size_t>(n));
    dir = dir.substr(0, dir.rfind('/'));
    paths.push_back(absl::StrCat(dir, "/", kCudaModuleFile));
  }
  paths.push_back(RINGSIDE_CUDA_MODULE_PATH);
  return paths;
}

// Loaded once per process and never unloaded (computers it made may outlive any caller).
absl::StatusOr<const CudaBackend*> LoadCudaBackend() {
  static const absl::StatusOr<const CudaBackend*>* const loaded = [] {
    std::string errors;
    for (const std::string& path : CudaModuleCandidates()) {
      void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (handle == nullptr) {
        absl::StrAppend(&errors, errors.empty() ? "" : "; ", dlerror());
        continue;
      }
      using Entry = const CudaBackend* (*)();
      auto entry = reinterpret_cast<Entry>(dlsym(handle, kCudaBackendSymbol));
      const CudaBackend* backend = entry == nullptr ? nullptr : entry();
      if (backend == nullptr || backend->version != kCudaBackendVersion) {
        return new absl::StatusOr<const CudaBackend*>(absl::FailedPreconditionError(
            absl::StrCat(path, " is not this build's CUDA plug-in; rebuild")));
      }
      return new absl::StatusOr<const CudaBackend*>(backend);
    }
    return new absl::StatusOr<const CudaBackend*>(absl::UnavailableError(
        absl::StrCat("cannot load the CUDA plug-in ", kCudaModuleFile, " (", errors,
                     "); set RINGSIDE_CUDA_MODULE to its path or use --device=cpu")));
  }();
  return *loaded;
}

// Whether NVIDIA's driver library can be loaded. Without it no device can be present, and
// asking first keeps a machine without a GPU from loading the plug-in, whose cuBLAS stays
// mapped for the life of the process (measured on the heavy compare job with CUDA 13: a CPU
// worker's peak resident memory fell from about 290 MB to 145 MB without it).
bool NvidiaDriverPresent() {
  void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (driver == nullptr) return false;
  dlclose(driver);
  return true;
}

absl::StatusOr<int> QueryCudaDevices() {
  static const bool driver_present = NvidiaDriverPresent();
  if (!driver_present) {
    return absl::FailedPreconditionError(
        "no NVIDIA driver on this machine (libcuda.so.1 cannot be loaded); use --device=cpu");
  }
  ASSIGN_OR_RETURN(const CudaBackend* backend, LoadCudaBackend());
  return backend->devices_present();
}
absl::StatusOr<std::unique_ptr<GradientComputer>> MakeCuda(const ModelSpec& model, int index) {
  ASSIGN_OR_RETURN(const CudaBackend* backend, LoadCudaBackend());
  return backend->make_computer(model, index);
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
