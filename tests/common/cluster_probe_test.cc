// The probe's file (common/cluster_probe.h): written and read back (a member's profile of itself
// with its link, where it made one), and refused when it is from another format version or
// another model, or is damaged.
#include "common/cluster_probe.h"

#include <fstream>

#include "gtest/gtest.h"
#include "launch/temp_dir.h"

namespace ringside {
namespace {

ClusterProbe Probe() {
  ClusterProbe probe;
  probe.model = "784,1024,1024,10";
  probe.activation = "tanh";
  probe.device = "cpu";
  probe.costs = {.link_bytes_per_second = 1.25e9,
                 .link_latency_seconds = 5e-5,
                 .compute_seconds_per_sample = 2e-4,
                 .sync_cpu_seconds_per_byte = 3e-10,
                 .cores_per_process = 0.5,
                 .shard_bytes_per_second = 4e9};
  probe.links = {{"probe->127.0.0.1:1", 5e-5, 1.25e9, "cpu", 2e-4, 1.5},
                 {"probe->127.0.0.1:2", 4e-5, 2e9, "", 0, 0}};
  return probe;
}

void WriteText(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

TEST(ClusterProbeTest, RoundTrips) {
  absl::StatusOr<launch::TempDir> dir = launch::TempDir::Create("probe");
  ASSERT_TRUE(dir.ok()) << dir.status();
  const std::string path = dir->File("probe.json");
  ASSERT_TRUE(WriteClusterProbe(path, Probe()).ok());
  absl::StatusOr<ClusterProbe> read = ReadClusterProbe(path);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->model, "784,1024,1024,10");
  EXPECT_EQ(read->device, "cpu");
  EXPECT_EQ(read->costs.link_bytes_per_second, 1.25e9);
  EXPECT_EQ(read->costs.link_latency_seconds, 5e-5);
  EXPECT_EQ(read->costs.compute_seconds_per_sample, 2e-4);
  EXPECT_EQ(read->costs.sync_cpu_seconds_per_byte, 3e-10);
  EXPECT_EQ(read->costs.cores_per_process, 0.5);
  EXPECT_EQ(read->costs.shard_bytes_per_second, 4e9);
  ASSERT_EQ(read->links.size(), 2u);
  EXPECT_EQ(read->links[0].device, "cpu");
  EXPECT_EQ(read->links[0].compute_seconds_per_sample, 2e-4);
  EXPECT_EQ(read->links[0].usable_cores, 1.5);
  EXPECT_EQ(read->links[1].link, "probe->127.0.0.1:2");
  EXPECT_EQ(read->links[1].device, "");  // not profiled: no profile written
  EXPECT_FALSE(ClusterProbeJson(Probe())["links"][1].contains("device"));
  EXPECT_TRUE(CheckProbeMatchesModel(*read, path, "784,1024,1024,10", "tanh").ok());
}

TEST(ClusterProbeTest, RefusesAnotherVersion) {
  absl::StatusOr<launch::TempDir> dir = launch::TempDir::Create("probe");
  ASSERT_TRUE(dir.ok());
  const std::string path = dir->File("probe.json");
  nlohmann::json json = ClusterProbeJson(Probe());
  json["version"] = 2;
  WriteText(path, json.dump());
  absl::StatusOr<ClusterProbe> read = ReadClusterProbe(path);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(read.status().message().find("format version 2"), absl::string_view::npos)
      << read.status();
}

TEST(ClusterProbeTest, RefusesAnotherModel) {
  const absl::Status status = CheckProbeMatchesModel(Probe(), "p.json", "4,16,3", "tanh");
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(status.message().find("measured --model=784,1024,1024,10"), absl::string_view::npos)
      << status;
  EXPECT_EQ(CheckProbeMatchesModel(Probe(), "p.json", "784,1024,1024,10", "relu").code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(ClusterProbeTest, RefusesDamagedFiles) {
  absl::StatusOr<launch::TempDir> dir = launch::TempDir::Create("probe");
  ASSERT_TRUE(dir.ok());
  const std::string path = dir->File("probe.json");
  nlohmann::json no_rate = ClusterProbeJson(Probe());
  no_rate["link_bytes_per_second"] = 0;
  nlohmann::json missing = ClusterProbeJson(Probe());
  missing.erase("compute_seconds_per_sample");
  nlohmann::json other = ClusterProbeJson(Probe());
  other["format"] = "something-else";
  nlohmann::json bad_link = ClusterProbeJson(Probe());
  bad_link["links"][0]["bytes_per_second"] = -1;
  nlohmann::json bad_profile = ClusterProbeJson(Probe());
  bad_profile["links"][0]["usable_cores"] = 0;
  const struct {
    std::string text;
    absl::StatusCode code;
    const char* message;
  } cases[] = {
      {no_rate.dump(), absl::StatusCode::kInvalidArgument, "link rate 0"},
      {missing.dump(), absl::StatusCode::kInvalidArgument, "compute_seconds_per_sample"},
      {other.dump(), absl::StatusCode::kFailedPrecondition, "not a ringside probe"},
      {bad_link.dump(), absl::StatusCode::kInvalidArgument, "out of range"},
      {bad_profile.dump(), absl::StatusCode::kInvalidArgument, "profile out of range"},
      {ClusterProbeJson(Probe()).dump().substr(0, 40), absl::StatusCode::kInvalidArgument,
       "not a JSON object"},
  };
  for (const auto& c : cases) {
    WriteText(path, c.text);
    absl::StatusOr<ClusterProbe> read = ReadClusterProbe(path);
    ASSERT_FALSE(read.ok()) << c.message;
    EXPECT_EQ(read.status().code(), c.code) << read.status();
    EXPECT_NE(read.status().message().find(c.message), absl::string_view::npos) << read.status();
  }
  EXPECT_EQ(ReadClusterProbe(dir->File("absent.json")).status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace ringside
