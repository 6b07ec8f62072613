// The controller's membership rules with an injected clock: formation, every bad membership
// input, failure and late joins. Addresses are only names here: nothing is bound or dialled.
#include "server/controller/membership.h"

#include <string>
#include <vector>

#include "common/net.h"
#include "gtest/gtest.h"

namespace ringside::server {
namespace {

// A member's own secret (common/auth.h); its value does not matter to these rules.
const std::string kCredential(32, 'k');

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
  auto w0 =
      membership.Register("s3cret", MemberRole::kWorker, "worker-a.test:7000", kStart, kCredential);
  auto s0 =
      membership.Register("s3cret", MemberRole::kShard, "shard-a.test:8000", kStart, kCredential);
  ASSERT_TRUE(w0.ok() && s0.ok());
  EXPECT_EQ(membership.topology().generation, 0u);
  EXPECT_FALSE(membership.AssignmentOf(*w0).has_value()) << "no assignment before formation";
  auto w1 =
      membership.Register("s3cret", MemberRole::kWorker, "worker-b.test:7000", kStart, kCredential);
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
  EXPECT_EQ(
      membership.Register("wrong", MemberRole::kWorker, "worker-a.test:7000", kStart, kCredential)
          .status()
          .code(),
      absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(membership.Register("", MemberRole::kWorker, "worker-a.test:7000", kStart, kCredential)
                .status()
                .code(),
            absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(membership.Register("s3cret", MemberRole::kWorker, "nonsense", kStart, kCredential)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  // Addresses others will dial: no port 0, no junk host, no whitespace (a leading space would
  // slip a duplicate past the check below), no control characters, no megabyte of text.
  for (const std::string& bad : std::vector<std::string>{
           "not a host!:0", "worker-x.test:0", "bad!host:7000", " worker-a.test:7000",
           "worker-a.test:7000\n", "a\nb:1", std::string(1 << 20, 'a') + ":1"}) {
    EXPECT_EQ(membership.Register("s3cret", MemberRole::kWorker, bad, kStart, kCredential)
                  .status()
                  .code(),
              absl::StatusCode::kInvalidArgument)
        << QuoteForLog(bad);
  }
  auto w0 =
      membership.Register("s3cret", MemberRole::kWorker, "worker-a.test:7000", kStart, kCredential);
  ASSERT_TRUE(w0.ok());
  EXPECT_EQ(membership.Heartbeat(999, 0, kStart).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(membership.Heartbeat(*w0, 7, kStart).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(membership.SetMode(SyncMode::kPs).status().code(),
            absl::StatusCode::kFailedPrecondition);
  // The job still forms and runs.
  ASSERT_TRUE(
      membership.Register("s3cret", MemberRole::kWorker, "worker-b.test:7000", kStart, kCredential)
          .ok());
  ASSERT_TRUE(
      membership.Register("s3cret", MemberRole::kShard, "shard-a.test:8000", kStart, kCredential)
          .ok());
  EXPECT_EQ(membership.topology().generation, 1u);
  EXPECT_TRUE(membership.Heartbeat(*w0, 1, kStart).ok());
}

// A mode switch needs a formed topology, and ps mode a shard in it: otherwise the switch is
// refused and the generation stays.
TEST(MembershipTest, AModeSwitchToPsWithoutAShardIsRefused) {
  MembershipConfig config = TwoWorkersOneShard();
  config.ps_shards = 0;
  Membership membership(config);
  for (const std::string address : {"worker-a.test:7000", "worker-b.test:7000"}) {
    ASSERT_TRUE(
        membership.Register("s3cret", MemberRole::kWorker, address, kStart, kCredential).ok());
  }
  ASSERT_EQ(membership.topology().generation, 1u);
  EXPECT_EQ(membership.SetMode(SyncMode::kPs).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(membership.topology().generation, 1u);
  EXPECT_EQ(membership.topology().mode, SyncMode::kRing);
  auto ring = membership.SetMode(SyncMode::kRing);
  ASSERT_TRUE(ring.ok()) << ring.status();
  EXPECT_EQ(*ring, 2u);
}

TEST(MembershipTest, AMemberThatNeverHeartbeatsIsDroppedAndTheTopologyReforms) {
  Membership membership(TwoWorkersOneShard());
  auto w0 =
      membership.Register("s3cret", MemberRole::kWorker, "worker-a.test:7000", kStart, kCredential);
  auto w1 =
      membership.Register("s3cret", MemberRole::kWorker, "worker-b.test:7000", kStart, kCredential);
  auto s0 =
      membership.Register("s3cret", MemberRole::kShard, "shard-a.test:8000", kStart, kCredential);
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

// Rule 11: a member that leaves is dropped at once, before any timeout; leaving twice, or as a
// member never seen, changes nothing; two leaving one after the other each start a generation.
TEST(MembershipTest, AMemberThatLeavesIsDroppedAtOnceAndTheTopologyReforms) {
  MembershipConfig config = TwoWorkersOneShard();
  config.workers = 3;
  Membership membership(config);
  std::vector<uint64_t> workers;
  for (const char* address : {"worker-a.test:7000", "worker-b.test:7000", "worker-c.test:7000"}) {
    auto id = membership.Register("s3cret", MemberRole::kWorker, address, kStart, kCredential);
    ASSERT_TRUE(id.ok()) << id.status();
    workers.push_back(*id);
  }
  auto s0 =
      membership.Register("s3cret", MemberRole::kShard, "shard-a.test:8000", kStart, kCredential);
  ASSERT_TRUE(s0.ok());
  ASSERT_EQ(membership.topology().generation, 1u);
  const uint64_t version = membership.version();

  auto left = membership.Leave(workers[1], kStart);
  ASSERT_TRUE(left.ok()) << left.status();
  EXPECT_EQ(*left, 2u);
  EXPECT_GT(membership.version(), version) << "the record changed: a restart must not revive it";
  EXPECT_EQ(membership.topology().workers, (std::vector<uint64_t>{workers[0], workers[2]}));
  EXPECT_EQ(membership.AssignmentOf(workers[2])->rank, 1) << "ranks stay in their old order";
  EXPECT_FALSE(membership.IsMember(workers[1]));
  EXPECT_TRUE(membership.Expire(kStart).empty()) << "nobody else is dropped";

  EXPECT_EQ(membership.Leave(workers[1], kStart).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(membership.Leave(999, kStart).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(membership.topology().generation, 2u) << "a refused leave starts no generation";

  // Two members leaving in the same step: each leave is a generation of its own.
  ASSERT_TRUE(membership.Leave(workers[0], kStart).ok());
  auto last = membership.Leave(*s0, kStart);
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(*last, 4u);
  EXPECT_EQ(membership.topology().workers, std::vector<uint64_t>{workers[2]});
  EXPECT_TRUE(membership.topology().shards.empty());
  EXPECT_EQ(membership.AssignmentOf(workers[2])->rank, 0);
}

// A member that leaves before the topology formed is forgotten and the job waits for another.
TEST(MembershipTest, LeavingBeforeFormationStartsNoGeneration) {
  Membership membership(TwoWorkersOneShard());
  auto w0 =
      membership.Register("s3cret", MemberRole::kWorker, "worker-a.test:7000", kStart, kCredential);
  ASSERT_TRUE(w0.ok());
  auto left = membership.Leave(*w0, kStart);
  ASSERT_TRUE(left.ok());
  EXPECT_EQ(*left, 0u);
  for (const char* address : {"worker-b.test:7000", "shard-a.test:8000"}) {
    const MemberRole role = address[0] == 's' ? MemberRole::kShard : MemberRole::kWorker;
    ASSERT_TRUE(membership.Register("s3cret", role, address, kStart, kCredential).ok());
  }
  EXPECT_EQ(membership.topology().generation, 0u) << "one worker short: the leaver does not count";
}

// Rule 12: a shard that leaves is offered, with its credential, to rank 0 of the generations
// formed while it may still hand its range over; a worker's leave offers nothing; the offer ends
// at the heartbeat timeout, or when a shard registers at the departed one's address.
TEST(MembershipTest, AShardThatLeavesIsOfferedToRankZeroUntilTheTimeoutOrItsReplacement) {
  MembershipConfig config = TwoWorkersOneShard();
  config.ps_shards = 2;
  Membership membership(config);
  std::vector<uint64_t> ids;
  const std::string departing_credential(32, 'd');
  for (const char* address :
       {"worker-a.test:7000", "worker-b.test:7000", "shard-a.test:8000", "shard-b.test:8000"}) {
    const MemberRole role = address[0] == 's' ? MemberRole::kShard : MemberRole::kWorker;
    auto id = membership.Register(
        "s3cret", role, address, kStart,
        std::string(address) == "shard-b.test:8000" ? departing_credential : kCredential);
    ASSERT_TRUE(id.ok()) << id.status();
    ids.push_back(*id);
  }
  ASSERT_EQ(membership.topology().generation, 1u);
  EXPECT_TRUE(membership.AssignmentOf(ids[0])->departed_shards.empty());

  ASSERT_TRUE(membership.Leave(ids[3], kStart).ok());
  std::optional<MemberAssignment> rank0 = membership.AssignmentOf(ids[0]);
  ASSERT_TRUE(rank0.has_value());
  EXPECT_EQ(rank0->generation, 2u);
  EXPECT_EQ(rank0->shards, std::vector<std::string>{"shard-a.test:8000"});
  ASSERT_EQ(rank0->departed_shards.size(), 1u);
  EXPECT_EQ(rank0->departed_shards[0].address, "shard-b.test:8000");
  EXPECT_EQ(rank0->departed_shards[0].credential, departing_credential);
  EXPECT_TRUE(membership.AssignmentOf(ids[1])->departed_shards.empty()) << "rank 0 reads alone";
  EXPECT_TRUE(membership.AssignmentOf(ids[2])->departed_shards.empty()) << "nor do shards";

  // A worker leaving forms another generation; the departed shard is still offered in it.
  ASSERT_TRUE(membership.Leave(ids[1], kStart).ok());
  EXPECT_EQ(membership.AssignmentOf(ids[0])->departed_shards.size(), 1u);
  EXPECT_EQ(membership.Record().members.size(), 2u) << "a departed shard is no member";

  // Within the timeout the offer stands; past it, it ends.
  for (uint64_t id : {ids[0], ids[2]}) {
    ASSERT_TRUE(membership.Heartbeat(id, 3, kStart + absl::Seconds(5)).ok());
  }
  membership.Expire(kStart + absl::Seconds(5));
  EXPECT_EQ(membership.AssignmentOf(ids[0])->departed_shards.size(), 1u);
  for (uint64_t id : {ids[0], ids[2]}) {
    ASSERT_TRUE(membership.Heartbeat(id, 3, kStart + absl::Seconds(6)).ok());
  }
  membership.Expire(kStart + absl::Seconds(6));
  EXPECT_TRUE(membership.AssignmentOf(ids[0])->departed_shards.empty());
  EXPECT_EQ(membership.topology().generation, 3u) << "an ended offer starts no generation";

  // A replacement at the departed shard's address ends the offer at once.
  ASSERT_TRUE(membership.Leave(ids[2], kStart + absl::Seconds(6)).ok());
  EXPECT_EQ(membership.AssignmentOf(ids[0])->departed_shards.size(), 1u);
  ASSERT_TRUE(membership
                  .Register("s3cret", MemberRole::kShard, "shard-a.test:8000",
                            kStart + absl::Seconds(6), kCredential)
                  .ok());
  EXPECT_TRUE(membership.AssignmentOf(ids[0])->departed_shards.empty());
}

TEST(MembershipTest, ALateWorkerAndAModeSwitchEachStartAGeneration) {
  Membership membership(TwoWorkersOneShard());
  for (const char* address : {"worker-a.test:7000", "worker-b.test:7000"}) {
    ASSERT_TRUE(
        membership.Register("s3cret", MemberRole::kWorker, address, kStart, kCredential).ok());
  }
  ASSERT_TRUE(
      membership.Register("s3cret", MemberRole::kShard, "shard-a.test:8000", kStart, kCredential)
          .ok());
  auto late =
      membership.Register("s3cret", MemberRole::kWorker, "worker-c.test:7000", kStart, kCredential);
  ASSERT_TRUE(late.ok());
  EXPECT_EQ(membership.topology().generation, 2u);
  EXPECT_EQ(membership.AssignmentOf(*late)->rank, 2);
  auto generation = membership.SetMode(SyncMode::kPs);
  ASSERT_TRUE(generation.ok());
  EXPECT_EQ(*generation, 3u);
  EXPECT_EQ(membership.AssignmentOf(*late)->mode, SyncMode::kPs);
}

// A process restarted at the same address (an orchestrator's replacement) takes the old one's
// place: before formation, after it (same rank or shard index, new generation), and the old id
// is gone for good.
TEST(MembershipTest, ARegistrationAtALiveMembersAddressReplacesIt) {
  Membership membership(TwoWorkersOneShard());
  auto w0 =
      membership.Register("s3cret", MemberRole::kWorker, "worker-a.test:7000", kStart, kCredential);
  auto w0_again =
      membership.Register("s3cret", MemberRole::kWorker, "worker-a.test:7000", kStart, kCredential);
  ASSERT_TRUE(w0.ok() && w0_again.ok());
  EXPECT_FALSE(membership.IsMember(*w0));
  EXPECT_EQ(membership.topology().generation, 0u) << "one worker is still one worker";
  auto w1 =
      membership.Register("s3cret", MemberRole::kWorker, "worker-b.test:7000", kStart, kCredential);
  auto s0 =
      membership.Register("s3cret", MemberRole::kShard, "shard-a.test:8000", kStart, kCredential);
  ASSERT_TRUE(w1.ok() && s0.ok());
  ASSERT_EQ(membership.topology().generation, 1u);

  auto s0_replacement =
      membership.Register("s3cret", MemberRole::kShard, "shard-a.test:8000", kStart, kCredential);
  ASSERT_TRUE(s0_replacement.ok());
  EXPECT_EQ(membership.topology().generation, 2u);
  EXPECT_EQ(membership.topology().shards, std::vector<uint64_t>{*s0_replacement});
  EXPECT_EQ(membership.AssignmentOf(*s0_replacement)->shard, 0);
  EXPECT_EQ(membership.Heartbeat(*s0, 2, kStart).code(), absl::StatusCode::kNotFound);

  // A worker's replacement keeps its rank; a shard at a worker's address is another member.
  auto w1_replacement =
      membership.Register("s3cret", MemberRole::kWorker, "worker-b.test:7000", kStart, kCredential);
  ASSERT_TRUE(w1_replacement.ok());
  EXPECT_EQ(membership.topology().generation, 3u);
  EXPECT_EQ(membership.AssignmentOf(*w1_replacement)->rank, 1);
  EXPECT_EQ(membership.topology().workers.size(), 2u);
}

MembershipConfig TwoWorkersThreeShards() {
  MembershipConfig config = TwoWorkersOneShard();
  config.ps_shards = 3;
  return config;
}

// Every member but `silent` heartbeats at `now` (past the heartbeat timeout of `silent`'s last
// heartbeat), and the expiry at `now` drops exactly `silent`.
void DropWhileAlive(Membership& membership, uint64_t silent, absl::Time now) {
  const Topology topology = membership.topology();
  for (const std::vector<uint64_t>* list : {&topology.workers, &topology.shards}) {
    for (uint64_t id : *list) {
      if (id == silent) continue;
      ASSERT_TRUE(membership.Heartbeat(id, topology.generation, now).ok());
    }
  }
  ASSERT_EQ(membership.Expire(now), std::vector<uint64_t>{silent});
}

// Issue 23: a shard dropped while alive registers again at its address and gets its shard index
// back (so the range it served); a new shard takes the first vacant place, then new last ones.
TEST(MembershipTest, AShardDroppedWhileAliveRegistersAgainAtItsPlace) {
  Membership membership(TwoWorkersThreeShards());
  const std::vector<std::string> addresses = {"shard-a.test:8000", "shard-b.test:8000",
                                              "shard-c.test:8000"};
  std::vector<uint64_t> shards;
  for (const char* worker : {"worker-a.test:7000", "worker-b.test:7000"}) {
    ASSERT_TRUE(
        membership.Register("s3cret", MemberRole::kWorker, worker, kStart, kCredential).ok());
  }
  for (const std::string& address : addresses) {
    auto id = membership.Register("s3cret", MemberRole::kShard, address, kStart, kCredential);
    ASSERT_TRUE(id.ok());
    shards.push_back(*id);
  }
  ASSERT_EQ(membership.topology().generation, 1u);

  ASSERT_NO_FATAL_FAILURE(DropWhileAlive(membership, shards[1], kStart + absl::Seconds(10)));
  EXPECT_EQ(membership.topology().generation, 2u);
  EXPECT_EQ(membership.topology().shards, (std::vector<uint64_t>{shards[0], shards[2]}));
  EXPECT_EQ(membership.AssignmentOf(shards[2])->shard, 1) << "two shards: EvenRanges(K, 2)";

  const std::string fresh(40, 'f');
  auto again = membership.Register("s3cret", MemberRole::kShard, addresses[1],
                                   kStart + absl::Seconds(11), fresh, /*generation_seen=*/1);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_NE(*again, shards[1]) << "a new id";
  EXPECT_EQ(membership.topology().generation, 3u);
  EXPECT_EQ(membership.topology().shards, (std::vector<uint64_t>{shards[0], *again, shards[2]}));
  EXPECT_EQ(membership.AssignmentOf(*again)->shard, 1) << "its old index, so its old range";
  EXPECT_EQ(membership.AssignmentOf(shards[2])->shard, 2);
  EXPECT_EQ(membership.CredentialOf(*again), fresh);
  EXPECT_EQ(membership.Heartbeat(shards[1], 3, kStart).code(), absl::StatusCode::kNotFound)
      << "the old id stays dropped";

  // Another process at a new address fills a vacant place; with none vacant, a new last one.
  ASSERT_NO_FATAL_FAILURE(DropWhileAlive(membership, shards[0], kStart + absl::Seconds(30)));
  auto newcomer = membership.Register("s3cret", MemberRole::kShard, "shard-d.test:8000",
                                      kStart + absl::Seconds(31), kCredential);
  ASSERT_TRUE(newcomer.ok());
  EXPECT_EQ(membership.AssignmentOf(*newcomer)->shard, 0);
  auto extra = membership.Register("s3cret", MemberRole::kShard, "shard-e.test:8000",
                                   kStart + absl::Seconds(31), kCredential);
  ASSERT_TRUE(extra.ok());
  EXPECT_EQ(membership.topology().shards,
            (std::vector<uint64_t>{*newcomer, *again, shards[2], *extra}));
  EXPECT_EQ(membership.topology().generation, 6u);
}

// A worker dropped while alive registers again and joins as a late worker does: the last rank.
TEST(MembershipTest, AWorkerDroppedWhileAliveRegistersAgainAsTheLastRank) {
  Membership membership(TwoWorkersOneShard());
  auto w0 =
      membership.Register("s3cret", MemberRole::kWorker, "worker-a.test:7000", kStart, kCredential);
  auto w1 =
      membership.Register("s3cret", MemberRole::kWorker, "worker-b.test:7000", kStart, kCredential);
  auto s0 =
      membership.Register("s3cret", MemberRole::kShard, "shard-a.test:8000", kStart, kCredential);
  ASSERT_TRUE(w0.ok() && w1.ok() && s0.ok());
  ASSERT_NO_FATAL_FAILURE(DropWhileAlive(membership, *w0, kStart + absl::Seconds(10)));
  EXPECT_EQ(membership.AssignmentOf(*w1)->rank, 0);
  auto again = membership.Register("s3cret", MemberRole::kWorker, "worker-a.test:7000",
                                   kStart + absl::Seconds(11), kCredential, 1);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(membership.topology().generation, 3u);
  EXPECT_EQ(membership.topology().workers, (std::vector<uint64_t>{*w1, *again}));
  EXPECT_EQ(membership.AssignmentOf(*again)->rank, 1);
  EXPECT_FALSE(membership.IsMember(*w0));
}

// A controller restarted without its record learns from the members registering again how far
// the numbering had gone, and numbers every later generation above it; a generation past what a
// member may report is refused, changing nothing.
TEST(MembershipTest, GenerationsGoOnAboveWhatRegisteringMembersHaveSeen) {
  Membership membership(TwoWorkersOneShard());
  EXPECT_EQ(membership
                .Register("s3cret", MemberRole::kWorker, "worker-x.test:7000", kStart, kCredential,
                          kMaxReportedGeneration + 1)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(membership.IsMember(1)) << "nothing registered";
  ASSERT_TRUE(
      membership
          .Register("s3cret", MemberRole::kWorker, "worker-a.test:7000", kStart, kCredential, 7)
          .ok());
  ASSERT_TRUE(
      membership.Register("s3cret", MemberRole::kShard, "shard-a.test:8000", kStart, kCredential, 9)
          .ok());
  ASSERT_TRUE(
      membership.Register("s3cret", MemberRole::kWorker, "worker-b.test:7000", kStart, kCredential)
          .ok());
  EXPECT_EQ(membership.topology().generation, 10u) << "formed above every generation seen";
  ASSERT_TRUE(
      membership
          .Register("s3cret", MemberRole::kWorker, "worker-c.test:7000", kStart, kCredential, 20)
          .ok());
  EXPECT_EQ(membership.topology().generation, 21u);
  auto generation = membership.SetMode(SyncMode::kPs);
  ASSERT_TRUE(generation.ok());
  EXPECT_EQ(*generation, 22u);
}

// What a restarted controller reads back: the same members, ids, topology and numbering, with
// every member counted as seen at the restore; and a record that does not hold together is
// refused whole.
TEST(MembershipTest, ARestoredRecordCarriesOnWithoutGoingBackwards) {
  Membership before(TwoWorkersOneShard());
  auto w0 =
      before.Register("s3cret", MemberRole::kWorker, "worker-a.test:7000", kStart, kCredential);
  auto w1 =
      before.Register("s3cret", MemberRole::kWorker, "worker-b.test:7000", kStart, kCredential);
  auto s0 = before.Register("s3cret", MemberRole::kShard, "shard-a.test:8000", kStart, kCredential);
  ASSERT_TRUE(w0.ok() && w1.ok() && s0.ok());
  ASSERT_TRUE(before.SetMode(SyncMode::kPs).ok());
  const uint64_t version = before.version();
  EXPECT_EQ(before.Heartbeat(*w0, 2, kStart).code(), absl::StatusCode::kOk);
  EXPECT_EQ(before.version(), version) << "heartbeats change nothing durable";

  const absl::Time restart = kStart + absl::Seconds(60);  // far past every heartbeat timeout
  Membership after(TwoWorkersOneShard());
  ASSERT_TRUE(after.Restore(before.Record(), restart).ok());
  EXPECT_EQ(after.topology().generation, 2u);
  EXPECT_EQ(after.topology().mode, SyncMode::kPs);
  EXPECT_EQ(after.AssignmentOf(*w1)->rank, 1);
  EXPECT_TRUE(after.Expire(restart + absl::Seconds(4)).empty()) << "seen at the restore";
  EXPECT_TRUE(after.Heartbeat(*s0, 2, restart).ok());
  auto late =
      after.Register("s3cret", MemberRole::kWorker, "worker-c.test:7000", restart, kCredential);
  ASSERT_TRUE(late.ok());
  EXPECT_GT(*late, *s0) << "ids are never reused";
  EXPECT_EQ(after.topology().generation, 3u);

  MembershipRecord broken = before.Record();
  broken.topology.shards.push_back(*w0);  // a worker named as a shard
  EXPECT_EQ(after.Restore(broken, restart).code(), absl::StatusCode::kInvalidArgument);
  broken = before.Record();
  broken.next_id = 2;  // below an id in use
  EXPECT_EQ(after.Restore(broken, restart).code(), absl::StatusCode::kInvalidArgument);
  broken = before.Record();
  broken.members[0].address = "not a host!:0";
  EXPECT_EQ(after.Restore(broken, restart).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(after.topology().generation, 3u) << "a refused record changes nothing";
}

// Found by tests/fuzz/membership_fuzzer: records the controller took, and what followed.
TEST(MembershipTest, ARecordThatCannotCarryOnIsRefused) {
  Membership before(TwoWorkersOneShard());
  auto w0 =
      before.Register("s3cret", MemberRole::kWorker, "worker-a.test:7000", kStart, kCredential);
  auto w1 =
      before.Register("s3cret", MemberRole::kWorker, "worker-b.test:7000", kStart, kCredential);
  auto s0 = before.Register("s3cret", MemberRole::kShard, "shard-a.test:8000", kStart, kCredential);
  ASSERT_TRUE(w0.ok() && w1.ok() && s0.ok());
  Membership after(TwoWorkersOneShard());

  MembershipRecord broken = before.Record();
  broken.topology.workers.push_back(*w0);  // a ring with one member in two places
  EXPECT_EQ(after.Restore(broken, kStart).code(), absl::StatusCode::kInvalidArgument);
  broken = MembershipRecord{};
  broken.next_id = 0;  // the next registration got id 0, which no record restores
  EXPECT_EQ(after.Restore(broken, kStart).code(), absl::StatusCode::kInvalidArgument);
  broken = before.Record();
  broken.topology.generation = kMaxGeneration + 1;  // the next generation wrapped around to 0
  EXPECT_EQ(after.Restore(broken, kStart).code(), absl::StatusCode::kInvalidArgument);
  broken.topology.generation = kMaxGeneration;
  EXPECT_TRUE(after.Restore(broken, kStart).ok());
}

// A record of generation 0 whose topology already names members (hand-edited): a registration
// replacing one of them still takes its place, and the topology never names a member gone.
TEST(MembershipTest, AReplacementTakesItsPlaceInARestoredTopologyOfGenerationZero) {
  Membership before(TwoWorkersOneShard());
  auto w0 =
      before.Register("s3cret", MemberRole::kWorker, "worker-a.test:7000", kStart, kCredential);
  auto w1 =
      before.Register("s3cret", MemberRole::kWorker, "worker-b.test:7000", kStart, kCredential);
  auto s0 = before.Register("s3cret", MemberRole::kShard, "shard-a.test:8000", kStart, kCredential);
  ASSERT_TRUE(w0.ok() && w1.ok() && s0.ok());
  MembershipRecord record = before.Record();
  record.topology.generation = 0;
  Membership after(TwoWorkersOneShard());
  ASSERT_TRUE(after.Restore(record, kStart).ok());
  auto replacement =
      after.Register("s3cret", MemberRole::kWorker, "worker-a.test:7000", kStart, kCredential);
  ASSERT_TRUE(replacement.ok());
  EXPECT_EQ(after.topology().workers, (std::vector<uint64_t>{*replacement, *w1}));
  EXPECT_EQ(after.topology().generation, 1u);
}

TEST(MembershipTest, IdsAreNeverReusedEvenAtTheEnd) {
  Membership membership(TwoWorkersOneShard());
  MembershipRecord record;
  record.next_id = ~uint64_t{0} - 1;
  ASSERT_TRUE(membership.Restore(record, kStart).ok());
  auto last =
      membership.Register("s3cret", MemberRole::kWorker, "worker-a.test:7000", kStart, kCredential);
  ASSERT_TRUE(last.ok()) << last.status();
  EXPECT_EQ(*last, ~uint64_t{0} - 1);
  auto none =
      membership.Register("s3cret", MemberRole::kWorker, "worker-b.test:7000", kStart, kCredential);
  EXPECT_EQ(none.status().code(), absl::StatusCode::kResourceExhausted) << none.status();
  EXPECT_TRUE(Membership(TwoWorkersOneShard()).Restore(membership.Record(), kStart).ok())
      << "what the controller saves still restores";
}

TEST(MembershipTest, AWorkersFailedGenerationIsReplacedOnceByOneOfTheSameMembers) {
  Membership membership(TwoWorkersOneShard());
  auto w0 =
      membership.Register("s3cret", MemberRole::kWorker, "worker-a.test:7000", kStart, kCredential);
  auto s0 =
      membership.Register("s3cret", MemberRole::kShard, "shard-a.test:8000", kStart, kCredential);
  auto w1 =
      membership.Register("s3cret", MemberRole::kWorker, "worker-b.test:7000", kStart, kCredential);
  ASSERT_TRUE(w0.ok() && s0.ok() && w1.ok());
  const Topology before = membership.topology();
  ASSERT_EQ(before.generation, 1u);
  EXPECT_EQ(membership.ReportFailure(*w1, 1).value_or(0), 2u) << "rule 9: a new generation";
  EXPECT_EQ(membership.ReportFailure(*w0, 1).value_or(99), 0u)
      << "the other member of the failed generation reports it too: no second regroup";
  const Topology after = membership.topology();
  EXPECT_EQ(after.generation, 2u);
  EXPECT_EQ(after.workers, before.workers);
  EXPECT_EQ(after.shards, before.shards);
  EXPECT_EQ(membership.AssignmentOf(*w1)->rank, 1);
  EXPECT_EQ(membership.ReportFailure(*s0, 2).status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(membership.ReportFailure(12345, 2).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(membership.topology().generation, 2u);
}

TEST(MembershipTest, HeartbeatsKeepTheStepsEachMemberCompleted) {
  Membership membership(TwoWorkersOneShard());
  auto w0 =
      membership.Register("s3cret", MemberRole::kWorker, "worker-a.test:7000", kStart, kCredential);
  ASSERT_TRUE(w0.ok());
  ASSERT_TRUE(
      membership.Register("s3cret", MemberRole::kShard, "shard-a.test:8000", kStart, kCredential)
          .ok());
  ASSERT_TRUE(
      membership.Register("s3cret", MemberRole::kWorker, "worker-b.test:7000", kStart, kCredential)
          .ok());
  EXPECT_EQ(membership.CompletedStepsOf(*w0), 0u);
  ASSERT_TRUE(membership.Heartbeat(*w0, 1, kStart, 17).ok());
  EXPECT_EQ(membership.CompletedStepsOf(*w0), 17u);
  EXPECT_FALSE(membership.Heartbeat(*w0, 7, kStart, 99).ok()) << "another generation's";
  EXPECT_EQ(membership.CompletedStepsOf(*w0), 17u) << "a refused heartbeat reports nothing";
}

}  // namespace
}  // namespace ringside::server
