// The CUDA gradient path lives in a plug-in, libringside_cuda.so, that device.cc loads with
// dlopen only when a CUDA device is asked for or probed. Why not link it: cuBLAS (cublasLt)
// brings ~92 KiB of thread-local storage, which glibc adds to the static TLS of every thread in
// a process that links it; civetweb (prometheus-cpp's HTTP server) starts its threads with a
// ~100 KiB stack, so with cuBLAS linked those threads cannot be created and no metrics can be
// served. Libraries loaded by dlopen get their TLS allocated lazily instead.
//
// The plug-in exports one C symbol, kCudaBackendSymbol, returning this table. Both sides are
// built from the same sources by the same compiler in one build, so C++ types may cross.
#ifndef RINGSIDE_WORKER_CUDA_BACKEND_H_
#define RINGSIDE_WORKER_CUDA_BACKEND_H_

#include <memory>

#include "absl/status/statusor.h"
#include "common/model_spec.h"
#include "worker/gradient_computer.h"

namespace ringside::worker {

inline constexpr int kCudaBackendVersion = 1;
inline constexpr char kCudaBackendSymbol[] = "ringside_cuda_backend";
inline constexpr char kCudaModuleFile[] = "libringside_cuda.so";

struct CudaBackend {
  int version;  // kCudaBackendVersion of the build that made the plug-in
  // Usable CUDA devices (>= 1), or FAILED_PRECONDITION with the CUDA runtime's message.
  absl::StatusOr<int> (*devices_present)();
  absl::StatusOr<std::unique_ptr<GradientComputer>> (*make_computer)(const ModelSpec& model,
                                                                     int device);
};

}  // namespace ringside::worker

#endif  // RINGSIDE_WORKER_CUDA_BACKEND_H_
