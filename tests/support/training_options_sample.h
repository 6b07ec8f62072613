// A TrainingOptions value in which every field differs from its default, and a field-by-field
// comparison, for the tests that send the options through the flags, a command line and the job
// spec: a field that the description (common/training_options.h) leaves out comes back as its
// default and fails the comparison. Both unpack the struct with a structured binding, which stops
// compiling when a field is added: the new field must be given a value here, and is then checked
// by every round trip. Header-only.
#ifndef RINGSIDE_TESTS_SUPPORT_TRAINING_OPTIONS_SAMPLE_H_
#define RINGSIDE_TESTS_SUPPORT_TRAINING_OPTIONS_SAMPLE_H_

#include <cmath>

#include "common/training_options.h"
#include "gtest/gtest.h"

namespace ringside::testing {

inline TrainingOptions NonDefaultTrainingOptions() {
  TrainingOptions options;
  auto& [model, activation, data, steps, eval_every, batch_size, optimizer, seed, staleness,
         backup_workers, straggler, wire_dtype, bucket_bytes, compression, compression_warmup,
         device] = options;
  model = "784,64,10";
  activation = "relu";
  data = "fashion-mnist:/data/fm";
  steps = 321;
  eval_every = 7;
  batch_size = 48;
  // A learning rate that needs all nine digits to survive a trip through text.
  optimizer.kind = OptimizerKind::kMomentum;
  optimizer.learning_rate = std::nextafter(0.1f, 1.0f);
  seed = 18446744073709551557u;  // beyond int64: the seed is unsigned all the way
  staleness = 3;
  backup_workers = 2;  // not valid with staleness 3 (CheckSyncSettings), but every row carries it
  straggler = {2, 2.5f};
  wire_dtype = WireDtype::kBf16;
  bucket_bytes = 1048573;  // odd: not a whole number of floats, and refused with staleness 3
  compression = {CompressionKind::kTopK, 0.0123f};
  compression_warmup = 17;
  device = "cuda:1";
  return options;
}

// Every field of `actual` equals `expected`'s (the optimiser's fixed constants too).
inline void ExpectSameTrainingOptions(const TrainingOptions& actual,
                                      const TrainingOptions& expected) {
  const auto& [model, activation, data, steps, eval_every, batch_size, optimizer, seed, staleness,
               backup_workers, straggler, wire_dtype, bucket_bytes, compression, compression_warmup,
               device] = actual;
  EXPECT_EQ(model, expected.model);
  EXPECT_EQ(activation, expected.activation);
  EXPECT_EQ(data, expected.data);
  EXPECT_EQ(steps, expected.steps);
  EXPECT_EQ(eval_every, expected.eval_every);
  EXPECT_EQ(batch_size, expected.batch_size);
  const auto& [kind, learning_rate, momentum, beta1, beta2, epsilon] = optimizer;
  EXPECT_EQ(kind, expected.optimizer.kind);
  EXPECT_EQ(learning_rate, expected.optimizer.learning_rate);
  EXPECT_EQ(momentum, expected.optimizer.momentum);
  EXPECT_EQ(beta1, expected.optimizer.beta1);
  EXPECT_EQ(beta2, expected.optimizer.beta2);
  EXPECT_EQ(epsilon, expected.optimizer.epsilon);
  EXPECT_EQ(seed, expected.seed);
  EXPECT_EQ(staleness, expected.staleness);
  EXPECT_EQ(backup_workers, expected.backup_workers);
  EXPECT_EQ(straggler, expected.straggler);
  EXPECT_EQ(wire_dtype, expected.wire_dtype);
  EXPECT_EQ(bucket_bytes, expected.bucket_bytes);
  EXPECT_EQ(compression, expected.compression);
  EXPECT_EQ(compression_warmup, expected.compression_warmup);
  EXPECT_EQ(device, expected.device);
}

}  // namespace ringside::testing

#endif  // RINGSIDE_TESTS_SUPPORT_TRAINING_OPTIONS_SAMPLE_H_
