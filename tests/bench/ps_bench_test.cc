// Tests of `ringside-bench ps`. One source, two test binaries: without
// RINGSIDE_PS_BENCH_PROCESSES the unit tests of the pure parts (argv, ready files, aggregation,
// cost model, table and JSON); with it the real binary driving real shards and workers.
// No timing assertions: only that cells ran, values were checked and figures are positive.
#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "launch/subprocess.h"
#include "launch/temp_dir.h"
#include "nlohmann/json.hpp"

#ifndef RINGSIDE_PS_BENCH_PROCESSES
#include "bench/cell.h"
#include "bench/ps_report.h"
#include "bench/ps_runner.h"
#else
#include "tests/bench/bench_process_fixture.h"
#endif

namespace ringside {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

#ifndef RINGSIDE_PS_BENCH_PROCESSES

using bench::CellResult;
using bench::CellSpec;
using bench::PsReportRow;
using bench::PsRunnerConfig;

PsRunnerConfig Config() {
  PsRunnerConfig config;
  config.ps_binary = "/bin/ringside-ps";
  config.rank_binary = "/bin/ringside-bench";
  config.segment_bytes = 65536;
  return config;
}

CellSpec Spec(int workers, int shards, int64_t elements) {
  CellSpec spec;
  spec.implementation = bench::Implementation::kPs;
  spec.workers = workers;
  spec.shards = shards;
  spec.elements = elements;
  spec.iters = 7;
  spec.warmup = 2;
  return spec;
}

TEST(PsRunnerTest, ShardArgv) {
  EXPECT_THAT(bench::PsShardArgv(Config(), Spec(4, 2, 1000), 1, "/tmp/x/shard-1.ready.json"),
              ElementsAre("/bin/ringside-ps", "--shard=1", "--ps_shards=2", "--workers=4",
                          "--listen=127.0.0.1:0", "--metrics_listen=127.0.0.1:0", "--elements=1000",
                          "--optimizer=sgd", "--lr=1", "--segment_bytes=65536",
                          "--ready_file=/tmp/x/shard-1.ready.json", "--insecure"));
}

TEST(PsRunnerTest, WorkerArgvListsShardsInOrder) {
  EXPECT_THAT(
      bench::PsWorkerArgv(Config(), Spec(4, 3, 1000), 2, {5001, 5003, 5002}, "/tmp/x/w.json"),
      ElementsAre("/bin/ringside-bench", "ps-rank", "--rank=2", "--workers=4",
                  "--ps=127.0.0.1:5001,127.0.0.1:5003,127.0.0.1:5002", "--elements=1000",
                  "--iters=7", "--warmup=2", "--segment_bytes=65536",
                  "--metrics_listen=127.0.0.1:0", "--result_file=/tmp/x/w.json", "--insecure"));
}

TEST(PsRunnerTest, ReadyFileMustMatchTheShardMap) {
  const CellSpec spec = Spec(2, 3, 10);  // EvenRanges(10, 3): [0,4) [4,7) [7,10)
  absl::StatusOr<int> port = bench::ParseShardReady(
      R"({"port":4242,"metrics_port":1,"range_begin":4,"range_end":7})", spec, 1);
  ASSERT_TRUE(port.ok()) << port.status();
  EXPECT_EQ(*port, 4242);
  absl::StatusOr<int> wrong = bench::ParseShardReady(
      R"({"port":4242,"metrics_port":1,"range_begin":0,"range_end":4})", spec, 1);
  EXPECT_THAT(wrong.status().message(), HasSubstr("assume [4, 7)"));
  EXPECT_FALSE(bench::ParseShardReady(R"({"range_begin":4,"range_end":7})", spec, 1).ok());
  EXPECT_FALSE(bench::ParseShardReady("not json", spec, 1).ok());
  EXPECT_FALSE(bench::ParseShardReady(R"({"port":0,"range_begin":4,"range_end":7})", spec, 1).ok());
}

RankResult Worker(int rank, int world, double seconds, bool check_ok = true) {
  RankResult result;
  result.rank = rank;
  result.world = world;
  result.elements = 1000;
  result.iters = 7;
  result.seconds_per_op = seconds;
  result.check_ok = check_ok;
  result.max_abs_error = check_ok ? 0 : 3;
  return result;
}

TEST(PsRunnerTest, AggregateTakesTheSlowestWorkerAndAllChecks) {
  CellResult cell;
  cell.spec = Spec(3, 2, 1000);
  ASSERT_TRUE(bench::AggregateRanks(
                  {Worker(0, 3, 0.002), Worker(1, 3, 0.005, false), Worker(2, 3, 0.001)}, &cell)
                  .ok());
  EXPECT_DOUBLE_EQ(cell.seconds_per_op, 0.005);
  EXPECT_FALSE(cell.check_ok);
  EXPECT_EQ(cell.max_abs_error, 3);
  EXPECT_EQ(cell.ranks.size(), 3u);

  CellResult short_cell;
  short_cell.spec = Spec(3, 2, 1000);
  EXPECT_FALSE(bench::AggregateRanks({Worker(0, 3, 0.002)}, &short_cell).ok());
  CellResult wrong_world;
  wrong_world.spec = Spec(2, 1, 1000);
  EXPECT_FALSE(
      bench::AggregateRanks({Worker(0, 3, 0.002), Worker(1, 3, 0.002)}, &wrong_world).ok());
}

CellResult RingCell(int world, int64_t elements, double seconds) {
  CellResult cell;
  cell.spec.workers = world;
  cell.spec.elements = elements;
  cell.spec.iters = 7;
  cell.seconds_per_op = seconds;
  cell.check_ok = true;
  return cell;
}

CellResult PsCell(int workers, int shards, int64_t elements, double seconds) {
  CellResult cell;
  cell.spec = Spec(workers, shards, elements);
  cell.seconds_per_op = seconds;
  cell.check_ok = true;
  return cell;
}

TEST(PsReportTest, RowsTableAndJson) {
  constexpr int64_t kK = 1 << 18;  // 1 MiB
  std::vector<CellResult> rings = {RingCell(2, kK, 0.001), RingCell(4, kK, 0)};
  rings[1].status = absl::DeadlineExceededError("ring timed out");
  rings[1].check_ok = false;
  std::vector<CellResult> ps = {PsCell(2, 1, kK, 0.003), PsCell(2, 2, kK, 0.002),
                                PsCell(4, 1, kK, 0.004), PsCell(4, 2, kK, 0)};
  ps[3].status = absl::InternalError("shard 1 exited before it was ready");
  ps[3].check_ok = false;

  const std::vector<PsReportRow> rows = bench::BuildPsRows(ps, rings);
  ASSERT_EQ(rows.size(), 6u);
  EXPECT_EQ(rows[0].cell.implementation, "ringside");
  EXPECT_EQ(rows[0].cell.workers, 2);
  EXPECT_EQ(rows[0].busiest_node_bytes, kK * 4);
  EXPECT_EQ(rows[1].cell.implementation, "ps");
  EXPECT_EQ(rows[1].cell.shards, 1);
  EXPECT_EQ(rows[1].busiest_node_bytes, 2 * kK * 4);
  ASSERT_TRUE(rows[1].ratio_to_ring.has_value());
  EXPECT_DOUBLE_EQ(*rows[1].ratio_to_ring, 3.0);
  EXPECT_DOUBLE_EQ(*rows[1].ring_seconds_per_op, 0.001);
  EXPECT_DOUBLE_EQ(*rows[2].ratio_to_ring, 2.0);
  EXPECT_FALSE(rows[3].cell.ran);  // the N=4 ring failed: its row is kept, the PS rows get no ratio
  EXPECT_TRUE(rows[4].cell.ran);
  EXPECT_FALSE(rows[4].ratio_to_ring.has_value());
  EXPECT_FALSE(rows[5].cell.ran);

  const std::string table = bench::FormatPsTable(rows);
  EXPECT_THAT(table, HasSubstr("ps/ring"));
  EXPECT_THAT(table, HasSubstr("3.00"));
  EXPECT_THAT(table, HasSubstr("2.00 MiB"));  // N=2, S=1: the shard takes 2 x 1 MiB
  EXPECT_THAT(table, HasSubstr("ERROR"));
  EXPECT_THAT(table, HasSubstr("errors:\n  ringside N=4 1MiB: DEADLINE_EXCEEDED: ring timed out\n"
                               "  ps N=4 S=2 1MiB: INTERNAL: shard 1 exited"));
  EXPECT_EQ(std::count(table.begin(), table.end(), '\n'), 1 + 6 + 1 + 2);

  const nlohmann::json json = bench::PsToJson(rows);
  EXPECT_EQ(json["benchmark"], "ps");
  const nlohmann::json& records = json["records"];
  ASSERT_EQ(records.size(), 6u);
  EXPECT_EQ(records[0]["implementation"], "ringside");
  EXPECT_FALSE(records[0].contains("shards"));
  EXPECT_FALSE(records[0].contains("ratio_to_ring"));
  EXPECT_EQ(records[1]["implementation"], "ps");
  EXPECT_EQ(records[1]["shards"], 1);
  EXPECT_EQ(records[1]["bytes"], kK * 4);
  EXPECT_EQ(records[1]["elements"], kK);
  EXPECT_EQ(records[1]["iters"], 7);
  EXPECT_EQ(records[1]["check_ok"], true);
  EXPECT_DOUBLE_EQ(records[1]["seconds_per_op"].get<double>(), 0.003);
  EXPECT_DOUBLE_EQ(records[1]["ring_seconds_per_op"].get<double>(), 0.001);
  EXPECT_DOUBLE_EQ(records[1]["ratio_to_ring"].get<double>(), 3.0);
  EXPECT_EQ(records[1]["busiest_node_bytes"], 2 * kK * 4);
  EXPECT_TRUE(records[4]["ratio_to_ring"].is_null());
  EXPECT_TRUE(records[5]["seconds_per_op"].is_null());
  EXPECT_EQ(records[5]["check_ok"], false);
  EXPECT_THAT(records[5]["error"].get<std::string>(), HasSubstr("exited before it was ready"));
}

// The table and the JSON users read, byte for byte: a refactoring must not move a character.
TEST(PsReportTest, TableAndJsonAreExactlyAsPublished) {
  constexpr int64_t kK = 1 << 18;  // 1 MiB
  std::vector<CellResult> rings = {RingCell(2, kK, 0.0011), RingCell(4, kK, 0),
                                   RingCell(2, 1000, 0.0000123)};
  rings[1].status = absl::DeadlineExceededError("ring timed out");
  rings[1].check_ok = false;
  std::vector<CellResult> ps = {PsCell(2, 1, kK, 0.0031), PsCell(2, 3, kK, 2.25),
                                PsCell(4, 1, kK, 0.004), PsCell(4, 2, kK, 0)};
  ps[1].check_ok = false;
  ps[1].max_abs_error = 2;
  ps[3].status = absl::InternalError("shard 1 exited before it was ready");
  ps[3].check_ok = false;
  const std::vector<PsReportRow> rows = bench::BuildPsRows(ps, rings);
  EXPECT_EQ(
      bench::FormatPsTable(rows),
      "impl        N   S     size  iters    time/step ring time/op ps/ring busiest in/step check\n"
      "ringside    2   -     1MiB      7     1.100 ms            -       -        1.00 MiB ok\n"
      "ps          2   1     1MiB      7     3.100 ms     1.100 ms    2.82        2.00 MiB ok\n"
      "ps          2   3     1MiB      7      2.250 s     1.100 ms 2045.45        1.00 MiB WRONG\n"
      "ringside    4   -     1MiB      7            -            -       -        1.50 MiB ERROR\n"
      "ps          4   1     1MiB      7     4.000 ms            -       -        4.00 MiB ok\n"
      "ps          4   2     1MiB      7            -            -       -        2.00 MiB ERROR\n"
      "ringside    2   -    4000B      7      12.3 us            -       -        3.91 KiB ok\n"
      "errors:\n"
      "  ringside N=4 1MiB: DEADLINE_EXCEEDED: ring timed out\n"
      "  ps N=4 S=2 1MiB: INTERNAL: shard 1 exited before it was ready\n");
  EXPECT_EQ(
      bench::PsToJson(rows).dump(),
      R"json({"benchmark":"ps","records":[{"busiest_node_bytes":1048576,"bytes":1048576,)json"
      R"json("check_ok":true,"elements":262144,"implementation":"ringside","iters":7,)json"
      R"json("max_abs_error":0.0,"seconds_per_op":0.0011,"workers":2},)json"
      R"json({"busiest_node_bytes":2097152,"bytes":1048576,"check_ok":true,"elements":262144,)json"
      R"json("implementation":"ps","iters":7,"max_abs_error":0.0,"ratio_to_ring":2.818181818181818,)json"
      R"json("ring_seconds_per_op":0.0011,"seconds_per_op":0.0031,"shards":1,"workers":2},)json"
      R"json({"busiest_node_bytes":1048576,"bytes":1048576,"check_ok":false,"elements":262144,)json"
      R"json("implementation":"ps","iters":7,"max_abs_error":2.0,)json"
      R"json("ratio_to_ring":2045.4545454545453,"ring_seconds_per_op":0.0011,"seconds_per_op":2.25,)json"
      R"json("shards":3,"workers":2},)json"
      R"json({"busiest_node_bytes":1572864,"bytes":1048576,"check_ok":false,"elements":262144,)json"
      R"json("error":"DEADLINE_EXCEEDED: ring timed out","implementation":"ringside","iters":7,)json"
      R"json("max_abs_error":0.0,"seconds_per_op":null,"workers":4},)json"
      R"json({"busiest_node_bytes":4194304,"bytes":1048576,"check_ok":true,"elements":262144,)json"
      R"json("implementation":"ps","iters":7,"max_abs_error":0.0,"ratio_to_ring":null,)json"
      R"json("ring_seconds_per_op":null,"seconds_per_op":0.004,"shards":1,"workers":4},)json"
      R"json({"busiest_node_bytes":2097152,"bytes":1048576,"check_ok":false,"elements":262144,)json"
      R"json("error":"INTERNAL: shard 1 exited before it was ready","implementation":"ps",)json"
      R"json("iters":7,"max_abs_error":0.0,"ratio_to_ring":null,"ring_seconds_per_op":null,)json"
      R"json("seconds_per_op":null,"shards":2,"workers":4},)json"
      R"json({"busiest_node_bytes":4000,"bytes":4000,"check_ok":true,"elements":1000,)json"
      R"json("implementation":"ringside","iters":7,"max_abs_error":0.0,"seconds_per_op":1.23e-05,)json"
      R"json("workers":2}],)json"
      R"json("units":{"busiest_node_bytes":"analytic bytes into the busiest node per step: PS max(N)json"
      R"json(*ceil(K/S), K)*4, ring 2(N-1)K/N*4",)json"
      R"json("ratio_to_ring":"PS seconds_per_op / ring seconds_per_op for the same N and K",)json"
      R"json("seconds_per_op":"seconds: PS, the slowest worker's median push-pull step; ring,)json"
      R"json( the slowest rank's median allreduce"}})json");
}

#else  // RINGSIDE_PS_BENCH_PROCESSES

using PsBenchProcessTest = BenchProcessTest;

TEST_F(PsBenchProcessTest, RealShardsAndWorkersRunAndCheckTheirValues) {
  const std::string json = dir_->File("out.json");
  const BenchRun run = Run({"ps", "--worlds=2", "--shard_counts=1,2", "--sizes=64KiB", "--iters=2",
                            "--warmup=1", "--json", json});
  ASSERT_TRUE(run.exit.ok()) << run.exit.ToString() << "\n" << run.output;
  EXPECT_THAT(run.output, HasSubstr("ps/ring"));
  const nlohmann::json records = Records(json);
  ASSERT_EQ(records.size(), 3u) << records.dump();
  EXPECT_EQ(records[0]["implementation"], "ringside");
  std::vector<int> shards;
  for (const nlohmann::json& record : records) {
    EXPECT_EQ(record["workers"], 2) << record.dump();
    EXPECT_EQ(record["bytes"], 64 * 1024) << record.dump();
    EXPECT_EQ(record["elements"], 16 * 1024) << record.dump();
    EXPECT_EQ(record["iters"], 2) << record.dump();
    EXPECT_EQ(record["check_ok"], true) << record.dump();
    ASSERT_TRUE(record["seconds_per_op"].is_number()) << record.dump();
    EXPECT_GT(record["seconds_per_op"].get<double>(), 0) << record.dump();
    if (record["implementation"] != "ps") continue;
    shards.push_back(record["shards"].get<int>());
    ASSERT_TRUE(record["ring_seconds_per_op"].is_number()) << record.dump();
    EXPECT_GT(record["ring_seconds_per_op"].get<double>(), 0) << record.dump();
    EXPECT_GT(record["ratio_to_ring"].get<double>(), 0) << record.dump();
  }
  EXPECT_THAT(shards, ElementsAre(1, 2));
}

TEST_F(PsBenchProcessTest, MissingShardBinaryFailsOnlyThePsCells) {
  const std::string json = dir_->File("out.json");
  const BenchRun run = Run({"ps", "--workers=2", "--ps_shards=1", "--elements=1024", "--iters=1",
                            "--ps_binary=/nonexistent/ringside-ps", "--json=" + json});
  EXPECT_EQ(run.exit.exit_code, 1) << run.output;
  EXPECT_THAT(run.output, HasSubstr("no executable ringside-ps at /nonexistent"));
  const nlohmann::json records = Records(json);
  ASSERT_EQ(records.size(), 2u) << records.dump();
  EXPECT_EQ(records[0]["implementation"], "ringside");
  EXPECT_EQ(records[0]["check_ok"], true);
  EXPECT_EQ(records[1]["implementation"], "ps");
  EXPECT_EQ(records[1]["check_ok"], false);
  EXPECT_TRUE(records[1]["seconds_per_op"].is_null());
}

TEST_F(PsBenchProcessTest, BadFlagsFailWithOneLineNamingTheFlag) {
  for (const auto& [flag, name] :
       std::vector<std::pair<std::string, std::string> >{{"--shard_counts=0", "shard_counts"},
                                                         {"--ps_shards=65", "--ps_shards"},
                                                         {"--workers=1", "--workers"}}) {
    const BenchRun run = Run({"ps", flag});
    EXPECT_NE(run.exit.exit_code, 0) << flag;
    EXPECT_THAT(run.output, HasSubstr(name)) << flag;
    EXPECT_EQ(std::count(run.output.begin(), run.output.end(), '\n'), 1) << run.output;
  }
}

#endif  // RINGSIDE_PS_BENCH_PROCESSES

}  // namespace
}  // namespace ringside
