// The controller's membership rules with an injected clock: formation, every bad membership
// input, failure and late joins. Addresses are only names here: nothing is bound or dialled.
#include "control/membership.h"

#include <string>
#include <vector>

#include "common/net.h"
#include "gtest/gtest.h"

namespace ringside::server {
namespace {

const absl::Time kStart = absl::FromUnixSeconds(1000);

MembershipConfig TwoWorkersOneShard() {
  MembershipConfig config;
  config.workers = 2;
  config.ps_shards = 1;
  config.join_token = "s3cret";
  config.heartbeat_timeout = absl::Seconds(5);
  return config;
}

TEST(MembershipTest, FormsTheTopologyWhenTheWorldIsCompleteInRegistrationOrder) {
  Membership membership(TwoWorkersOneShard());
  auto w0 = membership.Register("s3cret", MemberRole::kWorker, "worker-a.test:7000", kStart);
  auto s0 = membership.Register("s3cret", MemberRole::kShard, "shard-a.test:8000", kStart);
  ASSERT_TRUE(w0.ok() && s0.ok());
  EXPECT_EQ(membership.topology().generation, 0u);
  EXPECT_FALSE(membership.AssignmentOf(*w0).has_value()) << "no assignment before formation";
  auto w1 = membership.Register("s3cret", MemberRole::kWorker, "worker-b.test:7000", kStart);
  ASSERT_TRUE(w1.ok());
  EXPECT_EQ(membership.topology().generation, 1u);
  auto a1 = membership.AssignmentOf(*w1);
  ASSERT_TRUE(a1.has_value());
  EXPECT_EQ(a1->rank, 1);
  EXPECT_EQ(a1->ring, (std::vector<std::string>{"worker-a.test:7000", "worker-b.test:7000"}));
  EXPECT_EQ(a1->shards, (std::vector<std::string>{"shard-a.test:8000"}));
  EXPECT_EQ(membership.AssignmentOf(*s0)->shard, 0);
}

TEST(MembershipTest, RefusesBadMembershipInputAndGoesOn) {
  Membership membership(TwoWorkersOneShard());
  EXPECT_EQ(membership.Register("wrong", MemberRole::kWorker, "worker-a.test:7000", kStart)
                .status()
                .code(),
            absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(
      membership.Register("", MemberRole::kWorker, "worker-a.test:7000", kStart).status().code(),
      absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(membership.Register("s3cret", MemberRole::kWorker, "nonsense", kStart).status().code(),
            absl::StatusCode::kInvalidArgument);
  // Addresses others will dial: no port 0, no junk host, no whitespace (a leading space would
  // slip a duplicate past the check below), no control characters, no megabyte of text.
  for (const std::string& bad : std::vector<std::string>{
           "not a host!:0", "worker-x.test:0", "bad!host:7000", " worker-a.test:7000",
           "worker-a.test:7000\n", "a\nb:1", std::string(1 << 20, 'a') + ":1"}) {
    EXPECT_EQ(membership.Register("s3cret", MemberRole::kWorker, bad, kStart).status().code(),
              absl::StatusCode::kInvalidArgument)
        << QuoteForLog(bad);
  }
  auto w0 = membership.Register("s3cret", MemberRole::kWorker, "worker-a.test:7000", kStart);
  ASSERT_TRUE(w0.ok());
  EXPECT_EQ(membership.Register("s3cret", MemberRole::kWorker, "worker-a.test:7000", kStart)
                .status()
                .code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(membership.Heartbeat(999, 0, kStart).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(membership.Heartbeat(*w0, 7, kStart).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(membership.SetMode(SyncMode::kPs).status().code(),
            absl::StatusCode::kFailedPrecondition);
  // The job still forms and runs.
  ASSERT_TRUE(
      membership.Register("s3cret", MemberRole::kWorker, "worker-b.test:7000", kStart).ok());
  ASSERT_TRUE(membership.Register("s3cret", MemberRole::kShard, "shard-a.test:8000", kStart).ok());
  EXPECT_EQ(membership.topology().generation, 1u);
  EXPECT_TRUE(membership.Heartbeat(*w0, 1, kStart).ok());
}

TEST(MembershipTest, AMemberThatNeverHeartbeatsIsDroppedAndTheTopologyReforms) {
  Membership membership(TwoWorkersOneShard());
  auto w0 = membership.Register("s3cret", MemberRole::kWorker, "worker-a.test:7000", kStart);
  auto w1 = membership.Register("s3cret", MemberRole::kWorker, "worker-b.test:7000", kStart);
  auto s0 = membership.Register("s3cret", MemberRole::kShard, "shard-a.test:8000", kStart);
  ASSERT_TRUE(w0.ok() && w1.ok() && s0.ok());
  const absl::Time later = kStart + absl::Seconds(4);
  ASSERT_TRUE(membership.Heartbeat(*w1, 1, later).ok());
  ASSERT_TRUE(membership.Heartbeat(*s0, 1, later).ok());
  EXPECT_TRUE(membership.Expire(later).empty());
  // w0 registered and went silent.
  EXPECT_EQ(membership.Expire(kStart + absl::Seconds(6)), std::vector<uint64_t>{*w0});
  const Topology topology = membership.topology();
  EXPECT_EQ(topology.generation, 2u);
  EXPECT_EQ(topology.workers, std::vector<uint64_t>{*w1});
  EXPECT_EQ(membership.AssignmentOf(*w1)->rank, 0) << "the survivor takes rank 0";
  EXPECT_EQ(membership.Heartbeat(*w0, 2, later).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(membership.Heartbeat(*w1, 1, later).code(), absl::StatusCode::kFailedPrecondition)
      << "an old generation's heartbeat";
}

TEST(MembershipTest, ALateWorkerAndAModeSwitchEachStartAGeneration) {
  Membership membership(TwoWorkersOneShard());
  for (const char* address : {"worker-a.test:7000", "worker-b.test:7000"}) {
    ASSERT_TRUE(membership.Register("s3cret", MemberRole::kWorker, address, kStart).ok());
  }
  ASSERT_TRUE(membership.Register("s3cret", MemberRole::kShard, "shard-a.test:8000", kStart).ok());
  auto late = membership.Register("s3cret", MemberRole::kWorker, "worker-c.test:7000", kStart);
  ASSERT_TRUE(late.ok());
  EXPECT_EQ(membership.topology().generation, 2u);
  EXPECT_EQ(membership.AssignmentOf(*late)->rank, 2);
  auto generation = membership.SetMode(SyncMode::kPs);
  ASSERT_TRUE(generation.ok());
  EXPECT_EQ(*generation, 3u);
  EXPECT_EQ(membership.AssignmentOf(*late)->mode, SyncMode::kPs);
}

}  // namespace
}  // namespace ringside::server
