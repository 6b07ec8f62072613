#include "bench/ring_report.h"

#include "bench/ps_runner.h"
#include "bench/ring_runner.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ringside::bench {
namespace {

using ::testing::DoubleNear;
using ::testing::HasSubstr;

TEST(BandwidthTest, NcclTestsDefinitions) {
  EXPECT_DOUBLE_EQ(AlgBandwidth(1'000'000'000, 0.5), 2e9);
  EXPECT_EQ(AlgBandwidth(100, 0), 0);
  EXPECT_DOUBLE_EQ(BusBandwidth(2e9, 2), 2e9);  // 2(N-1)/N = 1
  EXPECT_DOUBLE_EQ(BusBandwidth(2e9, 4), 3e9);  // 1.5
  EXPECT_DOUBLE_EQ(BusBandwidth(1e9, 8), 1.75e9);
}

CellResult Cell(Implementation implementation, int world, int64_t bytes, double seconds) {
  CellResult cell;
  cell.spec.implementation = implementation;
  cell.spec.workers = world;
  cell.spec.elements = bytes / 4;
  cell.spec.iters = 5;
  cell.seconds_per_op = seconds;
  cell.check_ok = true;
  return cell;
}

TEST(BuildRowsTest, RatiosAgainstGlooRingOfTheSameCell) {
  std::vector<CellResult> cells = {
      Cell(Implementation::kRingside, 4, 1 << 20, 0.001),
      Cell(Implementation::kGlooAllreduceRing, 4, 1 << 20, 0.002),
      Cell(Implementation::kGlooRingChunked, 4, 1 << 20, 0.004),
      Cell(Implementation::kRingside, 2, 1 << 20, 0.001),  // no Gloo ring cell for N=2
  };
  cells.push_back(Cell(Implementation::kGlooAllreduceRing, 2, 64 << 10, 0));
  cells.back().status = absl::DeadlineExceededError("timed out");
  cells.back().check_ok = false;

  const std::vector<ReportRow> rows = BuildRows(cells);
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_EQ(rows[0].cell.implementation, "ringside");
  EXPECT_DOUBLE_EQ(rows[0].algbw_gbps, (1 << 20) / 0.001 / 1e9);
  EXPECT_DOUBLE_EQ(rows[0].busbw_gbps, rows[0].algbw_gbps * 1.5);
  ASSERT_TRUE(rows[0].ratio_vs_gloo.has_value());
  EXPECT_THAT(*rows[0].ratio_vs_gloo, DoubleNear(2.0, 1e-12));
  EXPECT_THAT(*rows[1].ratio_vs_gloo, DoubleNear(1.0, 1e-12));
  EXPECT_THAT(*rows[2].ratio_vs_gloo, DoubleNear(0.5, 1e-12));
  EXPECT_FALSE(rows[3].ratio_vs_gloo.has_value());
  EXPECT_FALSE(rows[4].cell.ran);
  EXPECT_THAT(rows[4].cell.error, HasSubstr("timed out"));

  const std::string table = FormatTable(rows);
  EXPECT_THAT(table, HasSubstr("gloo_ring_chunked"));
  EXPECT_THAT(table, HasSubstr("1MiB"));
  EXPECT_THAT(table, HasSubstr("ERROR"));
  EXPECT_THAT(table, HasSubstr("errors:\n  gloo_allreduce_ring N=2 64KiB: DEADLINE_EXCEEDED"));

  const nlohmann::json json = ToJson(rows);
  EXPECT_EQ(json["benchmark"], "ring");
  const nlohmann::json& records = json["records"];
  ASSERT_EQ(records.size(), 5u);
  for (const char* field : {"implementation", "workers", "shards", "bytes", "seconds_per_op",
                            "algbw", "busbw", "check_ok"}) {
    EXPECT_TRUE(records[0].contains(field)) << field;
  }
  EXPECT_EQ(records[0]["workers"], 4);
  EXPECT_EQ(records[0]["bytes"], 1 << 20);
  EXPECT_EQ(records[0]["check_ok"], true);
  EXPECT_DOUBLE_EQ(records[0]["busbw"].get<double>(), rows[0].busbw_gbps);
  EXPECT_TRUE(records[4]["seconds_per_op"].is_null());
  EXPECT_EQ(records[4]["check_ok"], false);
  EXPECT_THAT(records[4]["error"].get<std::string>(), HasSubstr("timed out"));
}

// The table and the JSON users read, byte for byte: a refactoring must not move a character.
TEST(BuildRowsTest, TableAndJsonAreExactlyAsPublished) {
  std::vector<CellResult> cells = {
      Cell(Implementation::kRingside, 4, 1 << 20, 0.0012345),
      Cell(Implementation::kGlooAllreduceRing, 4, 1 << 20, 0.0023),
      Cell(Implementation::kGlooRingChunked, 4, 1 << 20, 1.5),
      Cell(Implementation::kRingside, 2, 64 << 10, 0.0000421),
  };
  cells[2].check_ok = false;
  cells[2].max_abs_error = 0.25;
  cells.push_back(Cell(Implementation::kGlooAllreduceRing, 2, 64 << 10, 0));
  cells.back().status = absl::DeadlineExceededError("timed out");
  cells.back().check_ok = false;
  const std::vector<ReportRow> rows = BuildRows(cells);
  EXPECT_EQ(
      FormatTable(rows),
      "implementation         N     size  iters      time/op algbw GB/s busbw GB/s check  "
      "busbw/gloo_ring\n"
      "ringside               4     1MiB      5     1.234 ms      0.849      1.274 ok     1.86\n"
      "gloo_allreduce_ring    4     1MiB      5     2.300 ms      0.456      0.684 ok     1.00\n"
      "gloo_ring_chunked      4     1MiB      5      1.500 s      0.001      0.001 WRONG  0.00\n"
      "ringside               2    64KiB      5      42.1 us      1.557      1.557 ok     -\n"
      "gloo_allreduce_ring    2    64KiB      5            -          -          - ERROR  -\n"
      "errors:\n"
      "  gloo_allreduce_ring N=2 64KiB: DEADLINE_EXCEEDED: timed out\n");
  EXPECT_EQ(
      ToJson(rows).dump(),
      R"json({"benchmark":"ring","records":[{"algbw":0.8493932766302147,"busbw":1.274089914945322,)json"
      R"json("busbw_ratio_vs_gloo_allreduce_ring":1.8631024706358852,"bytes":1048576,)json"
      R"json("check_ok":true,"elements":262144,"implementation":"ringside","iters":5,)json"
      R"json("max_abs_error":0.0,"seconds_per_op":0.0012345,"shards":0,"workers":4},)json"
      R"json({"algbw":0.4559026086956522,"busbw":0.6838539130434782,)json"
      R"json("busbw_ratio_vs_gloo_allreduce_ring":1.0,"bytes":1048576,"check_ok":true,)json"
      R"json("elements":262144,"implementation":"gloo_allreduce_ring","iters":5,)json"
      R"json("max_abs_error":0.0,"seconds_per_op":0.0023,"shards":0,"workers":4},)json"
      R"json({"algbw":0.0006990506666666666,"busbw":0.001048576,)json"
      R"json("busbw_ratio_vs_gloo_allreduce_ring":0.0015333333333333336,"bytes":1048576,)json"
      R"json("check_ok":false,"elements":262144,"implementation":"gloo_ring_chunked","iters":5,)json"
      R"json("max_abs_error":0.25,"seconds_per_op":1.5,"shards":0,"workers":4},)json"
      R"json({"algbw":1.5566745843230405,"busbw":1.5566745843230405,)json"
      R"json("busbw_ratio_vs_gloo_allreduce_ring":null,"bytes":65536,"check_ok":true,)json"
      R"json("elements":16384,"implementation":"ringside","iters":5,"max_abs_error":0.0,)json"
      R"json("seconds_per_op":4.21e-05,"shards":0,"workers":2},)json"
      R"json({"algbw":null,"busbw":null,"busbw_ratio_vs_gloo_allreduce_ring":null,"bytes":65536,)json"
      R"json("check_ok":false,"elements":16384,"error":"DEADLINE_EXCEEDED: timed out",)json"
      R"json("implementation":"gloo_allreduce_ring","iters":5,"max_abs_error":0.0,)json"
      R"json("seconds_per_op":null,"shards":0,"workers":2}],)json"
      R"json("units":{"algbw":"GB/s (1e9 bytes/s): bytes / seconds_per_op",)json"
      R"json("busbw":"GB/s: algbw * 2(N-1)/N","seconds_per_op":"seconds (slowest rank's median)"}})json");
}

TEST(RunnerTest, DefaultItersScaleWithSize) {
  EXPECT_EQ(DefaultIters(4), 1000);
  EXPECT_EQ(DefaultIters(1 << 20), 512);
  EXPECT_EQ(DefaultIters(16 << 20), 32);
  EXPECT_EQ(DefaultIters(int64_t{1} << 30), 5);
}

TEST(RunnerTest, RingsideRankArgvFollowsTheRankCli) {
  RunnerConfig config;
  config.rank_binary = "/bin/ringside-bench";
  config.segment_bytes = 4096;
  CellSpec spec;
  spec.workers = 3;
  spec.elements = 256;
  spec.iters = 7;
  spec.warmup = 1;
  EXPECT_THAT(RingsideWorkerArgv(config, spec, 2, {5001, 5002, 5003}, "/tmp/r.json"),
              ::testing::ElementsAre("/bin/ringside-bench", "ring-rank", "--rank=2",
                                     "--peers=127.0.0.1:5001,127.0.0.1:5002,127.0.0.1:5003",
                                     "--elements=256", "--iters=7", "--warmup=1",
                                     "--segment_bytes=4096", "--metrics_listen=127.0.0.1:0",
                                     "--result_file=/tmp/r.json", "--insecure"));
}

TEST(RunnerTest, GlooRankArgvReexecutesTheBench) {
  RunnerConfig config;
  config.self_binary = "/bin/ringside-bench";
  config.gloo_timeout = absl::Seconds(9);
  CellSpec spec;
  spec.implementation = Implementation::kGlooRingChunked;
  spec.workers = 2;
  spec.elements = 16;
  spec.iters = 3;
  EXPECT_THAT(GlooRankArgv(config, spec, 1, "/tmp/store", "/tmp/r.json"),
              ::testing::ElementsAre("/bin/ringside-bench", "gloo-rank", "--rank=1", "--world=2",
                                     "--store_dir=/tmp/store", "--algorithm=ring_chunked",
                                     "--elements=16", "--iters=3", "--warmup=0",
                                     "--gloo_timeout_s=9", "--result_file=/tmp/r.json"));
}

// One cell type serves both benchmarks; each runner refuses the other's cells before it starts
// anything, and the ring's --implementations never names the PS.
TEST(RunnerTest, EachRunnerRunsOnlyItsOwnCells) {
  CellSpec ps;
  ps.implementation = Implementation::kPs;
  ps.shards = 1;
  ps.elements = 8;
  const CellResult cell = RunCell(RunnerConfig{}, ps);
  EXPECT_EQ(cell.status.code(), absl::StatusCode::kInvalidArgument) << cell.status;
  EXPECT_FALSE(cell.check_ok);
  EXPECT_EQ(cell.spec.implementation, Implementation::kPs);

  CellSpec ring;
  ring.elements = 8;
  const CellResult refused = RunPsCell(PsRunnerConfig{}, ring);
  EXPECT_EQ(refused.status.code(), absl::StatusCode::kInvalidArgument) << refused.status;
  EXPECT_THAT(refused.status.message(), HasSubstr("not a PS cell: ringside"));

  EXPECT_FALSE(ParseImplementation("ps").ok());
  EXPECT_EQ(ImplementationName(Implementation::kPs), "ps");
  EXPECT_FALSE(IsGloo(Implementation::kPs));
  EXPECT_FALSE(IsGloo(Implementation::kRingside));
  EXPECT_TRUE(IsGloo(Implementation::kGlooRingChunked));
}

RankResult Rank(int rank, double seconds, bool ok) {
  RankResult r;
  r.rank = rank;
  r.world = 2;
  r.elements = 8;
  r.iters = 3;
  r.seconds_per_op = seconds;
  r.check_ok = ok;
  r.max_abs_error = ok ? 0 : 1;
  return r;
}

TEST(RunnerTest, AggregateTakesTheSlowestRankAndAllChecks) {
  CellResult cell;
  cell.spec.workers = 2;
  cell.spec.elements = 8;
  cell.spec.iters = 3;
  ASSERT_TRUE(AggregateRanks({Rank(0, 0.5, true), Rank(1, 0.75, true)}, &cell).ok());
  EXPECT_EQ(cell.seconds_per_op, 0.75);
  EXPECT_TRUE(cell.check_ok);
  ASSERT_TRUE(AggregateRanks({Rank(0, 0.5, true), Rank(1, 0.25, false)}, &cell).ok());
  EXPECT_EQ(cell.seconds_per_op, 0.5);
  EXPECT_FALSE(cell.check_ok);
  EXPECT_EQ(cell.max_abs_error, 1);

  EXPECT_FALSE(AggregateRanks({Rank(0, 0.5, true)}, &cell).ok());                      // missing
  EXPECT_FALSE(AggregateRanks({Rank(1, 0.5, true), Rank(0, 0.5, true)}, &cell).ok());  // order
  EXPECT_FALSE(AggregateRanks({Rank(0, 0.5, true), Rank(1, 0, true)}, &cell).ok());    // time
  RankResult wrong_size = Rank(1, 0.5, true);
  wrong_size.elements = 4;
  EXPECT_FALSE(AggregateRanks({Rank(0, 0.5, true), wrong_size}, &cell).ok());
}

}  // namespace
}  // namespace ringside::bench
