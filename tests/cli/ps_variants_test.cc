// --ps_variants: the list's syntax, and each variant checked against the job's other settings.
#include "cli/ps_variants.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ringside::cli {
namespace {

using ::testing::HasSubstr;

TEST(PsVariantsTest, ParsesTheFourVariantsInOrder) {
  const absl::StatusOr<std::vector<PsVariant>> variants =
      ParsePsVariants("sync,staleness=2,backup_workers=1,async");
  ASSERT_TRUE(variants.ok()) << variants.status();
  ASSERT_EQ(variants->size(), 4u);
  EXPECT_EQ((*variants)[0].name, "sync");
  EXPECT_EQ((*variants)[0].staleness, 0);
  EXPECT_EQ((*variants)[0].backup_workers, 0);
  EXPECT_EQ((*variants)[1].name, "staleness=2");
  EXPECT_EQ((*variants)[1].staleness, 2);
  EXPECT_EQ((*variants)[2].name, "backup_workers=1");
  EXPECT_EQ((*variants)[2].backup_workers, 1);
  EXPECT_EQ((*variants)[2].staleness, 0);
  EXPECT_EQ((*variants)[3].name, "async");
  EXPECT_EQ((*variants)[3].staleness, kAsyncStaleness);
}

TEST(PsVariantsTest, StalenessAsyncIsTheAsyncVariant) {
  const absl::StatusOr<std::vector<PsVariant>> variants = ParsePsVariants("staleness=async");
  ASSERT_TRUE(variants.ok()) << variants.status();
  EXPECT_EQ((*variants)[0].name, "staleness=async");
  EXPECT_EQ((*variants)[0].staleness, kAsyncStaleness);
}

TEST(PsVariantsTest, NoStragglerRunsAVariantWithoutTheJobsStraggler) {
  const absl::StatusOr<std::vector<PsVariant>> variants = ParsePsVariants("sync,sync/no_straggler");
  ASSERT_TRUE(variants.ok()) << variants.status();
  ASSERT_EQ(variants->size(), 2u);
  EXPECT_FALSE((*variants)[0].without_straggler);
  EXPECT_EQ((*variants)[1].name, "sync/no_straggler");
  EXPECT_TRUE((*variants)[1].without_straggler);
  EXPECT_EQ((*variants)[1].staleness, 0);
  TrainingOptions job;
  job.straggler = Straggler{3, 3.0f};
  const absl::StatusOr<TrainingOptions> with = WithPsVariant(job, (*variants)[0]);
  const absl::StatusOr<TrainingOptions> without = WithPsVariant(job, (*variants)[1]);
  ASSERT_TRUE(with.ok() && without.ok());
  EXPECT_EQ(with->straggler, job.straggler);
  EXPECT_EQ(without->straggler, Straggler());
}

TEST(PsVariantsTest, RefusesWhatIsNotAVariantNamingIt) {
  for (const char* text :
       {"", "sync,", "fast", "staleness=0", "staleness=-1", "staleness=x", "backup_workers=0",
        "backup_workers=two", "colour=red", "/no_straggler", "sync/no_stragglers"}) {
    const absl::StatusOr<std::vector<PsVariant>> variants = ParsePsVariants(text);
    ASSERT_FALSE(variants.ok()) << text;
    EXPECT_EQ(variants.status().code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_THAT(variants.status().message(), HasSubstr("--ps_variants")) << text;
  }
}

TEST(PsVariantsTest, RefusesARepeat) {
  const absl::StatusOr<std::vector<PsVariant>> variants = ParsePsVariants("sync,async,sync");
  ASSERT_FALSE(variants.ok());
  EXPECT_THAT(variants.status().message(), HasSubstr("sync is listed twice"));
}

TEST(PsVariantsTest, AVariantReplacesTheJobsSyncSettingsOnly) {
  TrainingOptions job;
  job.steps = 77;
  job.staleness = 3;
  const absl::StatusOr<TrainingOptions> sync = WithPsVariant(job, PsVariant{"sync", 0, 0});
  ASSERT_TRUE(sync.ok()) << sync.status();
  EXPECT_EQ(sync->staleness, 0);
  EXPECT_EQ(sync->steps, 77);
  const absl::StatusOr<TrainingOptions> backups =
      WithPsVariant(job, PsVariant{"backup_workers=1", 0, 1});
  ASSERT_TRUE(backups.ok()) << backups.status();
  EXPECT_EQ(backups->staleness, 0);
  EXPECT_EQ(backups->backup_workers, 1);
}

TEST(PsVariantsTest, AVariantTheJobCannotTakeIsRefusedNamingIt) {
  TrainingOptions job;
  job.wire_dtype = WireDtype::kFp16;  // the stale modes push float32
  const absl::StatusOr<TrainingOptions> stale = WithPsVariant(job, PsVariant{"staleness=2", 2, 0});
  ASSERT_FALSE(stale.ok());
  EXPECT_THAT(stale.status().message(), HasSubstr("--ps_variants=staleness=2"));
  EXPECT_THAT(stale.status().message(), HasSubstr("--wire_dtype=fp16"));
}

}  // namespace
}  // namespace ringside::cli
