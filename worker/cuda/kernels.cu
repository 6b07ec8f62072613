// Element-wise and row-wise kernels of the CUDA gradient path; the matrix products are cuBLAS.
#include "worker/cuda/kernels.h"

namespace ringside::worker::cuda {
namespace {

constexpr int kThreads = 256;

int Blocks(int64_t n) { return static_cast<int>((n + kThreads - 1) / kThreads); }

__global__ void BroadcastBiasKernel(const float* bias, int64_t n, int cols, float* z) {
  const int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (i < n) z[i] = bias[i % cols];
}

__global__ void ActivateForwardKernel(Activation act, const float* z, float* a, int64_t n) {
  const int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (i < n) a[i] = Activate(act, z[i]);
}

__global__ void ActivateBackwardKernel(Activation act, const float* z, const float* a, float* delta,
                                       int64_t n) {
  const int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (i < n) delta[i] *= ActivateDerivative(act, z[i], a[i]);
}

// One thread per row: the class counts here are small (tens), a row fits in registers/L1.
__global__ void SoftmaxCrossEntropyKernel(const float* logits, const int32_t* labels, int rows,
                                          int classes, float scale, float* delta, float* row_loss,
                                          int32_t* predictions) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const float* z = logits + static_cast<int64_t>(r) * classes;
  int argmax = 0;
  for (int c = 1; c < classes; ++c) {
    if (z[c] > z[argmax]) argmax = c;
  }
  const float max = z[argmax];
  float sum = 0.0f;
  for (int c = 0; c < classes; ++c) sum += expf(z[c] - max);
  const int label = labels[r];
  row_loss[r] = logf(sum) - (z[label] - max);
  predictions[r] = argmax;
  if (delta == nullptr) return;
  float* d = delta + static_cast<int64_t>(r) * classes;
  for (int c = 0; c < classes; ++c) {
    const float p = expf(z[c] - max) / sum;
    d[c] = (p - (c == label ? 1.0f : 0.0f)) * scale;
  }
}

__global__ void BiasGradientKernel(const float* delta, int rows, int cols, float* db) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= cols) return;
  float sum = 0.0f;
  for (int r = 0; r < rows; ++r) sum += delta[static_cast<int64_t>(r) * cols + c];
  db[c] = sum;
}

}  // namespace

cudaError_t BroadcastBias(const float* bias, int rows, int cols, float* z, cudaStream_t stream) {
  const int64_t n = static_cast<int64_t>(rows) * cols;
  if (n == 0) return cudaSuccess;
  BroadcastBiasKernel<<<Blocks(n), kThreads, 0, stream>>>(bias, n, cols, z);
  return cudaGetLastError();
}

cudaError_t ActivateForward(Activation act, const float* z, float* a, int64_t n,
                            cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  ActivateForwardKernel<<<Blocks(n), kThreads, 0, stream>>>(act, z, a, n);
  return cudaGetLastError();
}

cudaError_t ActivateBackward(Activation act, const float* z, const float* a, float* delta,
                             int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  ActivateBackwardKernel<<<Blocks(n), kThreads, 0, stream>>>(act, z, a, delta, n);
  return cudaGetLastError();
}

cudaError_t SoftmaxCrossEntropy(const float* logits, const int32_t* labels, int rows, int classes,
                                float scale, float* delta, float* row_loss, int32_t* predictions,
                                cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  SoftmaxCrossEntropyKernel<<<Blocks(rows), kThreads, 0, stream>>>(
      logits, labels, rows, classes, scale, delta, row_loss, predictions);
  return cudaGetLastError();
}

cudaError_t BiasGradient(const float* delta, int rows, int cols, float* db, cudaStream_t stream) {
  if (cols == 0) return cudaSuccess;
  BiasGradientKernel<<<Blocks(cols), kThreads, 0, stream>>>(delta, rows, cols, db);
  return cudaGetLastError();
}

}  // namespace ringside::worker::cuda
