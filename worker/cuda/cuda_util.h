// RAII owners for CUDA resources (device buffers, a stream, a cuBLAS handle) and Status helpers
// for CUDA/cuBLAS return codes. Used only inside the CUDA target.
// Ownership: each owner frees its resource in its destructor (errors there are ignored: a
// destructor cannot report them and the context may already be gone); move-only.
// Thread-compatible.
#ifndef RINGSIDE_WORKER_CUDA_CUDA_UTIL_H_
#define RINGSIDE_WORKER_CUDA_CUDA_UTIL_H_

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace ringside::worker::cuda {

inline absl::Status CudaStatus(cudaError_t error, const char* what) {
  if (error == cudaSuccess) return absl::OkStatus();
  cudaGetLastError();  // clear a non-sticky error so later calls start clean
  return absl::InternalError(absl::StrCat(what, ": ", cudaGetErrorString(error)));
}

inline absl::Status CublasStatus(cublasStatus_t status, const char* what) {
  if (status == CUBLAS_STATUS_SUCCESS) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(what, ": ", cublasGetStatusString(status)));
}

// Device memory for `size()` elements of T; grows on demand, never shrinks.
template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
    return *this;
  }
  ~DeviceBuffer() {
    if (data_ != nullptr) cudaFree(data_);
  }

  // Makes room for at least `size` elements; old contents are not kept when it reallocates.
  absl::Status Reserve(size_t size) {
    if (size <= size_) return absl::OkStatus();
    if (data_ != nullptr) cudaFree(data_);
    data_ = nullptr;
    size_ = 0;
    void* raw = nullptr;
    if (absl::Status s = CudaStatus(cudaMalloc(&raw, size * sizeof(T)), "cudaMalloc"); !s.ok()) {
      return s;
    }
    data_ = static_cast<T*>(raw);
    size_ = size;
    return absl::OkStatus();
  }

  T* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  T* data_ = nullptr;
  size_t size_ = 0;
};

class CudaStream {
 public:
  CudaStream() = default;
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;
  ~CudaStream() {
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }
  absl::Status Create() {
    return CudaStatus(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking),
                      "cudaStreamCreate");
  }
  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

class CublasHandle {
 public:
  CublasHandle() = default;
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;
  ~CublasHandle() {
    if (handle_ != nullptr) cublasDestroy(handle_);
  }
  absl::Status Create(cudaStream_t stream) {
    if (absl::Status s = CublasStatus(cublasCreate(&handle_), "cublasCreate"); !s.ok()) return s;
    return CublasStatus(cublasSetStream(handle_, stream), "cublasSetStream");
  }
  cublasHandle_t get() const { return handle_; }

 private:
  cublasHandle_t handle_ = nullptr;
};

}  // namespace ringside::worker::cuda

#define RINGSIDE_CUDA_RETURN_IF_ERROR(expr) \
  RETURN_IF_ERROR(::ringside::worker::cuda::CudaStatus((expr), #expr))
#define RINGSIDE_CUBLAS_RETURN_IF_ERROR(expr) \
  RETURN_IF_ERROR(::ringside::worker::cuda::CublasStatus((expr), #expr))

#endif  // RINGSIDE_WORKER_CUDA_CUDA_UTIL_H_
