// The entry point of libringside_cuda.so (see worker/cuda_backend.h).
#include "worker/cuda/cuda_gradient_computer.h"
#include "worker/cuda_backend.h"

extern "C" __attribute__((visibility("default"))) const ringside::worker::CudaBackend*
ringside_cuda_backend() {
  static const ringside::worker::CudaBackend backend = {
      ringside::worker::kCudaBackendVersion,
      &ringside::worker::CudaDevicesPresent,
      &ringside::worker::MakeCudaGradientComputer,
  };
  return &backend;
}
