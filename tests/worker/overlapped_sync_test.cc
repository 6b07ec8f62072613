// Buckets (worker/gradient_buckets.h) as pure functions: boundaries at odd layer sizes, the
// first bucket's rule, every element in exactly one bucket, the last layers first. And an
// overlapped step (worker/overlapped_sync.h) on the real CPU computer: the last layer's bucket is
// being synchronised before the backward pass reports the first layer (observed with hooks, not a
// clock), the sum that comes back is what the optimiser applies, and a failed or abandoned step
// leaves no thread waiting.
#include "worker/overlapped_sync.h"

#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "tests/worker/test_util.h"
#include "worker/data_parallel.h"
#include "worker/gradient_buckets.h"

namespace ringside::worker {
namespace {

std::vector<ElementRange> Layers(const std::vector<uint64_t>& sizes) {
  std::vector<ElementRange> layers;
  uint64_t begin = 0;
  for (uint64_t size : sizes) {
    layers.push_back({begin, begin + size});
    begin += size;
  }
  return layers;
}

// Every element in exactly one bucket, buckets in reverse order, each whole layers.
void ExpectPartition(const std::vector<GradientBucket>& buckets,
                     const std::vector<ElementRange>& layers) {
  ASSERT_FALSE(buckets.empty());
  uint64_t end = layers.back().end;
  int next_layer = static_cast<int>(layers.size()) - 1;
  for (const GradientBucket& bucket : buckets) {
    EXPECT_EQ(bucket.last_layer, next_layer);
    EXPECT_LE(bucket.first_layer, bucket.last_layer);
    EXPECT_EQ(bucket.range.end, end);
    EXPECT_EQ(bucket.range.end, layers[bucket.last_layer].end);
    EXPECT_EQ(bucket.range.begin, layers[bucket.first_layer].begin);
    end = bucket.range.begin;
    next_layer = bucket.first_layer - 1;
  }
  EXPECT_EQ(end, 0u);
  EXPECT_EQ(next_layer, -1);
}

TEST(GradientBucketsTest, ZeroIsOneBucketOfEveryLayer) {
  const std::vector<ElementRange> layers = Layers({7, 13, 5});
  const std::vector<GradientBucket> buckets = PlanBuckets(layers, 0);
  ASSERT_EQ(buckets.size(), 1u);
  EXPECT_EQ(buckets[0].range, (ElementRange{0, 25}));
  ExpectPartition(buckets, layers);
  EXPECT_TRUE(PlanBuckets(std::vector<ElementRange>{}, 64).empty());
}

TEST(GradientBucketsTest, BucketsTakeWholeLayersFromTheEndWithinTheirCap) {
  // Odd sizes: 4 * (7, 13, 5, 3, 11) bytes = 28, 52, 20, 12, 44.
  const std::vector<ElementRange> layers = Layers({7, 13, 5, 3, 11});
  const std::vector<GradientBucket> buckets = PlanBuckets(layers, 64);
  ExpectPartition(buckets, layers);
  ASSERT_EQ(buckets.size(), 4u);
  EXPECT_EQ(buckets[0].first_layer, 3);  // 44 + 12 = 56 <= 64; + 20 > 64
  EXPECT_EQ(buckets[1].first_layer, 2);  // 20 alone: + 52 > 64
  EXPECT_EQ(buckets[2].first_layer, 1);  // 52 alone: + 28 > 64
  EXPECT_EQ(buckets[3].first_layer, 0);
  // Cap 80: {44, 12, 20}? 44 + 12 = 56, + 20 = 76 <= 80; then {52, 28} = 80.
  const std::vector<GradientBucket> wider = PlanBuckets(layers, 80);
  ExpectPartition(wider, layers);
  ASSERT_EQ(wider.size(), 2u);
  EXPECT_EQ(wider[0].first_layer, 2);
  EXPECT_EQ(wider[1].first_layer, 0);
}

TEST(GradientBucketsTest, ALayerLargerThanTheCapIsABucketOfItsOwn) {
  const std::vector<ElementRange> layers = Layers({101, 3, 99});
  const std::vector<GradientBucket> buckets = PlanBuckets(layers, 4);  // one float
  ExpectPartition(buckets, layers);
  ASSERT_EQ(buckets.size(), 3u);
  for (int b = 0; b < 3; ++b) EXPECT_EQ(buckets[b].first_layer, buckets[b].last_layer);
}

TEST(GradientBucketsTest, TheFirstBucketIsAtMostOneMebibyte) {
  // The heavy job's layers (784,1024,1024,10): 3.2 MB, 4.2 MB, 41 KB of float32.
  const auto spec = ModelSpec::Parse("784,1024,1024,10", "relu");
  ASSERT_TRUE(spec.ok());
  const std::vector<GradientBucket> big = PlanBuckets(*spec, uint64_t{25} << 20);
  ASSERT_EQ(big.size(), 2u);
  EXPECT_EQ(big[0].first_layer, 2);  // 41 KB + 4.2 MB > 1 MiB: the last layer alone
  EXPECT_EQ(big[1].first_layer, 0);  // 4.2 + 3.2 MB <= 25 MiB
  const std::vector<GradientBucket> per_layer = PlanBuckets(*spec, uint64_t{1} << 20);
  ASSERT_EQ(per_layer.size(), 3u);
  // Small layers: the first bucket still stops at 1 MiB, the others at the cap.
  std::vector<uint64_t> sizes(40, (uint64_t{1} << 20) / 4 / 4);  // 40 layers of 256 KiB
  const std::vector<ElementRange> layers = Layers(sizes);
  const std::vector<GradientBucket> buckets = PlanBuckets(layers, uint64_t{2} << 20);
  ExpectPartition(buckets, layers);
  EXPECT_EQ(buckets[0].last_layer - buckets[0].first_layer + 1, 4);  // 1 MiB
  EXPECT_EQ(buckets[1].last_layer - buckets[1].first_layer + 1, 8);  // 2 MiB
}

TEST(GradientBucketsTest, TheTrackerCompletesEachBucketAtItsFirstLayer) {
  const std::vector<ElementRange> layers = Layers({7, 13, 5, 3, 11});
  const std::vector<GradientBucket> buckets = PlanBuckets(layers, 80);
  BucketTracker tracker(buckets);
  EXPECT_EQ(tracker.LayerReady(4), -1);
  EXPECT_EQ(tracker.LayerReady(3), -1);
  EXPECT_EQ(tracker.LayerReady(2), 0);
  EXPECT_EQ(tracker.LayerReady(1), -1);
  EXPECT_FALSE(tracker.done());
  EXPECT_EQ(tracker.LayerReady(0), 1);
  EXPECT_TRUE(tracker.done());
}

TrainingOptions OddJob(const std::string& device) {
  TrainingOptions job;
  job.model = "13,37,11,4";  // layers of 518, 418 and 48 elements
  job.data = "synthetic:256";
  job.batch_size = 32;
  job.device = device;
  job.optimizer = {OptimizerKind::kSgd, 0.5f};
  return job;
}

// One worker: the sum is the share itself. The hook of the bucket holding layer 0 (on the
// computing thread, before layer 0 is reported ready) waits until the sync thread has summed the
// last layer's bucket: were the sync to start only after the backward pass, this would wait
// until the bound and fail. On the CPU computer, and on CUDA where a device is present.
class OverlappedSyncTest : public ::testing::TestWithParam<std::string> {};

TEST_P(OverlappedSyncTest, TheLastLayersBucketIsSyncedBeforeTheFirstLayerIsReported) {
  if (GetParam() == "cuda") {
    if (auto reason = testing::NoCudaReason()) GTEST_SKIP() << "no CUDA device: " << *reason;
  }
  auto job = TrainingJob::Create(OddJob(GetParam()));
  ASSERT_TRUE(job.ok()) << job.status();
  const std::vector<GradientBucket> buckets = PlanBuckets((*job)->spec(), 1);
  ASSERT_EQ(buckets.size(), 3u);
  absl::Notification last_bucket_summed;
  bool waited = false;
  absl::Mutex mu;
  std::vector<int> summed;  // bucket indices, in the order the sync summed them
  Optimizer sgd = *Optimizer::Create((*job)->options().optimizer, (*job)->parameter_count());
  OverlappedSync sync(
      SyncMode::kRing, buckets,
      [&](int64_t, absl::Span<float>, const AwaitReady& ready) -> absl::Status {
        for (size_t b = 0; b < buckets.size(); ++b) {
          if (!ready(buckets[b].range.begin)) return absl::CancelledError("abandoned");
          absl::MutexLock lock(&mu);
          summed.push_back(static_cast<int>(b));
          if (b == 0) last_bucket_summed.Notify();
        }
        return absl::OkStatus();
      },
      [&](int64_t, int bucket, ElementRange) {
        if (bucket == 2) {
          // Not a timing condition: the bound only turns a hang into a failure.
          waited = last_bucket_summed.WaitForNotificationWithTimeout(absl::Minutes(1));
        }
      },
      sgd);
  std::vector<float> params = (*job)->InitialParameters(), gradient(params.size());
  std::vector<float> expected_gradient(params.size());
  ASSERT_TRUE(
      (*job)->ComputeShare(0, WorkerSlot{}, params, absl::MakeSpan(expected_gradient)).ok());
  std::vector<float> expected = params;
  Optimizer reference = *Optimizer::Create((*job)->options().optimizer, params.size());
  ASSERT_TRUE(reference.Step(absl::MakeSpan(expected), expected_gradient).ok());

  StepTiming timing;
  auto stats = TrainStep(**job, 0, WorkerSlot{}, sync, absl::MakeSpan(params),
                         absl::MakeSpan(gradient), nullptr, nullptr, &timing);
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_TRUE(waited) << "the last layer's bucket was not synced during the backward pass";
  EXPECT_EQ(summed, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(params, expected);  // the same bits as computing, then applying the whole gradient
  EXPECT_LE(timing.concurrent(), timing.sync);
  EXPECT_EQ(timing.total(), timing.compute + timing.sync_after_compute() + timing.update);
}

INSTANTIATE_TEST_SUITE_P(Devices, OverlappedSyncTest, ::testing::Values("cpu", "cuda"),
                         [](const auto& info) { return info.param; });

// A sum that fails mid-step fails the step at Finish; the next step runs normally. An abandoned
// step (the compute failed) releases the sync thread, which is waiting for a bucket.
TEST(OverlappedSyncFailureTest, AFailedBucketFailsTheStepAndAnAbandonedOneReleasesTheSyncThread) {
  const std::vector<ElementRange> layers = Layers({5, 9, 3});
  const std::vector<GradientBucket> buckets = PlanBuckets(layers, 4);
  Optimizer sgd = *Optimizer::Create({OptimizerKind::kSgd, 1.0f}, 17);
  bool fail = true;
  absl::Notification waiting_for_bucket_2;
  OverlappedSync sync(
      SyncMode::kPs, buckets,
      [&](int64_t step, absl::Span<float>, const AwaitReady& ready) -> absl::Status {
        if (!ready(buckets[0].range.begin)) return absl::CancelledError("abandoned");
        if (fail && step == 0) return absl::AbortedError("generation superseded");
        if (step == 2 && !waiting_for_bucket_2.HasBeenNotified()) waiting_for_bucket_2.Notify();
        if (!ready(0)) return absl::CancelledError("abandoned");
        return absl::OkStatus();
      },
      nullptr, sgd);
  std::vector<float> gradient(17, 1.0f), params(17, 0.0f);
  sync.Begin(0, absl::MakeSpan(gradient));
  for (int l = 2; l >= 0; --l) sync.LayerReady(l);
  EXPECT_EQ(sync.Finish(absl::MakeSpan(params), absl::Now()).status().code(),
            absl::StatusCode::kAborted);
  EXPECT_EQ(params, std::vector<float>(17, 0.0f));  // nothing applied
  fail = false;
  auto ok = sync.Step(1, absl::MakeSpan(gradient), absl::MakeSpan(params));
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(params, std::vector<float>(17, -1.0f));
  sync.Begin(2, absl::MakeSpan(gradient));
  sync.LayerReady(2);
  waiting_for_bucket_2.WaitForNotification();  // the sync thread waits for the rest
  sync.Abandon();                              // returns: nothing is left waiting
  EXPECT_EQ(params, std::vector<float>(17, -1.0f));
}

}  // namespace
}  // namespace ringside::worker
