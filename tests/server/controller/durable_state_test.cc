// Durable state through the Controller service over real gRPC in one process: only rank 0 of the
// current generation may upload, authenticated when the call starts; every size is checked; a
// step the members' reports do not account for is held, never kept, and one past --steps or
// with a NaN is refused, nothing on disk changed; what is read back is bit-identical, the keeper
// writes it to its directory, and a controller reopened on that directory resumes from the
// newest intact checkpoint (a damaged newer one is skipped and named).
#include <stdlib.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "common/auth.h"
#include "common/grpc_util.h"
#include "gtest/gtest.h"
#include "prometheus/counter.h"
#include "server/controller/checkpoint_keeper.h"
#include "server/controller/controller_client.h"
#include "server/controller/controller_service.h"
#include "tests/support/poll.h"

namespace ringside::server {
namespace {

using testing::PollUntil;

constexpr CheckpointShape kShape{/*parameters=*/300000, /*optimizer_state=*/600001};

std::vector<float> Ramp(size_t size, float start) {
  std::vector<float> values(size);
  for (size_t i = 0; i < size; ++i) values[i] = start + 0.25f * static_cast<float>(i % 1000);
  return values;
}

class DurableStateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir_template[] = "/tmp/ringside-durable-XXXXXX";
    dir_ = mkdtemp(dir_template);
    MembershipConfig config;
    config.workers = 2;
    config.join_token = "s3cret";
    config.heartbeat_timeout = absl::Seconds(60);  // nobody expires during a test
    membership_ = std::make_unique<Membership>(config);
    auto keeper = CheckpointKeeper::Open(dir_, "job-a", kShape, nullptr, log_);
    ASSERT_TRUE(keeper.ok()) << keeper.status();
    keeper_ = *std::move(keeper);
    proto::JobSpec job;
    job.set_steps(1000);
    service_ = std::make_unique<ControllerService>(*membership_, job, absl::Seconds(60), log_,
                                                   upload_limits_);
    service_->EnableCheckpoints(keeper_.get(), /*every=*/10, &nonfinite_refused_);
    auto server = StartServer("127.0.0.1:0", {service_.get()}, TransportSecurity());
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    for (const char* address : {"worker-a.test:7000", "worker-b.test:7000"}) {
      ControllerClientOptions options;
      options.controller = "127.0.0.1:" + std::to_string(server_.port);
      options.join_token = "s3cret";
      options.address = address;
      options.credential = std::string(32, address[7]);  // 'a' or 'b': each member its own
      auto client = ControllerClient::Connect(options);
      ASSERT_TRUE(client.ok()) << client.status();
      clients_.push_back(*std::move(client));
    }
    auto assignment = clients_[0]->WaitForAssignment(0, absl::Now() + absl::Seconds(30));
    ASSERT_TRUE(assignment.ok()) << assignment.status();
    ASSERT_EQ(assignment->rank(), 0);
    EXPECT_EQ(assignment->checkpoint_every(), 10u);
    stub_ = proto::Controller::NewStub(
        MakeChannel("127.0.0.1:" + std::to_string(server_.port), TransportSecurity()));
  }

  // Rank 1 heartbeats with `completed` steps, as its client's heartbeat thread does.
  void RankOneReports(uint64_t completed) {
    grpc::ClientContext context;
    SetDeadline(context, absl::Seconds(30));
    context.AddMetadata(kMemberCredentialMetadata, std::string(32, 'b'));
    proto::HeartbeatRequest request;
    request.set_member_id(clients_[1]->member_id());
    request.set_generation(membership_->topology().generation);
    request.set_completed_steps(completed);
    proto::HeartbeatReply reply;
    ASSERT_TRUE(stub_->Heartbeat(&context, request, &reply).ok());
  }

  std::vector<std::string> Files() const {
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
      names.push_back(entry.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    return names;
  }

  void TearDown() override {
    clients_.clear();
    server_ = StartedServer();
    service_.reset();
    keeper_.reset();
    std::filesystem::remove_all(dir_);
  }

  std::string dir_;
  std::ostringstream log_;
  std::unique_ptr<Membership> membership_;
  std::unique_ptr<CheckpointKeeper> keeper_;
  std::unique_ptr<ControllerService> service_;
  StartedServer server_;
  std::vector<std::unique_ptr<ControllerClient>> clients_;  // rank 0, rank 1
  std::unique_ptr<proto::Controller::Stub> stub_;
  prometheus::Counter nonfinite_refused_;
  StreamLimits upload_limits_ = ControllerService::kUploadLimits;  // derived fixtures change it
};

// Issue 51: checkpoint uploads are bounded per member and in all, and watched for silence.
class UploadLimitsTest : public DurableStateTest {
 protected:
  // A rank-0 upload, opened with its real credential and left silent.
  struct OpenUpload {
    std::unique_ptr<grpc::ClientContext> context = std::make_unique<grpc::ClientContext>();
    proto::CheckpointReply reply;
    std::unique_ptr<grpc::ClientWriter<proto::CheckpointSegment>> writer;
  };
  std::unique_ptr<OpenUpload> Open() {
    auto open = std::make_unique<OpenUpload>();
    SetDeadline(*open->context, absl::Seconds(60));
    open->context->AddMetadata(kMemberCredentialMetadata, std::string(32, 'a'));
    open->context->AddMetadata(kMemberIdMetadata, std::to_string(clients_[0]->member_id()));
    open->writer = stub_->PutCheckpoint(open->context.get(), &open->reply);
    return open;
  }
};

class UploadBoundTest : public UploadLimitsTest {
 protected:
  UploadBoundTest() { upload_limits_ = {absl::Minutes(10), absl::Minutes(10), 2, 4}; }
};

// Each upload receives the job's whole state: rank 0 may hold two at once, not more, so even an
// insider cannot multiply what the controller holds; a place freed is taken again.
TEST_F(UploadBoundTest, RankZeroHoldsAtMostTwoUploadsAtOnce) {
  // Admitted when the controller has taken the call: each in turn, so the third is the one over.
  std::unique_ptr<OpenUpload> first = Open();
  ASSERT_TRUE(PollUntil([&] { return service_->uploads_held() == 1; }, absl::Seconds(30)).ok());
  std::unique_ptr<OpenUpload> second = Open();
  ASSERT_TRUE(PollUntil([&] { return service_->uploads_held() == 2; }, absl::Seconds(30)).ok());
  std::unique_ptr<OpenUpload> third = Open();
  const grpc::Status refused = third->writer->Finish();
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << refused.error_message();
  first->context->TryCancel();
  EXPECT_EQ(first->writer->Finish().error_code(), grpc::StatusCode::CANCELLED);
  second->context->TryCancel();
  EXPECT_EQ(second->writer->Finish().error_code(), grpc::StatusCode::CANCELLED);
  // The places are free once the controller has seen the calls end: an upload goes through.
  ASSERT_TRUE(PollUntil([&] { return service_->uploads_held() == 0; }, absl::Seconds(30)).ok());
  const std::vector<float> params = Ramp(kShape.parameters, 1);
  const std::vector<float> moments = Ramp(kShape.optimizer_state, 0.5f);
  RankOneReports(10);  // accounts for the step: the upload is kept, not held
  const absl::Status put = clients_[0]->PutCheckpoint(10, params, moments);
  EXPECT_TRUE(put.ok()) << put;
  EXPECT_EQ(keeper_->newest_step(), 10u);
}

class UploadSilenceTest : public UploadLimitsTest {
 protected:
  UploadSilenceTest() { upload_limits_ = {absl::Milliseconds(1), absl::Minutes(10), 2, 4}; }
};

// An upload that sends nothing is cancelled at its first-message deadline; nothing is kept.
TEST_F(UploadSilenceTest, ASilentUploadIsCancelledAtItsFirstMessageDeadline) {
  std::unique_ptr<OpenUpload> silent = Open();
  EXPECT_EQ(silent->writer->Finish().error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_EQ(keeper_->newest_step(), 0u);
}

TEST_F(DurableStateTest, OnlyRankZeroUploadsAndWhatIsReadBackIsBitIdentical) {
  const std::vector<float> params = Ramp(kShape.parameters, 1.0f);
  const std::vector<float> moments = Ramp(kShape.optimizer_state, -3.0f);
  EXPECT_EQ(clients_[1]->PutCheckpoint(10, params, moments).code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(clients_[0]->PutCheckpoint(10, Ramp(5, 0), moments).code(),
            absl::StatusCode::kInvalidArgument)
      << "sizes are the job's";
  EXPECT_EQ(keeper_->newest_step(), 0u) << "a refused upload stores nothing";
  RankOneReports(9);
  ASSERT_TRUE(clients_[0]->PutCheckpoint(10, params, moments).ok());
  EXPECT_EQ(clients_[0]->PutCheckpoint(10, params, moments).code(),
            absl::StatusCode::kFailedPrecondition)
      << "not newer";

  std::vector<float> read_params(kShape.parameters), read_moments(kShape.optimizer_state);
  ASSERT_TRUE(clients_[1]
                  ->GetCheckpoint(10, absl::MakeSpan(read_params), absl::MakeSpan(read_moments))
                  .ok());
  EXPECT_EQ(read_params, params);
  EXPECT_EQ(read_moments, moments);
  EXPECT_EQ(clients_[1]
                ->GetCheckpoint(20, absl::MakeSpan(read_params), absl::MakeSpan(read_moments))
                .code(),
            absl::StatusCode::kNotFound);
  std::vector<float> too_short(7);
  EXPECT_EQ(clients_[1]
                ->GetCheckpoint(10, absl::MakeSpan(too_short), absl::MakeSpan(read_moments))
                .code(),
            absl::StatusCode::kInternal)
      << "a checkpoint that does not fit is refused, not copied";
}

TEST_F(DurableStateTest, AReopenedKeeperResumesFromTheNewestIntactCheckpoint) {
  const std::vector<float> moments = Ramp(kShape.optimizer_state, 0.5f);
  RankOneReports(30);
  for (uint64_t step : {10, 20, 30}) {
    ASSERT_TRUE(clients_[0]->PutCheckpoint(step, Ramp(kShape.parameters, step), moments).ok());
    keeper_->AwaitWritten();  // each one reaches the disk (the writer keeps only the newest)
  }
  keeper_->AwaitWritten();
  std::ostringstream reopened_log;
  {
    auto reopened = CheckpointKeeper::Open(dir_, "job-a", kShape, nullptr, reopened_log);
    ASSERT_TRUE(reopened.ok()) << reopened.status();
    EXPECT_EQ((*reopened)->newest_step(), 30u);
    EXPECT_EQ((*reopened)->newest()->parameters, Ramp(kShape.parameters, 30));
  }

  // The newest file damaged in its middle: the one before it is used, and the log names both.
  const std::string newest = dir_ + "/checkpoint-00000000000000000030.ckpt";
  {
    std::fstream file(newest, std::ios::in | std::ios::out | std::ios::binary);
    ASSERT_TRUE(file.good()) << newest;
    file.seekp(4096);
    file.put('\x7f');
  }
  auto fallback = CheckpointKeeper::Open(dir_, "job-a", kShape, nullptr, reopened_log);
  ASSERT_TRUE(fallback.ok()) << fallback.status();
  EXPECT_EQ((*fallback)->newest_step(), 20u);
  EXPECT_EQ((*fallback)->newest()->parameters, Ramp(kShape.parameters, 20));
  EXPECT_NE(reopened_log.str().find("skipping a damaged checkpoint"), std::string::npos);
  EXPECT_NE(reopened_log.str().find(newest), std::string::npos) << reopened_log.str();

  auto other_job = CheckpointKeeper::Open(dir_, "job-b", kShape, nullptr, reopened_log);
  EXPECT_EQ(other_job.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(other_job.status().message().find("another job"), std::string::npos);
}

TEST_F(DurableStateTest, AnUploadIsAuthenticatedWhenTheCallStartsBeforeAnyPayloadIsRead) {
  // No segment is ever written: a controller that read the first message before checking the
  // caller would wait for it until the deadline.
  for (const std::string& credential : {std::string(), std::string(32, 'x')}) {
    grpc::ClientContext context;
    SetDeadline(context, absl::Seconds(30));
    if (!credential.empty()) context.AddMetadata(kMemberCredentialMetadata, credential);
    context.AddMetadata(kMemberIdMetadata, std::to_string(clients_[0]->member_id()));
    proto::CheckpointReply reply;
    auto writer = stub_->PutCheckpoint(&context, &reply);
    EXPECT_EQ(writer->Finish().error_code(), grpc::StatusCode::UNAUTHENTICATED);
  }
  grpc::ClientContext unnamed;  // a credential, but no member id beside it
  SetDeadline(unnamed, absl::Seconds(30));
  unnamed.AddMetadata(kMemberCredentialMetadata, std::string(32, 'a'));
  proto::CheckpointReply reply;
  EXPECT_EQ(stub_->PutCheckpoint(&unnamed, &reply)->Finish().error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(keeper_->newest_step(), 0u);
}

TEST_F(DurableStateTest, AnUploadInAnotherMembersNameIsRefused) {
  grpc::ClientContext context;
  SetDeadline(context, absl::Seconds(30));
  context.AddMetadata(kMemberCredentialMetadata, std::string(32, 'a'));
  context.AddMetadata(kMemberIdMetadata, std::to_string(clients_[0]->member_id()));
  proto::CheckpointReply reply;
  auto writer = stub_->PutCheckpoint(&context, &reply);
  proto::CheckpointSegment segment;
  segment.set_member_id(clients_[1]->member_id());
  segment.set_step(10);
  segment.set_parameters(kShape.parameters);
  segment.set_state_elements(kShape.state_elements());
  writer->Write(segment);
  writer->WritesDone();
  EXPECT_EQ(writer->Finish().error_code(), grpc::StatusCode::PERMISSION_DENIED);
}

TEST_F(DurableStateTest, AFutureCheckpointIsHeldNeverKeptAndTheRealRankZerosReplacesIt) {
  RankOneReports(10);
  const std::vector<float> moments = Ramp(kShape.optimizer_state, 0.5f);
  ASSERT_TRUE(clients_[0]->PutCheckpoint(10, Ramp(kShape.parameters, 1), moments).ok());
  keeper_->AwaitWritten();
  const std::vector<std::string> files = Files();
  // Rank 0's credential, a step far ahead of what rank 1 reported, every parameter 7.
  const std::vector<float> forged(kShape.parameters, 7.0f);
  ASSERT_TRUE(clients_[0]->PutCheckpoint(900, forged, moments).ok()) << "held, not refused";
  keeper_->AwaitWritten();
  EXPECT_EQ(keeper_->newest_step(), 10u) << "a held upload is not the job's checkpoint";
  EXPECT_EQ(Files(), files) << "nor on disk";
  RankOneReports(19);  // not enough for step 900
  EXPECT_EQ(keeper_->newest_step(), 10u);
  // The real rank 0's next upload is accepted and replaces the held one.
  ASSERT_TRUE(clients_[0]->PutCheckpoint(20, Ramp(kShape.parameters, 20), moments).ok());
  EXPECT_EQ(keeper_->newest_step(), 20u);
  RankOneReports(899);  // would have accounted for step 900
  EXPECT_EQ(keeper_->newest_step(), 20u) << "the forged upload was dropped";
  EXPECT_EQ(keeper_->newest()->parameters, Ramp(kShape.parameters, 20));
}

TEST_F(DurableStateTest, AHeldUploadIsKeptOnceAReportAccountsForIt) {
  RankOneReports(3);
  const std::vector<float> params = Ramp(kShape.parameters, 1);
  const std::vector<float> moments = Ramp(kShape.optimizer_state, 0.5f);
  ASSERT_TRUE(clients_[0]->PutCheckpoint(10, params, moments).ok());
  EXPECT_EQ(keeper_->newest_step(), 0u);
  RankOneReports(9);  // rank 1 completed the step before it: rank 0 may well have done step 10
  EXPECT_EQ(keeper_->newest_step(), 10u);
  EXPECT_EQ(keeper_->newest()->parameters, params);
}

TEST_F(DurableStateTest, AStepPastTheJobsStepsOrANonFiniteValueIsRefusedAndNothingChanges) {
  RankOneReports(1000);
  const std::vector<float> params = Ramp(kShape.parameters, 1);
  std::vector<float> moments = Ramp(kShape.optimizer_state, 0.5f);
  ASSERT_TRUE(clients_[0]->PutCheckpoint(10, params, moments).ok());
  keeper_->AwaitWritten();
  const std::vector<std::string> files = Files();
  EXPECT_EQ(clients_[0]->PutCheckpoint(1001, params, moments).code(),
            absl::StatusCode::kInvalidArgument)
      << "the job has 1000 steps";
  moments[12345] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(clients_[0]->PutCheckpoint(20, params, moments).code(),
            absl::StatusCode::kInvalidArgument);
  std::vector<float> infinite = params;
  infinite.back() = -std::numeric_limits<float>::infinity();
  EXPECT_EQ(clients_[0]->PutCheckpoint(20, infinite, Ramp(kShape.optimizer_state, 0.5f)).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(nonfinite_refused_.Value(), 2);
  EXPECT_NE(log_.str().find("checkpoint of step 20: 1 values NaN or infinite"), std::string::npos)
      << log_.str();
  keeper_->AwaitWritten();
  EXPECT_EQ(keeper_->newest_step(), 10u);
  EXPECT_EQ(Files(), files) << "a refused upload changes nothing on disk";
}

}  // namespace
}  // namespace ringside::server
