// The CUDA GradientComputer: cuBLAS sgemm for the matrix products, Ringside's kernels
// (worker/cuda/kernels.cu) for bias, activations, softmax and cross-entropy. Built only when
// CMake finds CUDA; reach it through MakeGradientComputer (worker/device.h). This header needs
// no CUDA headers.
//
// Per call: parameters and the batch are copied to the device, the gradient back to the host
// (layer by layer, so GradientOptions::on_layer_ready fires as each layer lands). Contract as in
// worker/gradient_computer.h. Ownership: the computer owns its stream, cuBLAS handle and device
// buffers (RAII). Thread-compatible; each call makes its device current on the calling thread.
// Errors: CUDA/cuBLAS failures come back as INTERNAL with the runtime's message.
#ifndef RINGSIDE_WORKER_CUDA_CUDA_GRADIENT_COMPUTER_H_
#define RINGSIDE_WORKER_CUDA_CUDA_GRADIENT_COMPUTER_H_

#include <memory>

#include "absl/status/statusor.h"
#include "common/model_spec.h"
#include "worker/gradient_computer.h"

namespace ringside::worker {

// Devices cudaGetDeviceCount reports (>= 1), or FAILED_PRECONDITION with the runtime's reason
// ("cudaGetDeviceCount: no CUDA-capable device is detected"). Never aborts without a driver or
// a GPU.
absl::StatusOr<int> CudaDevicesPresent();

// A computer on device `device` (0 <= device < CudaDevicesPresent()).
absl::StatusOr<std::unique_ptr<GradientComputer>> MakeCudaGradientComputer(const ModelSpec& model,
                                                                           int device);

}  // namespace ringside::worker

#endif  // RINGSIDE_WORKER_CUDA_CUDA_GRADIENT_COMPUTER_H_
