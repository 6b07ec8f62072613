#include "ring/powersgd_sum.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/counter_rng.h"
#include "common/status_macros.h"
#include "common/wire_dtype.h"

namespace ringside::ring {
namespace {

// a·b over n floats in eight lanes, so the compiler may keep them in one vector register; the
// same order on every rank for the same inputs.
float Dot(const float* a, const float* b, size_t n) {
  float lanes[8] = {};
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int l = 0; l < 8; ++l) lanes[l] += a[i + l] * b[i + l];
  }
  float sum = 0;
  for (; i < n; ++i) sum += a[i] * b[i];
  for (const float lane : lanes) sum += lane;
  return sum;
}

// y += alpha·x over n floats.
void Axpy(float alpha, const float* x, float* y, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] += alpha * x[i];
}

// The columns of P (`rank` columns of `rows`, one after the other) made orthonormal, in place,
// by modified Gram-Schmidt in double; a column with nothing left of its own becomes zero.
void Orthonormalise(float* p, int rank, size_t rows) {
  for (int k = 0; k < rank; ++k) {
    float* column = p + k * rows;
    for (int l = 0; l < k; ++l) {
      const float* before = p + l * rows;
      double projection = 0;
      for (size_t i = 0; i < rows; ++i) projection += double{column[i]} * before[i];
      Axpy(static_cast<float>(-projection), before, column, rows);
    }
    double squares = 0;
    for (size_t i = 0; i < rows; ++i) squares += double{column[i]} * column[i];
    const double norm = std::sqrt(squares);
    const float scale = norm > 1e-30 && std::isfinite(norm) ? static_cast<float>(1.0 / norm) : 0;
    for (size_t i = 0; i < rows; ++i) column[i] *= scale;
  }
}

absl::Status CheckFinite(absl::Span<const float> sum, const char* what, int64_t step) {
  const size_t non_finite = CountNonFinite(sum);
  if (non_finite == 0) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("powersgd step ", step, ": the summed ", what,
                                                 " has ", non_finite, " values not finite"));
}

}  // namespace

PowerSgdLayout PlanPowerSgd(const ModelSpec& spec, int rank) {
  PowerSgdLayout layout;
  const uint64_t r = static_cast<uint64_t>(rank);
  for (int l = 0; l < spec.num_weight_layers(); ++l) {
    const ElementRange weights = spec.weight_range(l);
    const uint64_t rows = spec.layers()[l], cols = spec.layers()[l + 1];
    if (r * (rows + cols) < rows * cols) {
      layout.matrices.push_back({weights.begin, static_cast<int>(rows), static_cast<int>(cols),
                                 layout.first_elements, layout.second_elements});
      layout.first_elements += r * rows;
      layout.second_elements += r * cols;
    } else {
      layout.whole.push_back(weights);
    }
    layout.whole.push_back(spec.bias_range(l));
  }
  layout.whole_at = layout.first_elements;
  for (const ElementRange& range : layout.whole) layout.first_elements += range.size();
  return layout;
}

PowerSgdRingSum::PowerSgdRingSum(int rank, int64_t warmup_steps, uint64_t seed,
                                 const ModelSpec& spec)
    : rank_(rank),
      warmup_steps_(warmup_steps),
      seed_(seed),
      layout_(PlanPowerSgd(spec, rank)),
      residual_(spec.parameter_count(), 0.0f),
      q_(layout_.second_elements),
      first_(layout_.first_elements),
      second_(layout_.second_elements) {
  for (size_t m = 0; m < layout_.matrices.size(); ++m) {
    for (int k = 0; k < rank_; ++k) DrawQ(m, k, /*draw=*/0);
  }
}

void PowerSgdRingSum::DrawQ(size_t matrix, int column, uint64_t draw) {
  const PowerSgdMatrix& at = layout_.matrices[matrix];
  const uint64_t key = Mix64(Mix64(seed_) ^ (uint64_t{matrix} << 32) ^ draw);
  float* q = q_.data() + at.q_at + static_cast<uint64_t>(column) * at.cols;
  for (int j = 0; j < at.cols; ++j) {
    q[j] = static_cast<float>(CounterNormal(key, RngStream::kPowerSgdFactors,
                                            static_cast<uint64_t>(column) * at.cols + j));
  }
}

absl::Status PowerSgdRingSum::Sum(int64_t step, absl::Span<float> gradient,
                                  StepAllreduce allreduce) {
  if (step < warmup_steps_) return allreduce(0, gradient);
  if (gradient.size() != residual_.size()) {
    return absl::InternalError(absl::StrCat("a powersgd ring step of ", gradient.size(),
                                            " elements; the model has ", residual_.size()));
  }
  ProjectShare(gradient);
  return SumFactors(step, gradient, allreduce);
}

// Step 1: each matrix's M = share + residual (kept in the residual) and its P = M·Q into the
// first buffer, then the whole ranges after them.
void PowerSgdRingSum::ProjectShare(absl::Span<const float> gradient) {
  for (const PowerSgdMatrix& at : layout_.matrices) {
    const float* q = q_.data() + at.q_at;
    float* p = first_.data() + at.p_at;
    for (int i = 0; i < at.rows; ++i) {  // row by row, so each row is read from memory once
      const size_t row_at = static_cast<size_t>(i) * at.cols;
      float* m = residual_.data() + at.offset + row_at;
      const float* g = gradient.data() + at.offset + row_at;
      for (int j = 0; j < at.cols; ++j) m[j] += g[j];
      for (int k = 0; k < rank_; ++k) p[k * at.rows + i] = Dot(m, q + k * at.cols, at.cols);
    }
  }
  float* whole = first_.data() + layout_.whole_at;
  for (const ElementRange& range : layout_.whole) {
    std::copy_n(gradient.data() + range.begin, range.size(), whole);
    whole += range.size();
  }
}

// Steps 2 and 3: the two allreduces, with this worker's Q_w and residual between them.
absl::Status PowerSgdRingSum::SumFactors(int64_t step, absl::Span<float> gradient,
                                         StepAllreduce allreduce) {
  RETURN_IF_ERROR(allreduce(0, absl::MakeSpan(first_)));
  RETURN_IF_ERROR(CheckFinite(first_, "P and uncompressed values", step));
  const float* whole = first_.data() + layout_.whole_at;
  for (const ElementRange& range : layout_.whole) {
    std::copy_n(whole, range.size(), gradient.data() + range.begin);
    whole += range.size();
  }
  std::fill(second_.begin(), second_.end(), 0.0f);
  for (const PowerSgdMatrix& at : layout_.matrices) ProjectOntoP(at);
  RETURN_IF_ERROR(allreduce(1, absl::MakeSpan(second_)));
  RETURN_IF_ERROR(CheckFinite(second_, "Q", step));
  for (size_t matrix = 0; matrix < layout_.matrices.size(); ++matrix) {
    Reconstruct(matrix, step, gradient);
  }
  return absl::OkStatus();
}

// P̂ (in place of the summed P), this worker's Q_w = Mᵀ·P̂ into the second buffer, and its
// residual M - P̂·Q_wᵀ.
void PowerSgdRingSum::ProjectOntoP(const PowerSgdMatrix& at) {
  float* p = first_.data() + at.p_at;
  Orthonormalise(p, rank_, at.rows);
  float* m = residual_.data() + at.offset;
  float* q = second_.data() + at.q_at;
  for (int i = 0; i < at.rows; ++i) {
    const float* row = m + static_cast<size_t>(i) * at.cols;
    for (int k = 0; k < rank_; ++k) Axpy(p[k * at.rows + i], row, q + k * at.cols, at.cols);
  }
  for (int i = 0; i < at.rows; ++i) {
    float* row = m + static_cast<size_t>(i) * at.cols;
    for (int k = 0; k < rank_; ++k) Axpy(-p[k * at.rows + i], q + k * at.cols, row, at.cols);
  }
}

// The matrix's sum P̂·Qᵀ into the gradient; the summed Q kept for the next step, a column of
// zeros drawn again.
void PowerSgdRingSum::Reconstruct(size_t matrix, int64_t step, absl::Span<float> gradient) {
  const PowerSgdMatrix& at = layout_.matrices[matrix];
  const float* p = first_.data() + at.p_at;
  const float* q = second_.data() + at.q_at;
  float* g = gradient.data() + at.offset;
  std::fill_n(g, static_cast<size_t>(at.rows) * at.cols, 0.0f);
  for (int i = 0; i < at.rows; ++i) {
    for (int k = 0; k < rank_; ++k) {
      Axpy(p[k * at.rows + i], q + k * at.cols, g + static_cast<size_t>(i) * at.cols, at.cols);
    }
  }
  std::copy_n(q, static_cast<size_t>(rank_) * at.cols, q_.data() + at.q_at);
  for (int k = 0; k < rank_; ++k) {
    const float* column = q + k * at.cols;
    if (std::all_of(column, column + at.cols, [](float v) { return v == 0.0f; })) {
      DrawQ(matrix, k, static_cast<uint64_t>(step) + 1);
    }
  }
}

}  // namespace ringside::ring
