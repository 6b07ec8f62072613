// Hidden-layer activations and their derivatives, shared by the CPU path and the CUDA kernels so
// both compute the same formulas. Header-only; pure functions; thread-safe.
#ifndef RINGSIDE_COMMON_ACTIVATION_H_
#define RINGSIDE_COMMON_ACTIVATION_H_

#include <math.h>

#ifdef __CUDACC__
#define RINGSIDE_HOST_DEVICE __host__ __device__
#else
#define RINGSIDE_HOST_DEVICE
#endif

namespace ringside {

enum class Activation : int {
  kSigmoid,
  kTanh,
  kRelu,
  kLeakyRelu,  // slope kLeakySlope below zero
  kElu,        // alpha = 1
  kSwish,      // x * sigmoid(x)
  kSoftplus,   // log(1 + e^x)
};

inline constexpr float kLeakySlope = 0.01f;

RINGSIDE_HOST_DEVICE inline float Sigmoid(float x) {
  return x >= 0.0f ? 1.0f / (1.0f + expf(-x)) : expf(x) / (1.0f + expf(x));
}

// f(x).
RINGSIDE_HOST_DEVICE inline float Activate(Activation a, float x) {
  switch (a) {
    case Activation::kSigmoid:
      return Sigmoid(x);
    case Activation::kTanh:
      return tanhf(x);
    case Activation::kRelu:
      return x > 0.0f ? x : 0.0f;
    case Activation::kLeakyRelu:
      return x > 0.0f ? x : kLeakySlope * x;
    case Activation::kElu:
      return x > 0.0f ? x : expm1f(x);
    case Activation::kSwish:
      return x * Sigmoid(x);
    case Activation::kSoftplus:  // stable for large |x|
      return x > 0.0f ? x + log1pf(expf(-x)) : log1pf(expf(x));
  }
  return x;
}

// f'(x), given x and y = f(x) (several derivatives are cheaper from y).
RINGSIDE_HOST_DEVICE inline float ActivateDerivative(Activation a, float x, float y) {
  switch (a) {
    case Activation::kSigmoid:
      return y * (1.0f - y);
    case Activation::kTanh:
      return 1.0f - y * y;
    case Activation::kRelu:
      return x > 0.0f ? 1.0f : 0.0f;
    case Activation::kLeakyRelu:
      return x > 0.0f ? 1.0f : kLeakySlope;
    case Activation::kElu:
      return x > 0.0f ? 1.0f : y + 1.0f;
    case Activation::kSwish: {
      const float s = Sigmoid(x);
      return s + y * (1.0f - s);
    }
    case Activation::kSoftplus:
      return Sigmoid(x);
  }
  return 1.0f;
}

}  // namespace ringside

#endif  // RINGSIDE_COMMON_ACTIVATION_H_
