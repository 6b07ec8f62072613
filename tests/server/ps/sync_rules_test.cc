// The parameter server's synchronisation rules alone (server/ps/sync_rules.h): bounded
// staleness's wait, exhaustively over small steps; and backup workers' quorum.
#include "server/ps/sync_rules.h"

#include "gtest/gtest.h"

namespace ringside::server {
namespace {

TEST(SyncRulesTest, AWorkerBlocksExactlyWhenMoreThanStalenessStepsAheadOfTheSlowest) {
  for (int64_t staleness = 0; staleness <= 4; ++staleness) {
    for (int64_t step = 0; step <= 12; ++step) {
      for (int64_t slowest = 0; slowest <= 12; ++slowest) {
        EXPECT_EQ(MayStartStep(staleness, step, slowest), step - slowest <= staleness)
            << "staleness " << staleness << ", step " << step << ", slowest " << slowest;
      }
    }
  }
}

TEST(SyncRulesTest, StalenessZeroIsLockStep) {
  // Step c needs every worker to have completed c steps: nobody starts step 3 while one of them
  // has completed only 2.
  EXPECT_TRUE(MayStartStep(0, 0, 0));
  EXPECT_TRUE(MayStartStep(0, 3, 3));
  EXPECT_FALSE(MayStartStep(0, 3, 2));
  EXPECT_FALSE(MayStartStep(0, 1, 0));
}

TEST(SyncRulesTest, StalenessTwoLetsAWorkerRunTwoStepsAheadAndNoMore) {
  EXPECT_TRUE(MayStartStep(2, 5, 3));   // the slowest completed step 2 (3 steps): 5 - 2 = 3 ahead
  EXPECT_FALSE(MayStartStep(2, 6, 3));  // 3 ahead
  EXPECT_TRUE(MayStartStep(2, 6, 4));   // released once the slowest completes one more
}

TEST(SyncRulesTest, AsyncNeverBlocks) {
  for (int64_t step = 0; step <= 1000; step += 97) {
    EXPECT_TRUE(MayStartStep(kAsyncStaleness, step, 0));
  }
}

TEST(SyncRulesTest, BackupQuorumIsAllButTheBackupsAndAtLeastOne) {
  EXPECT_EQ(BackupQuorum(4, 0), 4);
  EXPECT_EQ(BackupQuorum(4, 1), 3);
  EXPECT_EQ(BackupQuorum(4, 3), 1);
  EXPECT_EQ(BackupQuorum(4, 4), 1);  // a generation shrunk below b + 1 still trains
  EXPECT_EQ(BackupQuorum(1, 1), 1);
}

}  // namespace
}  // namespace ringside::server
