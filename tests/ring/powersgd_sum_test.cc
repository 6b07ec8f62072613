// PowerSGD in the ring (ring/powersgd_sum.h, --compression=powersgd:R), four ranks as threads
// over the in-memory transport on a model of odd sizes: the layout compresses only the matrices
// that gain, every rank ends each step with the same bits, nothing is lost (the ranks' residuals
// and the sum add up to what they put in), a rank-R sum comes through exact, a matrix whose
// gradient vanished recovers (its Q is drawn again), a sum that is not finite fails the step, and
// every link carries the two factors' bytes (measured = expected, to the byte).
#include "ring/powersgd_sum.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <vector>

#include "common/cost_model.h"
#include "common/counter_rng.h"
#include "common/metrics.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "ring/allreduce.h"
#include "ring/memory_transport.h"
#include "tests/ring/ring_test_util.h"

namespace ringside::ring {
namespace {

constexpr int kWorld = 4;

ModelSpec OddModel() { return ModelSpec::Parse("31,53,17,5", "tanh").value(); }

// A normal share, a pure function of (rank, step).
std::vector<float> NormalShare(const ModelSpec& spec, int rank, int64_t step) {
  std::vector<float> share(spec.parameter_count());
  for (size_t i = 0; i < share.size(); ++i) {
    share[i] = static_cast<float>(
        CounterNormal(1000 * static_cast<uint64_t>(step) + rank, RngStream::kParameters, i));
  }
  return share;
}

using ShareFn = std::function<std::vector<float>(int rank, int64_t step)>;

// Every rank's results: per step, per rank, the summed gradient and the residual after it.
struct RingRun {
  std::vector<std::vector<std::vector<float>>> sums, residuals;
  std::vector<absl::Status> statuses;
  std::vector<double> bytes, expected_bytes;
};

RingRun RunPowerSgd(const ModelSpec& spec, int rank, int64_t warmup, int64_t steps,
                    const ShareFn& share) {
  InMemoryRing ring(kWorld);
  Metrics metrics(std::make_shared<prometheus::Registry>());
  const std::vector<LinkSendMetrics> links = testing::RingLinks(metrics, kWorld);
  AllreduceOptions options;
  options.segment_bytes = 256;  // many segments per chunk
  RingRun run;
  run.sums.assign(steps, std::vector<std::vector<float>>(kWorld));
  run.residuals = run.sums;
  run.statuses.resize(kWorld);
  testing::RunRanks(kWorld, [&](int r) {
    RingAllreduce allreduce(ring.transport(r), links[r]);
    PowerSgdRingSum power(rank, warmup, /*seed=*/5, spec);
    for (int64_t step = 0; step < steps && run.statuses[r].ok(); ++step) {
      std::vector<float> gradient = share(r, step);
      run.statuses[r] = power.Sum(step, absl::MakeSpan(gradient), [&](int part, auto buffer) {
        return allreduce.Run(3 * static_cast<uint64_t>(step) + part + 1, buffer, options);
      });
      run.sums[step][r] = std::move(gradient);
      run.residuals[step][r].assign(power.residual().begin(), power.residual().end());
    }
  });
  for (int r = 0; r < kWorld; ++r) {
    run.bytes.push_back(links[r].bytes->Value());
    run.expected_bytes.push_back(links[r].expected_bytes->Value());
  }
  return run;
}

TEST(PowerSgdLayoutTest, CompressesTheMatricesThatGainAndSumsTheRestWhole) {
  const ModelSpec spec = OddModel();  // 31x53, 53x17, 17x5
  const PowerSgdLayout two = PlanPowerSgd(spec, 2);
  ASSERT_EQ(two.matrices.size(), 3u);
  EXPECT_EQ(two.matrices[1].offset, spec.weight_range(1).begin);
  EXPECT_EQ(two.matrices[1].rows, 53);
  EXPECT_EQ(two.matrices[1].cols, 17);
  EXPECT_EQ(two.matrices[1].p_at, 2u * 31);
  EXPECT_EQ(two.matrices[2].q_at, 2u * (53 + 17));
  EXPECT_EQ(two.whole_at, 2u * (31 + 53 + 17));
  EXPECT_EQ(two.first_elements, two.whole_at + 53 + 17 + 5);  // the biases
  EXPECT_EQ(two.second_elements, 2u * (53 + 17 + 5));
  // Rank 4: the last matrix (85 elements) would take 4·22 = 88, so it travels whole.
  const PowerSgdLayout four = PlanPowerSgd(spec, 4);
  ASSERT_EQ(four.matrices.size(), 2u);
  EXPECT_EQ(four.whole_at, 4u * (31 + 53));
  EXPECT_EQ(four.first_elements, four.whole_at + 53 + 17 + 17 * 5 + 5);
  EXPECT_EQ(four.second_elements, 4u * (53 + 17));
}

TEST(PowerSgdRingSumTest, RanksAgreeNothingIsLostAndLinksCarryTheFactorsBytes) {
  const ModelSpec spec = OddModel();
  constexpr int64_t kWarmup = 2, kSteps = 6;
  const ShareFn share = [&](int r, int64_t step) { return NormalShare(spec, r, step); };
  const RingRun run = RunPowerSgd(spec, 2, kWarmup, kSteps, share);
  for (int r = 0; r < kWorld; ++r)
    ASSERT_TRUE(run.statuses[r].ok()) << r << ": " << run.statuses[r];
  const PowerSgdLayout layout = PlanPowerSgd(spec, 2);
  std::vector<std::vector<float>> carried(kWorld, std::vector<float>(spec.parameter_count(), 0));
  for (int64_t step = 0; step < kSteps; ++step) {
    SCOPED_TRACE(step);
    for (int r = 1; r < kWorld; ++r) EXPECT_EQ(run.sums[step][r], run.sums[step][0]) << r;
    // What went in (shares plus the residuals carried in) is what came out (the sum plus the
    // residuals carried on), element by element; the warm-up steps carry nothing.
    std::vector<std::vector<float>> shares;
    for (int r = 0; r < kWorld; ++r) shares.push_back(share(r, step));
    for (size_t i = 0; i < spec.parameter_count(); ++i) {
      double in = 0, out = run.sums[step][0][i];
      for (int r = 0; r < kWorld; ++r) {
        in += shares[r][i] + carried[r][i];
        out += run.residuals[step][r][i];
      }
      ASSERT_NEAR(out, in, 1e-4) << i;
    }
    for (int r = 0; r < kWorld; ++r) {
      const bool kept = std::any_of(run.residuals[step][r].begin(), run.residuals[step][r].end(),
                                    [](float v) { return v != 0.0f; });
      EXPECT_EQ(kept, step >= kWarmup) << "rank " << r;
      carried[r] = run.residuals[step][r];
    }
    // The biases are summed whole: nothing of them is ever kept back.
    for (int r = 0; r < kWorld; ++r) {
      for (int l = 0; l < spec.num_weight_layers(); ++l) {
        for (uint64_t i = spec.bias_range(l).begin; i < spec.bias_range(l).end; ++i) {
          ASSERT_EQ(run.residuals[step][r][i], 0.0f) << i;
        }
      }
    }
  }
  for (int r = 0; r < kWorld; ++r) {
    const double expected = static_cast<double>(
        kWarmup * RingBytesSentByRank(spec.parameter_count(), kWorld, r, WireDtype::kFp32) +
        (kSteps - kWarmup) *
            (RingBytesSentByRank(layout.first_elements, kWorld, r, WireDtype::kFp32) +
             RingBytesSentByRank(layout.second_elements, kWorld, r, WireDtype::kFp32)));
    EXPECT_EQ(run.bytes[r], expected) << "rank " << r;
    EXPECT_EQ(run.expected_bytes[r], expected) << "rank " << r;
  }
}

// Shares u·v_rᵀ (one left vector for every rank) sum to a rank-1 matrix, which one power
// iteration captures: rank 1 sends it exact and keeps nothing back.
std::vector<float> RankOneShare(const ModelSpec& spec, int r, int64_t step) {
  std::vector<float> share(spec.parameter_count(), 0.0f);
  for (int l = 0; l < spec.num_weight_layers(); ++l) {
    const LayerView<float> layer = spec.Layer(absl::MakeSpan(share), l);
    for (int i = 0; i < layer.fan_in; ++i) {
      const double u = CounterNormal(77 + l, RngStream::kParameters, i);
      for (int j = 0; j < layer.fan_out; ++j) {
        const double v = CounterNormal(100 * step + r, RngStream::kParameters, 1000 * l + j);
        layer.weights[static_cast<size_t>(i) * layer.fan_out + j] = static_cast<float>(u * v);
      }
    }
  }
  return share;
}

void ExpectTheExactSum(const ModelSpec& spec, const RingRun& run, const ShareFn& share,
                       int64_t step) {
  std::vector<std::vector<float>> shares;
  for (int r = 0; r < kWorld; ++r) shares.push_back(share(r, step));
  for (size_t i = 0; i < spec.parameter_count(); ++i) {
    double exact = 0;
    for (int r = 0; r < kWorld; ++r) exact += shares[r][i];
    ASSERT_NEAR(run.sums[step][0][i], exact, 1e-3 * (1 + std::abs(exact))) << i;
    for (int r = 0; r < kWorld; ++r) ASSERT_NEAR(run.residuals[step][r][i], 0, 1e-3) << i;
  }
}

TEST(PowerSgdRingSumTest, ARankOneSumComesThroughExact) {
  const ModelSpec spec = OddModel();
  const ShareFn share = [&](int r, int64_t step) { return RankOneShare(spec, r, step); };
  const RingRun run = RunPowerSgd(spec, 1, /*warmup=*/0, /*steps=*/2, share);
  for (int r = 0; r < kWorld; ++r) ASSERT_TRUE(run.statuses[r].ok()) << run.statuses[r];
  ExpectTheExactSum(spec, run, share, 0);
  ExpectTheExactSum(spec, run, share, 1);
}

TEST(PowerSgdRingSumTest, AMatrixWhoseGradientVanishedRecovers) {
  // Step 0's shares are zero: every Q sums to zero and is drawn again, so step 1's rank-1 sum
  // still comes through (a Q kept at zero would send zero forever).
  const ModelSpec spec = OddModel();
  const ShareFn share = [&](int r, int64_t step) {
    return step == 0 ? std::vector<float>(spec.parameter_count(), 0.0f)
                     : RankOneShare(spec, r, step);
  };
  const RingRun run = RunPowerSgd(spec, 1, /*warmup=*/0, /*steps=*/2, share);
  for (int r = 0; r < kWorld; ++r) ASSERT_TRUE(run.statuses[r].ok()) << run.statuses[r];
  for (float v : run.sums[0][0]) ASSERT_EQ(v, 0.0f);
  ExpectTheExactSum(spec, run, share, 1);
}

TEST(PowerSgdRingSumTest, ASumThatIsNotFiniteFailsTheStepOnEveryRank) {
  const ModelSpec spec = OddModel();
  const ShareFn share = [&](int r, int64_t step) {
    std::vector<float> s = NormalShare(spec, r, step);
    if (r == 2) s[spec.weight_range(1).begin + 7] = INFINITY;
    return s;
  };
  const RingRun run = RunPowerSgd(spec, 2, /*warmup=*/0, /*steps=*/1, share);
  for (int r = 0; r < kWorld; ++r) {
    EXPECT_EQ(run.statuses[r].code(), absl::StatusCode::kInvalidArgument) << run.statuses[r];
  }
}

}  // namespace
}  // namespace ringside::ring
