// ringside-ps shards and ringside-worker processes on loopback: every PS link carries exactly
// the cost model's bytes (over mutual TLS: encryption must not change the payload counted), and
// PS, ring and a single process end with the same parameters.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/file_util.h"
#include "common/metrics.h"
#include "common/model_spec.h"
#include "common/ranges.h"
#include "gtest/gtest.h"
#include "launch/certificates.h"
#include "launch/subprocess.h"
#include "launch/temp_dir.h"
#include "tests/support/prometheus_text.h"
#include "tests/support/worker_processes.h"
#include "worker/local_training.h"

namespace ringside {
namespace {

using testing::BinDir;
using testing::FindSample;
using testing::Sample;
using testing::WorkerProcesses;

constexpr uint64_t kIrisParameters = 4 * 16 + 16 + 16 * 3 + 3;  // the default 4,16,3 model

struct Shards {
  std::unique_ptr<launch::TempDir> dir;
  std::vector<launch::Subprocess> processes;
  std::vector<std::string> addresses;
  std::vector<int> metrics_ports;
  std::vector<std::string> worker_security;  // the workers' security flags
};

// Starts `count` shards for `workers` workers and waits until each has written its ready file.
// Under `tls` shards and workers hold certificates of one throw-away CA; otherwise every
// process runs --insecure.
Shards StartShards(int count, int workers, bool tls = false,
                   const std::vector<std::string>& job_flags = {}) {
  Shards shards;
  auto dir = launch::TempDir::Create("ringside-shards-");
  EXPECT_TRUE(dir.ok()) << dir.status();
  shards.dir = std::make_unique<launch::TempDir>(*std::move(dir));
  std::vector<std::string> shard_security = {"--insecure"};
  shards.worker_security = {"--insecure"};
  if (tls) {
    auto authority = launch::CertificateAuthority::Create(shards.dir->path());
    EXPECT_TRUE(authority.ok()) << authority.status();
    auto shard_files = authority->Issue("shards");
    auto worker_files = authority->Issue("workers");
    EXPECT_TRUE(shard_files.ok() && worker_files.ok());
    shard_security = launch::CertificateAuthority::Flags(*shard_files);
    shards.worker_security = launch::CertificateAuthority::Flags(*worker_files);
  }
  for (int s = 0; s < count; ++s) {
    launch::SpawnOptions options;
    options.argv = {BinDir() + "/ringside-ps",
                    absl::StrCat("--shard=", s),
                    absl::StrCat("--ps_shards=", count),
                    absl::StrCat("--workers=", workers),
                    "--listen=127.0.0.1:0",
                    "--ready_file=" + shards.dir->File(absl::StrCat("ready-", s, ".json"))};
    options.argv.insert(options.argv.end(), shard_security.begin(), shard_security.end());
    options.argv.insert(options.argv.end(), job_flags.begin(), job_flags.end());
    options.log_path = shards.dir->File(absl::StrCat("ps-", s, ".log"));
    options.term_grace = absl::Seconds(15);
    auto process = launch::Subprocess::Spawn(options);
    EXPECT_TRUE(process.ok()) << process.status();
    shards.processes.push_back(*std::move(process));
  }
  for (int s = 0; s < count; ++s) {
    const std::string ready = shards.dir->File(absl::StrCat("ready-", s, ".json"));
    absl::StatusOr<std::string> text;
    for (int i = 0; i < 500 && !(text = ReadFileToString(ready)).ok(); ++i) {
      absl::SleepFor(absl::Milliseconds(20));  // polling a file: there is no event to wait on
    }
    EXPECT_TRUE(text.ok()) << launch::TailOfFile(shards.processes[s].log_path(), 10);
    const nlohmann::json json = nlohmann::json::parse(text.value_or("{}"), nullptr, false);
    shards.addresses.push_back(absl::StrCat("127.0.0.1:", json.value("port", 0)));
    shards.metrics_ports.push_back(json.value("metrics_port", 0));
  }
  return shards;
}

std::vector<float> ReadParameters(const std::string& path) {
  absl::StatusOr<std::string> bytes = ReadFileToString(path);
  EXPECT_TRUE(bytes.ok()) << bytes.status();
  std::vector<float> values(bytes.value_or("").size() / sizeof(float));
  if (!values.empty()) std::memcpy(values.data(), bytes->data(), values.size() * sizeof(float));
  return values;
}

// max |a - b| / max |a|
double RelativeDifference(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double diff = 0, scale = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    diff = std::max(diff, std::fabs(static_cast<double>(a[i]) - b[i]));
    scale = std::max(scale, std::fabs(static_cast<double>(a[i])));
  }
  return scale > 0 ? diff / scale : diff;
}

TEST(PsProcessTest, FourWorkersTwoShardsCarryExactlyTheModelOnEveryLink) {
  constexpr int kWorkers = 4, kShards = 2, kSteps = 10;
  Shards shards = StartShards(kShards, kWorkers, /*tls=*/true);
  std::vector<std::string> flags = {"--mode=ps",
                                    absl::StrCat("--workers=", kWorkers),
                                    "--ps=" + absl::StrJoin(shards.addresses, ","),
                                    absl::StrCat("--steps=", kSteps),
                                    "--device=cpu",
                                    "--linger"};
  flags.insert(flags.end(), shards.worker_security.begin(), shards.worker_security.end());
  auto workers = WorkerProcesses::Start(kWorkers, flags);
  ASSERT_TRUE(workers.ok()) << workers.status();
  auto results = (*workers)->WaitForResults(absl::Seconds(120));
  ASSERT_TRUE(results.ok()) << results.status();

  const std::vector<ElementRange> ranges = EvenRanges(kIrisParameters, kShards);
  for (int s = 0; s < kShards; ++s) {
    const std::string shard = PsShardName(s);
    const double per_link = static_cast<double>(ranges[s].size()) * 4 * kSteps;
    const std::vector<launch::Sample> shard_metrics =
        testing::ScrapeMetrics(shards.metrics_ports[s]);
    double ingress = 0;
    for (int r = 0; r < kWorkers; ++r) {
      const std::string worker = WorkerName(r);
      const std::vector<launch::Sample> worker_metrics =
          testing::ScrapeMetrics((*results)[r].value("metrics_port", 0));
      const std::map<std::string, std::string> up = {
          {"src", worker}, {"dst", shard}, {"mode", "ps"}};
      const std::map<std::string, std::string> down = {
          {"src", shard}, {"dst", worker}, {"mode", "ps"}};
      EXPECT_EQ(launch::FindSample(worker_metrics, "ringside_link_bytes_total", up), per_link)
          << worker;
      EXPECT_EQ(launch::FindSample(worker_metrics, "ringside_link_expected_bytes_total", up),
                per_link);
      EXPECT_EQ(launch::FindSample(shard_metrics, "ringside_link_received_bytes_total", up),
                per_link);
      EXPECT_EQ(launch::FindSample(shard_metrics, "ringside_link_bytes_total", down), per_link)
          << shard;
      EXPECT_EQ(launch::FindSample(shard_metrics, "ringside_link_expected_bytes_total", down),
                per_link);
      EXPECT_EQ(launch::FindSample(worker_metrics, "ringside_link_received_bytes_total", down),
                per_link);
      ingress +=
          launch::FindSample(shard_metrics, "ringside_link_received_bytes_total", up).value_or(0);
    }
    EXPECT_EQ(ingress, kWorkers * per_link) << shard << " ingress: N * |range| * 4 per step";
    EXPECT_EQ(launch::FindSample(shard_metrics, "ringside_steps_total", {{"mode", "ps"}}), kSteps);
  }
  for (int r = 0; r < kWorkers; ++r) EXPECT_TRUE((*workers)->process(r).Kill().ok());
  for (launch::Subprocess& shard : shards.processes)
    EXPECT_TRUE(shard.Kill().ok()) << shard.log_path();
}

TEST(PsProcessTest, PsRingAndOneProcessEndWithTheSameParameters) {
  constexpr int kSteps = 20;
  TrainingOptions options;
  options.steps = kSteps;
  options.device = "cpu";
  absl::StatusOr<worker::TrainingResult> single = worker::TrainLocally(options);
  ASSERT_TRUE(single.ok()) << single.status();
  auto dir = launch::TempDir::Create("ringside-parity-");
  ASSERT_TRUE(dir.ok());

  Shards shards = StartShards(2, 4);
  const std::string ps_params = dir->File("ps.bin"), ring_params = dir->File("ring.bin");
  auto ps = WorkerProcesses::Start(
      4, {"--mode=ps", "--workers=4", "--ps=" + absl::StrJoin(shards.addresses, ","),
          absl::StrCat("--steps=", kSteps), "--device=cpu", "--params_out=" + ps_params});
  ASSERT_TRUE(ps.ok()) << ps.status();
  ASSERT_TRUE((*ps)->WaitForExit(absl::Seconds(120)).ok());
  auto ring = WorkerProcesses::Start(
      4, {absl::StrCat("--steps=", kSteps), "--device=cpu", "--params_out=" + ring_params});
  ASSERT_TRUE(ring.ok()) << ring.status();
  ASSERT_TRUE((*ring)->WaitForExit(absl::Seconds(120)).ok());

  const std::vector<float> ps_values = ReadParameters(ps_params);
  const std::vector<float> ring_values = ReadParameters(ring_params);
  ASSERT_EQ(ps_values.size(), kIrisParameters);
  EXPECT_LE(RelativeDifference(single->parameters, ps_values), 1e-5);
  EXPECT_LE(RelativeDifference(single->parameters, ring_values), 1e-5);
  EXPECT_LE(RelativeDifference(ring_values, ps_values), 1e-5);
  // The comparison means something only if training moved the parameters.
  auto spec = ModelSpec::Parse(options.model, options.activation);
  ASSERT_TRUE(spec.ok());
  EXPECT_GT(RelativeDifference(InitialParameters(*spec, options.seed), ps_values), 1e-2);
  for (launch::Subprocess& shard : shards.processes) EXPECT_TRUE(shard.Kill().ok());
}

// A static ps cluster's worker flags: `shards`' addresses and security, the job's `job` flags,
// lingering so that the test can scrape the shards after the workers' results.
std::vector<std::string> StaticPsWorkerFlags(const Shards& shards, int workers,
                                             const std::vector<std::string>& job) {
  std::vector<std::string> flags = {"--mode=ps", absl::StrCat("--workers=", workers),
                                    "--ps=" + absl::StrJoin(shards.addresses, ","), "--device=cpu",
                                    "--linger"};
  flags.insert(flags.end(), job.begin(), job.end());
  flags.insert(flags.end(), shards.worker_security.begin(), shards.worker_security.end());
  return flags;
}

// --staleness=async across processes: the shards apply every push once (the staleness histogram
// counts workers * steps updates), each link carries the cost model's bytes both ways (a pull
// is the range's parameters, a push its gradient), and every worker reaches Iris's accuracy.
TEST(PsProcessTest, AsyncWorkersAndShardsTrainIrisAndCountEveryUpdate) {
  // Async's end point depends on the order the shards applied the pushes in (the scheduler's):
  // after 200 steps 15 runs here ended at 96.0-98.0% but one elsewhere at 94.7%; 300 steps end at
  // 96.7-98.0% (15 runs beside three busy loops), a margin above 95% that 200 did not leave.
  constexpr int kWorkers = 3, kShards = 2, kSteps = 300;
  const std::vector<std::string> job = {"--staleness=async", absl::StrCat("--steps=", kSteps)};
  Shards shards = StartShards(kShards, kWorkers, /*tls=*/false, job);
  auto workers = WorkerProcesses::Start(kWorkers, StaticPsWorkerFlags(shards, kWorkers, job));
  ASSERT_TRUE(workers.ok()) << workers.status();
  auto results = (*workers)->WaitForResults(absl::Seconds(120));
  ASSERT_TRUE(results.ok()) << results.status();
  for (int r = 0; r < kWorkers; ++r) {
    EXPECT_EQ((*results)[r].value("steps", 0), kSteps);
    EXPECT_GE((*results)[r].value("accuracy", 0.0), 0.95) << WorkerName(r);
  }
  const std::vector<ElementRange> ranges = EvenRanges(kIrisParameters, kShards);
  for (int s = 0; s < kShards; ++s) {
    const std::vector<launch::Sample> shard_metrics =
        testing::ScrapeMetrics(shards.metrics_ports[s]);
    EXPECT_EQ(launch::FindSample(shard_metrics, "ringside_ps_update_staleness_count", {}),
              kWorkers * kSteps);
    const double per_link = static_cast<double>(ranges[s].size()) * 4 * kSteps;
    for (int r = 0; r < kWorkers; ++r) {
      const std::map<std::string, std::string> up = {
          {"src", WorkerName(r)}, {"dst", PsShardName(s)}, {"mode", "ps"}};
      const std::map<std::string, std::string> down = {
          {"src", PsShardName(s)}, {"dst", WorkerName(r)}, {"mode", "ps"}};
      EXPECT_EQ(launch::FindSample(shard_metrics, "ringside_link_received_bytes_total", up),
                per_link);
      EXPECT_EQ(launch::FindSample(shard_metrics, "ringside_link_bytes_total", down), per_link);
      EXPECT_EQ(launch::FindSample(shard_metrics, "ringside_link_expected_bytes_total", down),
                per_link);
    }
  }
  for (int r = 0; r < kWorkers; ++r) EXPECT_TRUE((*workers)->process(r).Kill().ok());
  for (launch::Subprocess& shard : shards.processes) EXPECT_TRUE(shard.Kill().ok());
}

// --backup_workers=1 across processes, with a straggler to make late pushes likely (which ones
// are dropped depends on timing; nothing asserted does): every step is applied on every shard
// with exactly two workers' shares (N - b, each recorded with staleness 0), every worker runs to
// the last step (the slow one skipping what it missed), and every worker ends with the very same
// parameters, the shards' after the last step.
TEST(PsProcessTest, BackupWorkersApplyEveryStepWithTheQuorumAndEndOnTheSameParameters) {
  constexpr int kWorkers = 3, kShards = 2, kSteps = 30;
  const std::vector<std::string> job = {"--backup_workers=1", "--straggler=worker-2:3",
                                        absl::StrCat("--steps=", kSteps)};
  Shards shards = StartShards(kShards, kWorkers, /*tls=*/false, job);
  auto workers = WorkerProcesses::Start(kWorkers, StaticPsWorkerFlags(shards, kWorkers, job));
  ASSERT_TRUE(workers.ok()) << workers.status();
  auto results = (*workers)->WaitForResults(absl::Seconds(120));
  ASSERT_TRUE(results.ok()) << results.status();
  const std::string checksum = (*results)[0].value("checksum", std::string());
  EXPECT_FALSE(checksum.empty());
  for (int r = 0; r < kWorkers; ++r) {
    EXPECT_EQ((*results)[r].value("steps", 0), kSteps);
    EXPECT_EQ((*results)[r].value("checksum", std::string()), checksum) << WorkerName(r);
  }
  for (int s = 0; s < kShards; ++s) {
    const std::vector<launch::Sample> shard_metrics =
        testing::ScrapeMetrics(shards.metrics_ports[s]);
    EXPECT_EQ(launch::FindSample(shard_metrics, "ringside_ps_update_staleness_count", {}),
              kSteps * (kWorkers - 1));
    EXPECT_EQ(launch::FindSample(shard_metrics, "ringside_ps_update_staleness_sum", {}), 0);
    EXPECT_TRUE(
        launch::FindSample(shard_metrics, "ringside_ps_dropped_pushes_total", {}).has_value());
  }
  for (int r = 0; r < kWorkers; ++r) EXPECT_TRUE((*workers)->process(r).Kill().ok());
  for (launch::Subprocess& shard : shards.processes) EXPECT_TRUE(shard.Kill().ok());
}

}  // namespace
}  // namespace ringside
