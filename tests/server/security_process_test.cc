// Issue 13 with real processes: a stranger who can reach every port of a running cluster, and
// even holds a certificate of the cluster's CA (the operator's: mutual TLS lets it connect), but
// no join token, member credential or link key, tries each attack the issue lists. Every call is
// refused with UNAUTHENTICATED or PERMISSION_DENIED, and the job finishes with exactly the
// parameters of an undisturbed run.
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/grpc_util.h"
#include "gtest/gtest.h"
#include "launch/local_cluster.h"
#include "launch/prometheus_text.h"
#include "launch/temp_dir.h"
#include "proto/controller.grpc.pb.h"
#include "proto/ps.grpc.pb.h"
#include "proto/ring.grpc.pb.h"
#include "tests/support/elastic_test_util.h"
#include "tests/support/worker_processes.h"
#include "worker/local_training.h"

namespace ringside {
namespace {

using testing::MaxRelativeDifference;
using testing::ReadParams;

std::string Address(const launch::ClusterProcess& process) {
  return absl::StrCat("127.0.0.1:", process.port);
}

bool Refused(const grpc::Status& status) {
  return status.error_code() == grpc::StatusCode::UNAUTHENTICATED ||
         status.error_code() == grpc::StatusCode::PERMISSION_DENIED;
}

std::string Describe(const grpc::Status& status) {
  return absl::StrCat(status.error_code(), ": ", status.error_message());
}

TEST(SecurityProcessTest, AStrangerIsRefusedEverywhereAndTrainingIsUnaffected) {
  auto dir = launch::TempDir::Create("ringside-security-");
  ASSERT_TRUE(dir.ok());
  TrainingOptions training;
  training.model = "32,128,10";
  training.data = "synthetic:2048";
  training.batch_size = 64;
  training.optimizer.kind = OptimizerKind::kAdam;
  training.optimizer.learning_rate = 0.01f;
  training.steps = 800;
  auto cluster = launch::LocalCluster::Start(
      testing::ClusterOptions(dir->path(), 3, 2, SyncMode::kPs, training));
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  launch::LocalCluster& c = **cluster;
  launch::ClusterProcess& worker = *c.workers()[0];
  ASSERT_TRUE(testing::Eventually(c, [&] {
    return testing::MetricOf(worker, "ringside_steps_total", {{"mode", "ps"}}) >= 20;
  }));
  const uint64_t generation =
      static_cast<uint64_t>(testing::MetricOf(c.controller(), "ringside_generation"));

  auto controller =
      proto::Controller::NewStub(MakeChannel(c.controller_address(), c.client_security()));
  {  // Switching the job's mode without the operator token.
    grpc::ClientContext context;
    SetDeadline(context, absl::Seconds(10));
    proto::ModeRequest request;
    request.set_mode("ring");
    proto::ModeReply reply;
    const grpc::Status status = controller->SetMode(&context, request, &reply);
    EXPECT_TRUE(Refused(status)) << Describe(status);
  }
  for (uint64_t member = 1; member <= 5; ++member) {  // the 3 workers and 2 shards
    {  // Reading every member's assignment (ids are sequential).
      grpc::ClientContext context;
      SetDeadline(context, absl::Seconds(10));
      proto::WatchRequest request;
      request.set_member_id(member);
      auto watch = controller->Watch(&context, request);
      proto::Assignment assignment;
      EXPECT_FALSE(watch->Read(&assignment)) << "member " << member << "'s assignment leaked";
      const grpc::Status status = watch->Finish();
      EXPECT_TRUE(Refused(status)) << "member " << member << ": " << Describe(status);
    }
    {  // Keeping a member alive (or a dead one in the ring) with its heartbeats.
      grpc::ClientContext context;
      SetDeadline(context, absl::Seconds(10));
      proto::HeartbeatRequest request;
      request.set_member_id(member);
      request.set_generation(generation);
      proto::HeartbeatReply reply;
      const grpc::Status status = controller->Heartbeat(&context, request, &reply);
      EXPECT_TRUE(Refused(status)) << "member " << member << ": " << Describe(status);
    }
  }
  for (int s = 0; s < 2; ++s) {
    const std::string name = absl::StrCat("ps-", s);
    launch::ClusterProcess* shard = nullptr;
    for (auto& process : c.processes()) {
      if (process->name == name) shard = process.get();
    }
    ASSERT_NE(shard, nullptr);
    auto stub = proto::ParameterShard::NewStub(MakeChannel(Address(*shard), c.client_security()));
    {  // A forged push as rank 0 with values that would poison the optimiser for good.
      grpc::ClientContext context;
      SetDeadline(context, absl::Seconds(10));
      auto stream = stub->Step(&context);
      proto::PsPush push;
      push.set_generation(generation);
      push.set_worker_rank(0);
      push.set_step(0);
      push.set_range_elements(1);
      push.set_payload(std::string(4, '\x7f'));
      stream->Write(push);
      stream->WritesDone();
      proto::PsRangeValues ignored;
      while (stream->Read(&ignored)) {
      }
      const grpc::Status status = stream->Finish();
      EXPECT_TRUE(Refused(status)) << name << " push: " << Describe(status);
    }
    {  // Junk parameters for the next generation, which every worker would adopt.
      grpc::ClientContext context;
      SetDeadline(context, absl::Seconds(10));
      proto::PsLoadReply reply;
      auto writer = stub->Load(&context, &reply);
      proto::PsStateSegment segment;
      segment.set_generation(generation + 1);
      segment.set_workers(0x7fffffff);
      segment.set_payload(std::string(64, '\x7f'));
      writer->Write(segment);
      writer->WritesDone();
      const grpc::Status status = writer->Finish();
      EXPECT_TRUE(Refused(status)) << name << " load: " << Describe(status);
    }
    {  // The live model.
      grpc::ClientContext context;
      SetDeadline(context, absl::Seconds(10));
      auto reader = stub->GetParameters(&context, proto::PsRangeRequest());
      proto::PsRangeValues values;
      EXPECT_FALSE(reader->Read(&values)) << name << "'s parameters leaked";
      const grpc::Status status = reader->Finish();
      EXPECT_TRUE(Refused(status)) << name << " read: " << Describe(status);
    }
  }
  for (launch::ClusterProcess* target : c.workers()) {
    // A ring segment of the current generation from a claimed neighbour, and a huge one of a
    // far-future generation: neither may fail a collective or be held.
    for (uint64_t claimed : {generation, uint64_t{1} << 63}) {
      auto stub = proto::RingPeer::NewStub(MakeChannel(Address(*target), c.client_security()));
      grpc::ClientContext context;
      SetDeadline(context, absl::Seconds(10));
      proto::RingStreamSummary summary;
      auto writer = stub->Stream(&context, &summary);
      proto::RingSegment segment;
      segment.set_generation(claimed);
      segment.set_collective(claimed << 32 | 1);
      segment.set_sender_rank(0);
      segment.set_total_elements(3);
      segment.set_payload(std::string(claimed == generation ? 4 : 32 << 20, '\0'));
      writer->Write(segment);
      writer->WritesDone();
      const grpc::Status status = writer->Finish();
      EXPECT_TRUE(Refused(status)) << target->name << ": " << Describe(status);
    }
  }

  auto results = c.WaitForResults(absl::Seconds(180));
  ASSERT_TRUE(results.ok()) << results.status() << "\n" << testing::ClusterLogs(c);
  ASSERT_EQ(results->size(), 3u);
  EXPECT_EQ(testing::MetricOf(c.controller(), "ringside_generation"), generation)
      << "nobody was dropped, added or switched";
  auto reference = worker::TrainLocally(training);
  ASSERT_TRUE(reference.ok()) << reference.status();
  for (launch::ClusterProcess* each : c.workers()) {
    const std::vector<float> params = ReadParams(each->params_file);
    ASSERT_EQ(params.size(), reference->parameters.size());
    EXPECT_LT(MaxRelativeDifference(params, reference->parameters), 1e-5) << each->name;
  }
}

}  // namespace
}  // namespace ringside
