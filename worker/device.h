// Choosing where gradients are computed: `--device=auto|cpu|cuda[:i]`.
//   cpu      the BLAS path.
//   cuda[:i] CUDA device i (default 0): FAILED_PRECONDITION when there is no such device at run
//            time, UNAVAILABLE when this build has no CUDA support.
//   auto     CUDA device 0 when cudaGetDeviceCount reports one at run time, else CPU.
// This file's .cc holds the project's only `#if RINGSIDE_HAVE_CUDA` and loads the CUDA plug-in
// (worker/cuda_backend.h).
//
// Functions are thread-safe; computers they return are thread-compatible (one per thread).
// Errors: INVALID_ARGUMENT for a malformed device string; see above for CUDA problems.
#ifndef RINGSIDE_WORKER_DEVICE_H_
#define RINGSIDE_WORKER_DEVICE_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/model_spec.h"
#include "worker/gradient_computer.h"

namespace ringside::worker {

struct DeviceSpec {
  enum class Kind { kAuto, kCpu, kCuda };
  Kind kind = Kind::kAuto;
  int index = 0;  // kCuda only
  std::string ToString() const;
};

// "auto" | "cpu" | "cuda" | "cuda:<i>" with 0 <= i < 1024; else INVALID_ARGUMENT.
absl::StatusOr<DeviceSpec> ParseDevice(absl::string_view text);

// Whether this binary was built with the CUDA path.
bool BuiltWithCuda();

// Number of usable CUDA devices (>= 1), or why there is none: UNAVAILABLE for a build without
// CUDA, FAILED_PRECONDITION with the CUDA runtime's message (no driver, no device, ...).
absl::StatusOr<int> CudaDeviceCount();

// A computer for `model` on `device` (a string as above).
absl::StatusOr<std::unique_ptr<GradientComputer>> MakeGradientComputer(absl::string_view device,
                                                                       const ModelSpec& model);

}  // namespace ringside::worker

#endif  // RINGSIDE_WORKER_DEVICE_H_
