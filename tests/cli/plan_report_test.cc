// `ringside plan`'s table and JSON from fixed costs, against golden files in tests/cli/golden/
// (RINGSIDE_UPDATE_GOLDEN=1 rewrites them; review the diff), and its chart's marks.
#include "cli/plan_report.h"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "gtest/gtest.h"

namespace ringside::cli {
namespace {

// The heavy job on 10 Gbit/s links with one of the workers 3× slower, as the example.
PlanInput HeavyJob() {
  PlanInput input;
  input.model = "784,1024,1024,10";
  input.activation = "tanh";
  input.wire_dtype = "fp32";
  input.job = {.parameters = 1'863'690,
               .element_bytes = 4,
               .global_batch = 1024,
               .steps_to_target = 300,
               .ps_segment_bytes = 512 << 10};  // the workers' default window's
  input.worker_counts = {4, 64, 256};
  input.shard_counts = {2, 8};
  input.shape.straggler = 3;
  input.shape.straggler_factor = 3;
  input.costs = {.link_bytes_per_second = 1.25e9,
                 .link_latency_seconds = 50e-6,
                 .compute_seconds_per_sample = 250e-6,
                 .sync_cpu_seconds_per_byte = 0.25e-9,
                 .cores_per_process = 2,
                 .shard_bytes_per_second = 10e9};
  input.costs_source = "--link_rate=10gbit";
  return input;
}

std::string GoldenPath(const std::string& name) {
  const char* source = std::getenv("RINGSIDE_SOURCE_DIR");
  return std::string(source != nullptr ? source : ".") + "/tests/cli/golden/" + name;
}

void ExpectGolden(const std::string& name, const std::string& actual) {
  const std::string path = GoldenPath(name);
  if (std::getenv("RINGSIDE_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(path) << actual;
    return;
  }
  std::ifstream in(path);
  ASSERT_TRUE(in.good()) << "no golden file " << path << " (RINGSIDE_UPDATE_GOLDEN=1 writes it)";
  std::stringstream expected;
  expected << in.rdbuf();
  EXPECT_EQ(actual, expected.str()) << "differs from " << path;
}

TEST(PlanReportTest, TableMatchesItsGoldenFile) {
  const PlanInput input = HeavyJob();
  absl::StatusOr<std::vector<PlanCell>> cells = PlanCells(input);
  ASSERT_TRUE(cells.ok()) << cells.status();
  ASSERT_EQ(cells->size(), 6u);
  ExpectGolden("plan_table.txt", PlanTable(input, *cells));
}

TEST(PlanReportTest, JsonMatchesItsGoldenFile) {
  const PlanInput input = HeavyJob();
  absl::StatusOr<std::vector<PlanCell>> cells = PlanCells(input);
  ASSERT_TRUE(cells.ok()) << cells.status();
  const nlohmann::json json = PlanJson(input, *cells);
  EXPECT_EQ(json["plan_version"], kPlanJsonVersion);
  ASSERT_EQ(json["cells"].size(), 6u);
  EXPECT_EQ(json["cells"][0]["ranking"].size(), 5u);
  ExpectGolden("plan.json", json.dump(2) + "\n");
}

TEST(PlanReportTest, ACellThatCannotExistIsNamed) {
  PlanInput input = HeavyJob();
  input.worker_counts = {2, 8};  // worker-3 is not among 2
  absl::StatusOr<std::vector<PlanCell>> cells = PlanCells(input);
  ASSERT_FALSE(cells.ok());
  EXPECT_EQ(cells.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(cells.status().message().find("N = 2, S = 2: straggler: worker-3 names no worker"),
            absl::string_view::npos)
      << cells.status();
}

int Count(const std::string& text, const std::string& what) {
  int count = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) {
    ++count;
  }
  return count;
}

TEST(PlanReportTest, ChartHasACurvePerModeAndTheMeasuredPoints) {
  const std::string svg =
      PlanChartSvg(HeavyJob(), {{"ring", 4, 0.4}, {"ps", 4, 0.45}, {"ps", 0, 1}});
  for (const char* mode : {"ring", "ps", "ps-colocated", "ps-backup", "ps-staleness"}) {
    EXPECT_EQ(Count(svg, std::string("class=\"mark model ") + mode + "\""), 1) << mode;
  }
  EXPECT_EQ(Count(svg, "class=\"mark measured ring\""), 1);
  EXPECT_EQ(Count(svg, "class=\"mark measured ps\""), 1);  // N = 0 is left out
}

}  // namespace
}  // namespace ringside::cli
