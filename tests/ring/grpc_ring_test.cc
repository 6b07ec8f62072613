// The ring over real gRPC servers on port 0 in one process: correctness, per-link accounting, and
// every kind of bad input from a rogue client.
#include <functional>
#include <memory>
#include <thread>
#include <tuple>
#include <vector>

#include "common/auth.h"
#include "common/cost_model.h"
#include "common/grpc_util.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "ring/ring_member.h"
#include "tests/ring/ring_test_util.h"
#include "tests/support/poll.h"

namespace ringside::ring {
namespace {

using testing::ExpectedSum;
using testing::RankInput;

// One worker: its own registry (as in its own process), ring member and gRPC server.
struct Node {
  std::shared_ptr<prometheus::Registry> registry = std::make_shared<prometheus::Registry>();
  Metrics metrics{registry};
  std::unique_ptr<RingMember> member;
  StartedServer server;
};

class GrpcRingTest : public ::testing::Test {
 protected:
  // With `credentials`, every member checks link keys (an elastic job's ring, common/auth.h)
  // and presents the one the controller would give it.
  void StartRing(int world, bool credentials = false, StreamLimits limits = {}) {
    std::vector<std::string> addresses;
    for (int rank = 0; rank < world; ++rank) {
      auto node = std::make_unique<Node>();
      node->member = std::make_unique<RingMember>(RingTopology{1, world, rank}, &node->metrics,
                                                  TransportSecurity(), RingInboxOptions{}, limits);
      if (credentials) node->member->SetMemberCredential(CredentialOf(rank));
      auto server = StartServer("127.0.0.1:0", {node->member->service()}, TransportSecurity());
      ASSERT_TRUE(server.ok()) << server.status();
      node->server = *std::move(server);
      addresses.push_back("127.0.0.1:" + std::to_string(node->server.port));
      nodes_.push_back(std::move(node));
    }
    for (int rank = 0; rank < world; ++rank) {
      const std::string key =
          credentials ? RingLinkKey(CredentialOf((rank + 1) % world), 1, rank) : "";
      ASSERT_TRUE(nodes_[rank]->member->Connect(addresses, key).ok());
    }
    addresses_ = addresses;
  }

  static std::string CredentialOf(int rank) { return Hmac("ring-test", std::to_string(rank)); }

  // Runs collective `collective` on the given ranks; returns their statuses.
  std::vector<absl::Status> RunOn(const std::vector<int>& ranks, uint64_t collective,
                                  uint64_t elements, std::vector<std::vector<float>>* out,
                                  absl::Duration timeout = absl::Seconds(20)) {
    std::vector<absl::Status> statuses(nodes_.size());
    out->assign(nodes_.size(), {});
    std::vector<std::thread> threads;
    for (int rank : ranks) {
      (*out)[rank] = RankInput(rank, elements);
      threads.emplace_back([&, rank] {
        AllreduceOptions options;
        options.segment_bytes = 64 << 10;
        options.timeout = timeout;
        statuses[rank] =
            nodes_[rank]->member->Allreduce(collective, absl::MakeSpan((*out)[rank]), options);
      });
    }
    for (auto& t : threads) t.join();
    return statuses;
  }

  void ExpectCorrectAllreduce(uint64_t collective, uint64_t elements) {
    std::vector<int> all;
    for (size_t r = 0; r < nodes_.size(); ++r) all.push_back(static_cast<int>(r));
    std::vector<std::vector<float>> buffers;
    const auto statuses = RunOn(all, collective, elements, &buffers);
    for (size_t r = 0; r < nodes_.size(); ++r) {
      ASSERT_TRUE(statuses[r].ok()) << "rank " << r << ": " << statuses[r];
      for (uint64_t i = 0; i < elements; ++i) {
        ASSERT_EQ(buffers[r][i], ExpectedSum(static_cast<int>(nodes_.size()), i));
      }
    }
  }

  double Counter(int rank, const std::string& name, const std::string& src,
                 const std::string& dst) {
    for (const auto& family : nodes_[rank]->registry->Collect()) {
      if (family.name != name) continue;
      for (const auto& metric : family.metric) {
        std::map<std::string, std::string> labels;
        for (const auto& label : metric.label) labels[label.name] = label.value;
        if (labels["src"] == src && labels["dst"] == dst && labels["mode"] == "ring") {
          return metric.counter.value;
        }
      }
    }
    return -1;
  }

  // Polls a counter (there is no event to wait on) until it is positive; bounded.
  void WaitForCounter(int rank, const std::string& name, const std::string& src,
                      const std::string& dst) {
    const absl::Time give_up = absl::Now() + absl::Seconds(10);
    while (Counter(rank, name, src, dst) <= 0 && absl::Now() < give_up) {
      absl::SleepFor(absl::Milliseconds(5));
    }
    ASSERT_GT(Counter(rank, name, src, dst), 0) << name << " " << src << "->" << dst;
  }

  // A client that is not part of the ring, writing hand-made segments to `rank`.
  // With `cancel_midway`, the stream is cancelled once `rank` has counted the segments' bytes.
  grpc::Status SendRogue(int rank, const std::vector<proto::RingSegment>& segments,
                         bool cancel_midway = false, const std::string& link_key = "") {
    auto stub = proto::RingPeer::NewStub(MakeChannel(addresses_[rank], TransportSecurity()));
    grpc::ClientContext context;
    SetDeadline(context, absl::Seconds(10));
    // What the key claims: the first segment's generation and sender.
    if (!link_key.empty()) {
      AddLinkClaim(context, LinkClaim{link_key, segments.front().generation(),
                                      static_cast<int>(segments.front().sender_rank()), true});
    }
    proto::RingStreamSummary summary;
    auto writer = stub->Stream(&context, &summary);
    for (const auto& segment : segments) {
      if (!writer->Write(segment)) break;
    }
    if (cancel_midway) {
      const std::string left = WorkerName((rank + static_cast<int>(nodes_.size()) - 1) %
                                          static_cast<int>(nodes_.size()));
      WaitForCounter(rank, "ringside_link_received_bytes_total", left, WorkerName(rank));
      context.TryCancel();
    } else {
      writer->WritesDone();
    }
    return writer->Finish();
  }

  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<std::string> addresses_;
};

// A valid-looking first segment of `collective` from `sender` in a ring of 4 with 40 elements.
proto::RingSegment Segment(uint32_t sender, uint64_t collective, uint64_t elements = 10) {
  proto::RingSegment s;
  s.set_generation(1);
  s.set_collective(RingWireCollective(collective));
  s.set_sender_rank(sender);
  s.set_step(0);
  s.set_chunk(sender);  // at step 0 rank r sends chunk r
  s.set_offset(0);
  s.set_total_elements(40);
  s.set_dtype(WireDtypeNumber(WireDtype::kFp32));
  s.set_payload(std::string(elements * sizeof(float), '\0'));
  return s;
}

TEST_F(GrpcRingTest, FourWorkersAgreeAndEveryLinkCountsExactlyTheModel) {
  StartRing(4);
  constexpr uint64_t kElements = (1 << 20) + 3;  // not divisible by 4: real chunk sizes
  ExpectCorrectAllreduce(1, kElements);
  ExpectCorrectAllreduce(2, kElements);
  for (int r = 0; r < 4; ++r) {
    const std::string src = WorkerName(r), dst = WorkerName((r + 1) % 4);
    const double sent = Counter(r, "ringside_link_bytes_total", src, dst);
    const double expected = 2.0 * 4 * static_cast<double>(RingElementsSentByRank(kElements, 4, r));
    EXPECT_EQ(sent, expected) << src << "->" << dst;
    EXPECT_EQ(Counter(r, "ringside_link_expected_bytes_total", src, dst), expected);
    EXPECT_EQ(Counter((r + 1) % 4, "ringside_link_received_bytes_total", src, dst), expected);
    EXPECT_GT(Counter(r, "ringside_link_wire_bytes_total", src, dst), expected);
  }
}

TEST_F(GrpcRingTest, BadSegmentsGetPreciseStatusesAndThePeerKeepsServing) {
  StartRing(4);
  // Worker 2's left neighbour is worker 1.
  proto::RingSegment wrong_length = Segment(1, 1, 11);
  EXPECT_EQ(SendRogue(2, {wrong_length}).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  proto::RingSegment unknown_sender = Segment(3, 1);
  EXPECT_EQ(SendRogue(2, {unknown_sender}).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  proto::RingSegment old_generation = Segment(1, 1);
  old_generation.set_generation(0);
  EXPECT_EQ(SendRogue(2, {old_generation}).error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  proto::RingSegment wrong_step = Segment(1, 1);
  wrong_step.set_step(1);
  wrong_step.set_chunk(0);
  const grpc::Status step_status = SendRogue(2, {wrong_step});
  EXPECT_EQ(step_status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(step_status.error_message().find("step 1"), std::string::npos)
      << step_status.error_message();
  ExpectCorrectAllreduce(5, 40);
  ExpectCorrectAllreduce(6, 100001);
}

// Issue 13: in an elastic ring only the assigned left neighbour of a generation may stream to a
// worker. A stranger, a member presenting another link's key, or one claiming another rank is
// refused before anything reaches the inbox, during a collective too, which completes unharmed;
// a far-future generation is not held either.
TEST_F(GrpcRingTest, OnlyTheAssignedLeftNeighbourMayStreamAndOthersCannotFailTheCollective) {
  StartRing(4, /*credentials=*/true);
  ExpectCorrectAllreduce(1, 4000);
  std::vector<std::vector<float>> buffers;
  std::vector<absl::Status> statuses;
  std::thread collective([&] { statuses = RunOn({0, 1, 2, 3}, 2, 1 << 20, &buffers); });
  WaitForCounter(3, "ringside_link_received_bytes_total", "worker-2", "worker-3");
  const std::string key_1_to_2 = RingLinkKey(CredentialOf(2), 1, 1);
  for (const auto& [segment, key, who] :
       std::vector<std::tuple<proto::RingSegment, std::string, std::string>>{
           {Segment(1, 3), "", "no key"},
           {Segment(1, 3), "0123456789abcdef", "a made-up key"},
           {Segment(1, 3), RingLinkKey(CredentialOf(3), 1, 2), "the 2->3 link's key"},
           {Segment(3, 3), key_1_to_2, "the right key, another sender rank"},
       }) {
    EXPECT_EQ(SendRogue(2, {segment}, false, key).error_code(), grpc::StatusCode::PERMISSION_DENIED)
        << who;
  }
  proto::RingSegment far_future = Segment(1, 3);
  far_future.set_generation(uint64_t{1} << 63);
  EXPECT_EQ(SendRogue(2, {far_future}, false, key_1_to_2).error_code(),
            grpc::StatusCode::PERMISSION_DENIED)
      << "generation 1's key does not open generation 2^63";
  collective.join();
  for (int rank = 0; rank < 4; ++rank) {
    ASSERT_TRUE(statuses[rank].ok()) << "rank " << rank << ": " << statuses[rank];
    EXPECT_EQ(buffers[rank][12345], ExpectedSum(4, 12345));
  }
  ExpectCorrectAllreduce(4, 4000);
}

TEST_F(GrpcRingTest, ABadSegmentDuringACollectiveFailsEveryWorkerWithinTheDeadline) {
  StartRing(4);
  // Worker 0 stays out, so the collective cannot finish by itself.
  std::vector<std::vector<float>> buffers;
  std::vector<absl::Status> statuses;
  const absl::Time start = absl::Now();
  std::thread collective([&] { statuses = RunOn({1, 2, 3}, 1, 4000, &buffers, absl::Seconds(5)); });
  // Worker 2 has started once worker 3 has received from it.
  WaitForCounter(3, "ringside_link_received_bytes_total", "worker-2", "worker-3");
  EXPECT_EQ(SendRogue(2, {Segment(3, 1)}).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  collective.join();
  EXPECT_LT(absl::Now() - start, absl::Seconds(9));
  EXPECT_EQ(statuses[2].code(), absl::StatusCode::kInvalidArgument) << statuses[2];
  EXPECT_FALSE(statuses[1].ok());
  EXPECT_FALSE(statuses[3].ok());
  ExpectCorrectAllreduce(2, 4000);
}

TEST_F(GrpcRingTest, AStreamThatStopsMidwayFailsTheReceiverPromptly) {
  StartRing(2);
  std::vector<std::vector<float>> buffers;
  std::vector<absl::Status> statuses;
  const absl::Time start = absl::Now();
  std::thread collective([&] { statuses = RunOn({1}, 1, 40, &buffers, absl::Seconds(30)); });
  // Worker 1 has begun the collective once it has sent its first chunk to worker 0.
  WaitForCounter(1, "ringside_link_bytes_total", "worker-1", "worker-0");
  // Impersonates worker 0 (worker 1's left neighbour): half of chunk 0, then the stream dies.
  proto::RingSegment half = Segment(0, 1, 10);
  half.set_total_elements(40);  // chunks of 20 in a ring of 2
  SendRogue(1, {half}, /*cancel_midway=*/true);
  collective.join();
  EXPECT_LT(absl::Now() - start, absl::Seconds(15));
  EXPECT_EQ(statuses[1].code(), absl::StatusCode::kUnavailable) << statuses[1];
  EXPECT_NE(statuses[1].message().find("midway"), std::string::npos) << statuses[1];
  ExpectCorrectAllreduce(2, 40);
}

TEST_F(GrpcRingTest, AStreamTheNeighbourEndsFailsTheSenderAtOnceNotAtItsNextWrite) {
  StartRing(2);
  std::vector<std::vector<float>> buffers;
  std::vector<absl::Status> statuses;
  const absl::Time start = absl::Now();
  // Worker 0 stays out: worker 1 sends its chunk, then only waits to receive.
  std::thread collective([&] { statuses = RunOn({1}, 1, 40, &buffers, absl::Seconds(30)); });
  // Once worker 0 has accepted worker 1's chunk, worker 1 has nothing more to write.
  WaitForCounter(0, "ringside_link_received_bytes_total", "worker-1", "worker-0");
  nodes_[0]->server.Shutdown(absl::ZeroDuration());  // ends worker 1's stream from the far side
  collective.join();
  EXPECT_LT(absl::Now() - start, absl::Seconds(15));
  EXPECT_FALSE(statuses[1].ok());
  EXPECT_NE(statuses[1].code(), absl::StatusCode::kDeadlineExceeded) << statuses[1];
  EXPECT_NE(statuses[1].message().find("stream to worker-0"), std::string::npos) << statuses[1];
}

TEST_F(GrpcRingTest, ADeadNeighbourGivesDeadlineExceededNotAHang) {
  StartRing(3);
  nodes_[0]->server.Shutdown(absl::ZeroDuration());
  std::vector<std::vector<float>> buffers;
  const absl::Time start = absl::Now();
  const auto statuses = RunOn({1, 2}, 1, 1000, &buffers, absl::Seconds(2));
  EXPECT_LT(absl::Now() - start, absl::Seconds(8));
  EXPECT_FALSE(statuses[1].ok());
  EXPECT_FALSE(statuses[2].ok());
}

// A receive past its deadline says what this worker's own send side did: a ring waits in a
// cycle, so a link that never connected (here 2's, to the dead 0) is told apart from one that
// delivered (1's, to 2). Rank 2's deadline comes first, so each fails by its own.
TEST_F(GrpcRingTest, ATimedOutReceiveSaysWhetherThisWorkersOwnLinkDelivered) {
  StartRing(3);
  nodes_[0]->server.Shutdown(absl::ZeroDuration());
  std::vector<absl::Status> statuses(3);
  std::vector<std::vector<float>> buffers = {{}, RankInput(1, 1000), RankInput(2, 1000)};
  std::vector<std::thread> threads;
  for (int rank : {1, 2}) {
    threads.emplace_back([&, rank] {
      AllreduceOptions options;
      options.timeout = rank == 2 ? absl::Seconds(1) : absl::Seconds(3);
      statuses[rank] = nodes_[rank]->member->Allreduce(1, absl::MakeSpan(buffers[rank]), options);
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(statuses[2].code(), absl::StatusCode::kDeadlineExceeded) << statuses[2];
  EXPECT_NE(statuses[2].message().find("this worker's link to worker-0 (" + addresses_[0] + ")"),
            std::string::npos)
      << statuses[2];
  EXPECT_NE(statuses[2].message().find("; segments written: 0,"), std::string::npos) << statuses[2];
  EXPECT_EQ(statuses[2].message().find(" is ready;"), std::string::npos) << statuses[2];
  EXPECT_EQ(statuses[1].code(), absl::StatusCode::kDeadlineExceeded) << statuses[1];
  EXPECT_NE(statuses[1].message().find("this worker's link to worker-2"), std::string::npos)
      << statuses[1];
  EXPECT_EQ(statuses[1].message().find("; segments written: 0,"), std::string::npos) << statuses[1];
}

// Issue 51, point 1, the ring's side: one worker's RingPeer service (its credential set, so an
// elastic ring's) with small stream bounds, driven by hand-made streams.
class RingStreamLimitsTest : public ::testing::Test {
 protected:
  void Start(StreamLimits limits) {
    service_ = std::make_unique<RingPeerService>(inbox_, limits);
    service_->SetMemberCredential(Credential());
    auto server = StartServer("127.0.0.1:0", {service_.get()}, TransportSecurity());
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    stub_ = proto::RingPeer::NewStub(
        MakeChannel("127.0.0.1:" + std::to_string(server_.port), TransportSecurity()));
  }
  static std::string Credential() { return Hmac("ring-limits-test", "worker-2"); }

  struct OpenStream {
    std::unique_ptr<grpc::ClientContext> context = std::make_unique<grpc::ClientContext>();
    proto::RingStreamSummary summary;
    std::unique_ptr<grpc::ClientWriter<proto::RingSegment>> writer;
  };
  // A stream to worker 2 claiming `claim`, nothing written yet.
  std::unique_ptr<OpenStream> Open(const LinkClaim& claim) {
    auto open = std::make_unique<OpenStream>();
    SetDeadline(*open->context, absl::Seconds(60));
    AddLinkClaim(*open->context, claim);
    open->writer = stub_->Stream(open->context.get(), &open->summary);
    return open;
  }
  static bool Eventually(const std::function<bool()>& event) {
    return ringside::testing::PollUntil(event, absl::Seconds(20)).ok();
  }

  RingInbox inbox_{RingTopology{1, 4, 2}, RingInboxOptions{}, LinkReceiveMetrics{}};
  std::unique_ptr<RingPeerService> service_;
  StartedServer server_;
  std::unique_ptr<proto::RingPeer::Stub> stub_;
};

// A stranger's stream is refused when its call starts: it has written nothing, so nothing of it
// was read; a stream whose segment is not what its key claimed is refused too; the assigned
// neighbour's streams are held up to the bound, then RESOURCE_EXHAUSTED.
TEST_F(RingStreamLimitsTest, StreamsAreAuthenticatedWhenTheyStartAndBounded) {
  ASSERT_NO_FATAL_FAILURE(Start(StreamLimits{absl::Minutes(10), absl::Minutes(10), 2, 16}));
  const LinkClaim left{RingLinkKey(Credential(), 1, 1), 1, 1, true};
  for (const LinkClaim& stranger :
       {LinkClaim{"", 1, 1, true}, LinkClaim{"0123456789abcdef", 1, 1, true},
        LinkClaim{RingLinkKey(Credential(), 1, 1), 2, 1, true},
        LinkClaim{RingLinkKey(Credential(), 1, 1), 1, 3, true}}) {
    std::unique_ptr<OpenStream> open = Open(stranger);
    EXPECT_EQ(open->writer->Finish().error_code(), grpc::StatusCode::PERMISSION_DENIED);
  }
  std::unique_ptr<OpenStream> disagreeing = Open(left);
  disagreeing->writer->Write(Segment(3, 1));  // worker 3's segment on worker 1's link
  disagreeing->writer->WritesDone();
  const grpc::Status status = disagreeing->writer->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::PERMISSION_DENIED) << status.error_message();
  // The client's Finish can return before the server's reactor is done with the stream and
  // gives its place back: wait for that, or the next streams would count against it.
  ASSERT_TRUE(Eventually([&] { return service_->streams_held() == 0; }));

  std::vector<std::unique_ptr<OpenStream>> held;
  held.push_back(Open(left));
  held.push_back(Open(left));
  ASSERT_TRUE(Eventually([&] { return service_->streams_held() == 2; }));
  std::unique_ptr<OpenStream> third = Open(left);
  EXPECT_EQ(third->writer->Finish().error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(service_->streams_refused(), 1u);
  for (auto& open : held) open->context->TryCancel();
  for (auto& open : held) open->writer->Finish();
  EXPECT_TRUE(Eventually([&] { return service_->streams_held() == 0; }));
}

// A stream that sends nothing ends at its first-message deadline with DEADLINE_EXCEEDED from the
// receiver (the sender's own deadline is a minute).
TEST_F(RingStreamLimitsTest, AStreamThatSendsNothingEndsAtItsFirstMessageDeadline) {
  ASSERT_NO_FATAL_FAILURE(Start(StreamLimits{absl::Milliseconds(1), absl::Minutes(10), 2, 16}));
  std::unique_ptr<OpenStream> silent = Open(LinkClaim{RingLinkKey(Credential(), 1, 1), 1, 1, true});
  const grpc::Status status = silent->writer->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_NE(status.error_message().find("first-message deadline"), std::string::npos)
      << status.error_message();
  EXPECT_EQ(service_->streams_expired(), 1u);
}

// The receiver ends a ring stream idle past its limit between two collectives; the sender takes
// that as no failure (its stream is gone, no error kept) and opens a fresh stream for the next
// collective, which succeeds.
TEST_F(GrpcRingTest, AnIdleStreamEndedBetweenCollectivesIsReopened) {
  StartRing(2, /*credentials=*/true, StreamLimits{absl::Minutes(1), absl::Seconds(1), 64, 1024});
  ExpectCorrectAllreduce(1, 4000);
  for (int rank = 0; rank < 2; ++rank) {
    const RingMember& member = *nodes_[rank]->member;
    ringside::testing::PollUntil(
        [&] { return member.peer_service().streams_expired() > 0 && !member.right_stream_open(); },
        absl::Seconds(30))
        .IgnoreError();  // the assertions below say what did not happen
    ASSERT_EQ(member.peer_service().streams_expired(), 1u) << "worker-" << rank;
    ASSERT_FALSE(member.right_stream_open()) << "worker-" << rank;
  }
  ExpectCorrectAllreduce(2, 4000);
}

}  // namespace
}  // namespace ringside::ring
