// `ringside lab --slow_link`: the flag's parsing and host check, each mode's bound at per-host
// rates with the line saying what it waits for, and where the table and the JSON show them.
#include "cli/lab_bound.h"

#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cli/sample_report.h"

namespace ringside::cli {
namespace {

using ::testing::HasSubstr;

// A step's deadline in the lab: the default where links are fast, and three times the busiest
// link's step (one shard taking N float32 shares) at the slowest rate where that is longer.
TEST(LabCollectiveTimeoutTest, GrowsWithTheBusiestLinksStepAtTheSlowestRate) {
  const absl::Duration floor = absl::Seconds(30);
  const LinkRate fast = ParseLinkRate("1gbit").value();
  const LinkRate slow = ParseLinkRate("10mbit").value();
  EXPECT_EQ(LabCollectiveTimeout({fast, {}}, 8, 1863690, floor), floor);
  // 8 × 1,863,690 × 4 bytes at 10 Mbit/s's payload share: 51.0 s, thrice.
  const double step = 8.0 * 1863690 * 4 / slow.payload_bytes_per_second();
  EXPECT_NEAR(absl::ToDoubleSeconds(LabCollectiveTimeout({slow, {}}, 8, 1863690, floor)),
              kLabTimeoutMargin * step, 1e-6);
  // One slow host is the slowest rate.
  EXPECT_NEAR(
      absl::ToDoubleSeconds(LabCollectiveTimeout({fast, {{"worker-3", slow}}}, 8, 1863690, floor)),
      kLabTimeoutMargin * step, 1e-6);
  EXPECT_EQ(LabCollectiveTimeout({slow, {}}, 2, 1000, floor), floor);
}

TEST(SlowLinksTest, ParsesRepeatedFlagsAndCommaLists) {
  auto links = ParseSlowLinks({"worker-3:20mbit,ps-0:1gbit", "worker-1:500kbit"});
  ASSERT_TRUE(links.ok()) << links.status();
  ASSERT_EQ(links->size(), 3u);
  EXPECT_EQ(links->at("worker-3").text, "20mbit");
  EXPECT_DOUBLE_EQ(links->at("worker-3").bits_per_second, 20e6);
  EXPECT_DOUBLE_EQ(links->at("ps-0").bits_per_second, 1e9);
  EXPECT_DOUBLE_EQ(links->at("worker-1").bits_per_second, 500e3);
  EXPECT_TRUE(ParseSlowLinks({}).value().empty());
}

TEST(SlowLinksTest, RefusesWhatIsNotHostColonRateNamingIt) {
  for (const char* bad : {"worker-3", ":20mbit", "worker-3:fast", "worker-3:", "worker-3:0mbit"}) {
    auto links = ParseSlowLinks({bad});
    ASSERT_FALSE(links.ok()) << bad;
    EXPECT_EQ(links.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(links.status().message()), HasSubstr("--slow_link")) << bad;
  }
  auto twice = ParseSlowLinks({"worker-1:20mbit", "worker-1:10mbit"});
  ASSERT_FALSE(twice.ok());
  EXPECT_THAT(std::string(twice.status().message()), HasSubstr("more than once"));
}

TEST(SlowLinksTest, AHostMustBeOneOfTheLabs) {
  const std::vector<std::string> hosts = {"controller", "ps-0", "worker-0", "worker-1"};
  EXPECT_TRUE(CheckSlowLinkHosts(ParseSlowLinks({"worker-1:1mbit"}).value(), hosts).ok());
  const absl::Status unknown =
      CheckSlowLinkHosts(ParseSlowLinks({"worker-7:1mbit"}).value(), hosts);
  EXPECT_EQ(unknown.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(unknown.message()), HasSubstr("'worker-7' is not a host of this lab"));
  EXPECT_THAT(std::string(unknown.message()), HasSubstr("worker-0, worker-1"));
}

JobConfig LabConfig() {
  JobConfig config;
  config.workers = 4;
  config.ps_shards = 2;
  config.parameters = 840 * 1000;
  config.element_bytes = 4;
  config.link_rate = "100mbit";
  return config;
}

ModeReport Mode(SyncMode mode, bool colocated = false) {
  ModeReport report;
  report.mode = mode;
  report.colocated = colocated;
  report.final_world = 4;
  return report;
}

TEST(LabBoundTest, EachModeSaysWhichNodeItWaitsForWithItsBytesAndRate) {
  const LabRates rates{ParseLinkRate("100mbit").value(),
                       ParseSlowLinks({"worker-3:20mbit"}).value()};
  const JobConfig config = LabConfig();
  const double k_bytes = 840 * 1000 * 4;

  ModeReport ring = Mode(SyncMode::kRing);
  FillLabBound(rates, config, 2, ring);
  EXPECT_EQ(ring.bottleneck_node, "worker-3");
  EXPECT_DOUBLE_EQ(ring.bound_seconds_per_step, 1.5 * k_bytes / (20e6 / 8));
  EXPECT_THAT(ring.bottleneck, HasSubstr("ring: every step waits for worker-3's link: "
                                         "2(N\u22121)/N\u00b7K\u00b74 B = "));
  EXPECT_THAT(ring.bottleneck, HasSubstr("at 20mbit"));

  // A shard takes N·K/S = 2K at 100mbit; worker-3's K at 20mbit takes 2.5× as long.
  ModeReport ps = Mode(SyncMode::kPs);
  FillLabBound(rates, config, 2, ps);
  EXPECT_EQ(ps.bottleneck_node, "worker-3");
  EXPECT_DOUBLE_EQ(ps.bound_seconds_per_step, k_bytes / (20e6 / 8));
  EXPECT_THAT(ps.bottleneck, HasSubstr("ps: every step waits for worker-3's link: K\u00b74 B"));

  // Without the slow link the shard is the limit.
  ModeReport uniform = Mode(SyncMode::kPs);
  FillLabBound({rates.link_rate, {}}, config, 2, uniform);
  EXPECT_EQ(uniform.bottleneck_node, "ps-0");
  EXPECT_THAT(uniform.bottleneck, HasSubstr("N\u00b7K/S\u00b74 B"));
  EXPECT_THAT(uniform.bottleneck, HasSubstr("at 100mbit"));

  // Colocated (S = N): each host carries 2(N-1)K/N each way, the ring's.
  ModeReport colocated = Mode(SyncMode::kPs, /*colocated=*/true);
  FillLabBound(rates, config, 4, colocated);
  EXPECT_EQ(colocated.bottleneck_node, "worker-3");
  EXPECT_DOUBLE_EQ(colocated.bound_seconds_per_step, ring.bound_seconds_per_step);
  EXPECT_THAT(colocated.bottleneck, HasSubstr("ps colocated: every step waits for worker-3's"));
}

// Backup workers and async leave a slow worker behind: its link paces only itself.
TEST(LabBoundTest, BackupWorkersAndAsyncDoNotWaitForTheSlowestWorkersLink) {
  const LabRates rates{ParseLinkRate("100mbit").value(),
                       ParseSlowLinks({"worker-3:20mbit"}).value()};
  TrainingOptions backup;
  backup.backup_workers = 1;
  EXPECT_EQ(WorkersNotWaitedFor(backup, 4), 1);
  TrainingOptions async;
  async.staleness = kAsyncStaleness;
  EXPECT_EQ(WorkersNotWaitedFor(async, 4), 3);
  TrainingOptions stale;
  stale.staleness = 2;  // paced by the slowest on average
  EXPECT_EQ(WorkersNotWaitedFor(stale, 4), 0);
  EXPECT_EQ(WorkersNotWaitedFor(TrainingOptions(), 4), 0);

  ModeReport ps = Mode(SyncMode::kPs);
  FillLabBound(rates, LabConfig(), 2, ps, WorkersNotWaitedFor(backup, 4));
  EXPECT_EQ(ps.bottleneck_node, "ps-0");  // worker-3 left out: the shards' N·K/S at 100mbit
  EXPECT_THAT(ps.bottleneck, HasSubstr("the first N\u22121 workers"));
  EXPECT_THAT(ps.bottleneck, HasSubstr("the 1 slowest workers' links pace only themselves"));
  ModeReport ring = Mode(SyncMode::kRing);  // no ring step leaves anyone out
  FillLabBound(rates, LabConfig(), 2, ring, 1);
  EXPECT_EQ(ring.bottleneck_node, "worker-3");
}

// A compressed run moves the codec's bytes, not K's: its bound is its links' expected bytes
// (what the cost model says the codec sends) at their rates.
TEST(LabBoundTest, ACompressedRunIsBoundByItsCodecsBytes) {
  const LabRates rates{ParseLinkRate("100mbit").value(),
                       ParseSlowLinks({"worker-1:20mbit"}).value()};
  ModeReport ps = Mode(SyncMode::kPs);
  ps.final_world = 2;
  ps.compression = "topk:0.01";
  // Two workers, two shards: every push 1000 B and every reply 1000 B, but ps-1's replies
  // 1500 B (its range is larger).
  for (const char* worker : {"worker-0", "worker-1"}) {
    ps.links.push_back({worker, "ps-0", 1000, 1000});
    ps.links.push_back({worker, "ps-1", 1000, 1000});
    ps.links.push_back({"ps-0", worker, 1000, 1000});
    ps.links.push_back({"ps-1", worker, 1500, 1500});
  }
  FillLabBound(rates, LabConfig(), 2, ps);
  // worker-1 receives 2500 B a step at 20mbit: 1 ms, against ps-1's 3000 B at 100mbit.
  EXPECT_EQ(ps.bottleneck_node, "worker-1");
  EXPECT_DOUBLE_EQ(ps.bound_seconds_per_step, 2500 / (20e6 / 8));
  EXPECT_THAT(ps.bottleneck, HasSubstr("the topk:0.01 codec's bytes on its links = "));
  // Uniform links: ps-1 sends 3000 B, the most of any node either way.
  ModeReport uniform = ps;
  FillLabBound({rates.link_rate, {}}, LabConfig(), 2, uniform);
  EXPECT_EQ(uniform.bottleneck_node, "ps-1");
  EXPECT_DOUBLE_EQ(uniform.bound_seconds_per_step, 3000 / (100e6 / 8));
}

TEST(LabBoundTest, TableAndJsonCarryTheBottleneckAndTheSlowLinks) {
  JobComparison job = testing::SyntheticJob();
  job.config.link_rate = "100mbit";
  job.config.slow_links = {{"worker-3", "20mbit"}};
  const LabRates rates{ParseLinkRate("100mbit").value(),
                       ParseSlowLinks({"worker-3:20mbit"}).value()};
  FillLabBound(rates, job.config, job.config.ps_shards, job.ring);
  FillLabBound(rates, job.config, job.config.ps_shards, job.ps);

  std::ostringstream table;
  PrintComparisonTable(job, table);
  EXPECT_THAT(table.str(), HasSubstr("bound at 100mbit (worker-3: 20mbit)"));
  EXPECT_THAT(table.str(), HasSubstr("waits for"));
  EXPECT_THAT(table.str(), HasSubstr("ring: every step waits for worker-3's link"));

  const nlohmann::json json = JobJson(job);
  EXPECT_EQ(json["config"]["slow_links"]["worker-3"], "20mbit");
  EXPECT_EQ(json["modes"]["ring"]["bottleneck_node"], "worker-3");
  EXPECT_EQ(json["modes"]["ring"]["bottleneck"], job.ring.bottleneck);
  EXPECT_GT(json["modes"]["ps"]["bound_seconds_per_step"].get<double>(), 0);
}

// --colocate's run is a third, optional report: absent from the JSON without it, named
// "ps colocated" in the events and the model's explanation with it.
TEST(LabBoundTest, TheColocatedRunIsAThirdOptionalMode) {
  JobComparison job = testing::SyntheticJob();
  EXPECT_FALSE(JobJson(job)["modes"].contains("ps_colocated"));
  ModeReport& colocated = job.ps_colocated.emplace(job.ps);
  colocated.colocated = true;
  colocated.completed = false;
  colocated.failure = "a shard died";
  const nlohmann::json json = JobJson(job);
  EXPECT_EQ(json["modes"]["ps_colocated"]["colocated"], true);
  EXPECT_EQ(json["modes"]["ps_colocated"]["ps_shards"], job.config.workers);
  EXPECT_EQ(json["modes"]["ps_colocated"]["failure"], "a shard died");
  std::ostringstream table;
  PrintComparisonTable(job, table);
  EXPECT_THAT(table.str(), HasSubstr("ps colocated: FAILED: a shard died"));
  EXPECT_THAT(table.str(), HasSubstr("ps colocated: S = N = 4 shards"));
}

}  // namespace
}  // namespace ringside::cli
