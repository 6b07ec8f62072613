#include "tests/support/elastic_test_util.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/auth.h"
#include "common/file_util.h"
#include "common/grpc_util.h"
#include "gtest/gtest.h"
#include "launch/prometheus_text.h"
#include "proto/controller.grpc.pb.h"
#include "tests/support/poll.h"
#include "tests/support/worker_processes.h"

namespace ringside::testing {

launch::LocalClusterOptions ClusterOptions(const std::string& dir, int workers, int shards,
                                           SyncMode mode, TrainingOptions training) {
  launch::LocalClusterOptions options;
  options.bin_dir = BinDir();
  options.dir = dir;
  options.workers = workers;
  options.ps_shards = shards;
  options.mode = mode;
  options.training = std::move(training);
  options.heartbeat_timeout = absl::Seconds(1);
  options.collective_timeout = absl::Seconds(10);
  return options;
}

void SetMode(launch::LocalCluster& cluster, SyncMode mode) {
  auto stub = proto::Controller::NewStub(
      MakeChannel(cluster.controller_address(), cluster.client_security()));
  grpc::ClientContext context;
  SetDeadline(context, absl::Seconds(10));
  const std::string token = ReadFileToString(cluster.operator_token_file()).value_or("");
  context.AddMetadata(kOperatorTokenMetadata, std::string(absl::StripAsciiWhitespace(token)));
  proto::ModeRequest request;
  request.set_mode(std::string(SyncModeName(mode)));
  proto::ModeReply reply;
  const grpc::Status status = stub->SetMode(&context, request, &reply);
  EXPECT_TRUE(status.ok()) << status.error_message();
}

double MetricOf(const launch::ClusterProcess& process, const std::string& name,
                const std::map<std::string, std::string>& labels) {
  absl::StatusOr<std::vector<launch::Sample>> samples = launch::FetchMetrics(process.metrics_port);
  if (!samples.ok()) return -1;
  return launch::FindSample(*samples, name, labels).value_or(-1);
}

std::vector<float> ReadParams(const std::string& path) {
  const std::string bytes = ReadFileToString(path).value_or("");
  std::vector<float> values(bytes.size() / sizeof(float));
  std::memcpy(values.data(), bytes.data(), values.size() * sizeof(float));
  return values;
}

std::string ClusterLogs(launch::LocalCluster& cluster) {
  std::string logs;
  for (auto& process : cluster.processes()) {
    logs += absl::StrCat("--- ", process->name, ":\n",
                         launch::TailOfFile(process->process.log_path(), 8));
  }
  return logs;
}

bool Eventually(launch::LocalCluster& cluster, const std::function<bool()>& condition,
                absl::Duration limit, bool workers_may_die) {
  const absl::Status status = PollUntil(condition, limit, [&]() -> std::optional<std::string> {
    if (workers_may_die) cluster.CollectLostWorkers();
    if (std::optional<launch::ProcessEnd> dead = cluster.DeadChild()) return dead->Describe();
    return std::nullopt;
  });
  if (status.ok()) return true;
  ADD_FAILURE() << status.message() << "; the logs end:\n" << ClusterLogs(cluster);
  return false;
}

}  // namespace ringside::testing
