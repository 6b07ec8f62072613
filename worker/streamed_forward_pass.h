// Loss and accuracy of parameters that stay in a file: the test evaluator's snapshots
// (worker/accuracy_evaluator.h), evaluated without a copy of the model in memory. The forward pass
// reads each layer's weights a block of input rows at a time and adds each block's product into
// the layer's output (z = b + sum over blocks of in[:, block] * W[block, :]), so it holds one block
// and two layers' activations of the batch, however large the model. On the CPU (OpenBLAS), at
// the cost of reading the whole file once per batch, from the page cache: the test evaluator's
// 256-row pieces read the model 40 times per evaluation of Fashion-MNIST's 10,000 test images,
// against 256 · K multiply-adds per piece. That cost was not measured apart from the
// evaluation's total (`eval_seconds`).
//
// With a block of a whole layer the pass makes CpuGradientComputer's calls on the same values, and
// gives its figures bit for bit; smaller blocks sum in another order (float rounding).
// Thread-compatible: one call at a time. Errors: INVALID_ARGUMENT for a batch that does not fit
// the model (as GradientComputer::Evaluate) or a file of another size; the file's read errors.
#ifndef RINGSIDE_WORKER_STREAMED_FORWARD_PASS_H_
#define RINGSIDE_WORKER_STREAMED_FORWARD_PASS_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/file_util.h"
#include "common/model_spec.h"
#include "worker/gradient_computer.h"

namespace ringside::worker {

class StreamedForwardPass {
 public:
  struct Options {
    // The most bytes of weights read at once (whole input rows of a layer; one row at least).
    uint64_t block_bytes = uint64_t{2} << 20;
  };

  explicit StreamedForwardPass(ModelSpec spec) : StreamedForwardPass(std::move(spec), Options()) {}
  StreamedForwardPass(ModelSpec spec, Options options);

  const ModelSpec& spec() const { return spec_; }

  // `parameters` holds spec().parameter_count() floats as ModelSpec lays them out.
  absl::StatusOr<Evaluation> Evaluate(const ScratchFile& parameters, const Batch& batch);
  // Frees the block and the activations (the next Evaluate allocates them again): between
  // evaluations the memory is the process's other work's.
  void Release();

 private:
  // Reads elements [first, first + out.size()) of the parameters.
  static absl::Status ReadValues(const ScratchFile& parameters, uint64_t first,
                                 absl::Span<float> out);
  // Layer `l` of `rows` rows from `input` into output_.
  absl::Status Layer(const ScratchFile& parameters, int l, int rows, const float* input);

  ModelSpec spec_;
  Options options_;
  std::vector<float> block_;   // a block of weight rows, or a layer's bias
  std::vector<float> input_;   // the previous layer's activations
  std::vector<float> output_;  // this layer's pre-activations, then activations
};

}  // namespace ringside::worker

#endif  // RINGSIDE_WORKER_STREAMED_FORWARD_PASS_H_
