// Launchers for Ringside's CUDA kernels (worker/cuda/kernels.cu). All pointers are device
// memory, matrices row-major; every launch is asynchronous on `stream` and returns the launch
// error (cudaSuccess when queued). Thread-safe (no state).
#ifndef RINGSIDE_WORKER_CUDA_KERNELS_H_
#define RINGSIDE_WORKER_CUDA_KERNELS_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "common/activation.h"

namespace ringside::worker::cuda {

// z[r][c] = bias[c] for r < rows, c < cols.
cudaError_t BroadcastBias(const float* bias, int rows, int cols, float* z, cudaStream_t stream);

// a[i] = f(z[i]).
cudaError_t ActivateForward(Activation act, const float* z, float* a, int64_t n,
                            cudaStream_t stream);

// delta[i] *= f'(z[i]) (given a[i] = f(z[i])).
cudaError_t ActivateBackward(Activation act, const float* z, const float* a, float* delta,
                             int64_t n, cudaStream_t stream);

// Per row r of `logits` (rows x classes): row_loss[r] = -log softmax(logits[r])[labels[r]],
// predictions[r] = argmax (first on ties); if delta is not null,
// delta[r] = (softmax(logits[r]) - onehot(labels[r])) * scale.
cudaError_t SoftmaxCrossEntropy(const float* logits, const int32_t* labels, int rows, int classes,
                                float scale, float* delta, float* row_loss, int32_t* predictions,
                                cudaStream_t stream);

// db[c] = sum over rows of delta[r][c] (rows summed in order: deterministic).
cudaError_t BiasGradient(const float* delta, int rows, int cols, float* db, cudaStream_t stream);

}  // namespace ringside::worker::cuda

#endif  // RINGSIDE_WORKER_CUDA_KERNELS_H_
