// A live member that the controller dropped registers again (issue 23), in one process: the real
// Controller service on loopback with a manual clock, every member's real ControllerClient (its
// heartbeats withheld through the client's test gate), three ElasticTrainers as threads over an
// in-memory ring network, and ParameterShard services on loopback that follow their assignments
// as ringside-ps does. Nothing waits on a clock: the trainers hold at named steps; a victim is
// dropped when the test expires the membership at a manual time that every other member has
// heartbeated at, and the victim's registration again is held until the survivors trained on
// without it. Every worker, the victim included, must end the job with the reference parameters,
// the victim with a new id and a fresh credential, a shard at its old index.
#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "common/auth.h"
#include "common/grpc_util.h"
#include "common/metrics.h"
#include "common/model_spec.h"
#include "common/ranges.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "ring/memory_transport.h"
#include "server/controller/controller_client.h"
#include "server/controller/controller_service.h"
#include "server/controller/job_spec.h"
#include "server/controller/membership.h"
#include "server/ps/ps_service.h"
#include "tests/support/parameters.h"
#include "tests/support/poll.h"
#include "tests/support/ps_test_hooks.h"
#include "worker/controller_assignments.h"
#include "worker/elastic_training.h"
#include "worker/local_training.h"

namespace ringside::worker {
namespace {

using server::ControllerClient;
using server::ControllerClientOptions;

constexpr char kToken[] = "rejoin-token";
constexpr int kWorkers = 3;
// Only the heartbeats' pace (a third of it): expiry follows the manual clock.
constexpr absl::Duration kHeartbeatTimeout = absl::Milliseconds(150);
// Guards against a hang only; nothing is paced by it.
constexpr absl::Duration kLimit = absl::Minutes(2);

// Closed until Release(); counts who came to it.
class Hold {
 public:
  void Pass() {
    absl::MutexLock lock(&mu_);
    ++arrived_;
    mu_.Await(absl::Condition(&released_));
  }
  void Release() {
    absl::MutexLock lock(&mu_);
    released_ = true;
  }
  bool AwaitArrivals(int count) {
    absl::MutexLock lock(&mu_);
    auto enough = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return arrived_ >= count; };
    return mu_.AwaitWithTimeout(absl::Condition(&enough), kLimit);
  }

 private:
  absl::Mutex mu_;
  int arrived_ ABSL_GUARDED_BY(mu_) = 0;
  bool released_ ABSL_GUARDED_BY(mu_) = false;
};

class ManualClock {
 public:
  absl::Time Now() const {
    absl::MutexLock lock(&mu_);
    return now_;
  }
  void Advance(absl::Duration by) {
    absl::MutexLock lock(&mu_);
    now_ += by;
  }

 private:
  mutable absl::Mutex mu_;
  absl::Time now_ ABSL_GUARDED_BY(mu_) = absl::FromUnixSeconds(1000);
};

// A log the trainer writes on its thread and the test reads on its own.
class SharedLog final : public std::streambuf {
 public:
  std::string str() const {
    absl::MutexLock lock(&mu_);
    return text_;
  }

 protected:
  int overflow(int c) override {
    if (c == traits_type::eof()) return traits_type::not_eof(c);
    absl::MutexLock lock(&mu_);
    text_.push_back(static_cast<char>(c));
    return c;
  }
  std::streamsize xsputn(const char* text, std::streamsize count) override {
    absl::MutexLock lock(&mu_);
    text_.append(text, static_cast<size_t>(count));
    return count;
  }

 private:
  mutable absl::Mutex mu_;
  std::string text_ ABSL_GUARDED_BY(mu_);
};

// One member's controller client with the test's handles on it: heartbeats withheld while
// `silent`, registering again held at `rejoin` (released at once for members no test drops),
// and every credential the member held, its first one included.
struct MemberLink {
  std::atomic<bool> silent{false};
  std::atomic<int> withheld{0};
  Hold rejoin;
  absl::Mutex mu;
  std::vector<std::string> credentials ABSL_GUARDED_BY(mu);
  uint64_t first_id = 0;
  std::unique_ptr<ControllerClient> client;

  std::string credential(size_t i) {
    absl::MutexLock lock(&mu);
    return i < credentials.size() ? credentials[i] : "";
  }
  size_t credentials_held() {
    absl::MutexLock lock(&mu);
    return credentials.size();
  }
};

struct ShardMember {
  std::unique_ptr<server::ParameterShardService> service;
  StartedServer server;
  std::string address;
  MemberLink link;
  int first_index = -1;
  // Armed: the shard's next assignment waits at `job_hold` before it takes its job, so that a
  // load reaches it first.
  std::atomic<bool> hold_next_job{false};
  Hold job_hold;
  // A Load reached this shard before its assignment of the Load's generation and waits for it.
  std::atomic<bool> load_waited{false};
};

struct WorkerMember {
  std::string address;
  MemberLink link;
  std::unique_ptr<ControllerAssignments> assignments;
  std::unique_ptr<Metrics> metrics;
  SharedLog log_text;
  std::ostream log{&log_text};  // the trainer's
  std::unique_ptr<ElasticTrainer> trainer;
  absl::Mutex relay_mu;  // the watch thread supersedes through it
  ElasticTrainer* relay ABSL_GUARDED_BY(relay_mu) = nullptr;
  absl::Status status;
  std::optional<ElasticResult> result;
};

struct RejoinCase {
  std::string name;
  SyncMode mode = SyncMode::kRing;
  int shards = 0;
  std::vector<int> worker_victims;  // registration order
  std::vector<int> shard_victims;
  // The shard that is not a victim takes the rejoin's assignment only once the loader has been
  // refused by it (its range changes back): the load must be tried again, not fail the regroup.
  bool lagging_shard = false;
};

void PrintTo(const RejoinCase& rejoin, std::ostream* out) { *out << rejoin.name; }

TrainingOptions SmallJob() {
  TrainingOptions job;
  job.model = "16,64,4";
  job.data = "synthetic:512";
  job.batch_size = 32;
  job.steps = 24;
  return job;  // Adam: its moments must survive the drop too
}

class ElasticRejoinTest : public ::testing::TestWithParam<RejoinCase> {
 protected:
  // The steps (indices) at which every trainer holds: the drop, and the rejoin.
  static constexpr int64_t kDropStep = 5;
  static constexpr int64_t kRejoinStep = 10;

  void SetUp() override;
  void TearDown() override;
  ControllerClientOptions ClientOptions(MemberLink& link, proto::Role role,
                                        const std::string& address);
  void AddShard(int index);
  void AddWorker(int index);
  void StartTrainers();
  std::vector<MemberLink*> Links();
  bool Wait(const std::function<bool()>& event, const std::string& what);
  // Every member's client but `except`'s holds the current generation.
  bool EveryoneAssigned(const std::vector<MemberLink*>& except = {});
  std::string WorkerLogs();
  void DropLive(const std::vector<MemberLink*>& victims);
  void ExpectTheReferenceEverywhere();
  void ExpectFreshRegistrations(const std::vector<MemberLink*>& victims);

  const TrainingOptions job_ = SmallJob();
  ManualClock clock_;
  std::ostringstream controller_log_;  // read after the clients stopped
  std::unique_ptr<server::Membership> membership_;
  std::unique_ptr<server::ControllerService> service_;
  StartedServer controller_server_;
  std::string controller_address_;
  ring::InMemoryRingNetwork network_;
  std::vector<std::unique_ptr<ShardMember>> shards_;
  std::vector<std::unique_ptr<WorkerMember>> workers_;
  Hold drop_hold_, rejoin_hold_;
  absl::Notification stop_;
  absl::Mutex mu_;
  int finished_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::thread> threads_;
};

void ElasticRejoinTest::SetUp() {
  server::MembershipConfig config;
  config.workers = kWorkers;
  config.ps_shards = GetParam().shards;
  config.join_token = kToken;
  config.heartbeat_timeout = kHeartbeatTimeout;
  config.mode = GetParam().mode;
  membership_ = std::make_unique<server::Membership>(config);
  service_ = std::make_unique<server::ControllerService>(*membership_, server::JobSpecOf(job_),
                                                         kHeartbeatTimeout, controller_log_);
  service_->SetClock([this] { return clock_.Now(); });
  auto server = StartServer("127.0.0.1:0", {service_.get()}, TransportSecurity());
  ASSERT_TRUE(server.ok()) << server.status();
  controller_server_ = *std::move(server);
  controller_address_ = absl::StrCat("127.0.0.1:", controller_server_.port);
  for (int i = 0; i < kWorkers; ++i) AddWorker(i);
  for (int s = 0; s < GetParam().shards; ++s) AddShard(s);
  ASSERT_EQ(membership_->topology().generation, 1u);
  for (auto& shard : shards_)
    shard->first_index = membership_->AssignmentOf(shard->link.first_id)->shard;
}

// Clients first: their threads call into the trainers and the shard services. Runs twice when
// a test calls it to read what the trainers returned: the second time does nothing.
void ElasticRejoinTest::TearDown() {
  if (!stop_.HasBeenNotified()) stop_.Notify();
  drop_hold_.Release();
  rejoin_hold_.Release();
  for (MemberLink* link : Links()) link->rejoin.Release();
  for (auto& shard : shards_) shard->job_hold.Release();
  for (std::thread& thread : threads_) thread.join();
  threads_.clear();
  for (MemberLink* link : Links()) link->client.reset();
}

ControllerClientOptions ElasticRejoinTest::ClientOptions(MemberLink& link, proto::Role role,
                                                         const std::string& address) {
  ControllerClientOptions options;
  options.controller = controller_address_;
  options.join_token = kToken;
  options.role = role;
  options.address = address;
  options.credential = RandomSecret().value();
  options.register_timeout = absl::Seconds(30);
  {
    absl::MutexLock lock(&link.mu);
    link.credentials.push_back(options.credential);
  }
  options.heartbeat_gate = [&link] {
    if (!link.silent) return true;
    ++link.withheld;
    return false;
  };
  return options;
}

void ElasticRejoinTest::AddShard(int index) {
  auto shard = std::make_unique<ShardMember>();
  shard->service = std::make_unique<server::ParameterShardService>(/*segment_bytes=*/4096);
  auto server = StartServer("127.0.0.1:0", {shard->service.get()}, TransportSecurity());
  ASSERT_TRUE(server.ok()) << server.status();
  shard->server = *std::move(server);
  shard->address = absl::StrCat("127.0.0.1:", shard->server.port);
  ControllerClientOptions options = ClientOptions(shard->link, proto::ROLE_PS, shard->address);
  shard->service->SetMemberCredential(options.credential);
  ShardMember* raw = shard.get();
  options.install_credential = [raw](const std::string& fresh) {
    raw->service->SetMemberCredential(fresh);
    {
      absl::MutexLock lock(&raw->link.mu);
      raw->link.credentials.push_back(fresh);
    }
    raw->link.rejoin.Pass();
  };
  const uint64_t parameters =
      ModelSpec::Parse(job_.model, job_.activation).value().parameter_count();
  // As ringside-ps: each generation's shard index and range.
  auto follow = [raw, parameters, optimizer = job_.optimizer](const proto::Assignment& a) {
    if (a.shard() < 0 || a.shard() >= a.shards_size()) return;
    const ElementRange range = EvenRanges(parameters, a.shards_size())[a.shard()];
    if (raw->hold_next_job.exchange(false)) raw->job_hold.Pass();
    raw->service->SetJob(server::ShardJob{a.shard(), range, optimizer, a.generation()});
  };
  auto client = ControllerClient::Connect(options, follow);
  ASSERT_TRUE(client.ok()) << "shard " << index << ": " << client.status();
  shard->link.client = *std::move(client);
  shard->link.first_id = shard->link.client->member_id();
  shards_.push_back(std::move(shard));
}

void ElasticRejoinTest::AddWorker(int index) {
  auto worker = std::make_unique<WorkerMember>();
  worker->address = absl::StrCat("in-memory:", index + 1);  // host:port, as registration checks
  ControllerClientOptions options =
      ClientOptions(worker->link, proto::ROLE_WORKER, worker->address);
  WorkerMember* raw = worker.get();
  // The in-memory ring checks no link keys: the worker only records its fresh credential.
  options.install_credential = [raw](const std::string& fresh) {
    {
      absl::MutexLock lock(&raw->link.mu);
      raw->link.credentials.push_back(fresh);
    }
    raw->link.rejoin.Pass();
  };
  auto client = ControllerClient::Connect(options, [raw](const proto::Assignment& a) {
    absl::MutexLock lock(&raw->relay_mu);
    if (raw->relay != nullptr) raw->relay->Supersede(a.generation());
  });
  ASSERT_TRUE(client.ok()) << "worker " << index << ": " << client.status();
  worker->link.client = *std::move(client);
  worker->link.first_id = worker->link.client->member_id();
  worker->assignments = std::make_unique<ControllerAssignments>(*worker->link.client, "cpu");
  worker->metrics = std::make_unique<Metrics>(std::make_shared<prometheus::Registry>());
  workers_.push_back(std::move(worker));
}

void ElasticRejoinTest::StartTrainers() {
  for (auto& worker : workers_) {
    ElasticOptions options;
    options.segment_bytes = 4096;
    options.timeout = absl::Seconds(60);  // a deadline only for bugs: every failure is superseded
    options.regroup_timeout = absl::Seconds(60);
    auto trace = [this](const StepTrace& step) {
      if (step.step == kDropStep) drop_hold_.Pass();
      if (step.step == kRejoinStep) rejoin_hold_.Pass();
    };
    worker->trainer =
        std::make_unique<ElasticTrainer>(*worker->assignments, &network_.Join(worker->address),
                                         *worker->metrics, options, worker->log, trace);
    {
      absl::MutexLock lock(&worker->relay_mu);
      worker->relay = worker->trainer.get();
    }
  }
  // Every ring member joined the network before anyone dials a neighbour.
  for (auto& worker : workers_) {
    threads_.emplace_back([this, worker = worker.get()] {
      worker->status = worker->trainer->Run(stop_, [this, worker](const ElasticResult& result) {
        worker->result = result;
        absl::MutexLock lock(&mu_);
        ++finished_;
        return absl::OkStatus();
      });
      absl::MutexLock lock(&worker->relay_mu);
      worker->relay = nullptr;
    });
  }
}

std::vector<MemberLink*> ElasticRejoinTest::Links() {
  std::vector<MemberLink*> links;
  for (auto& worker : workers_) links.push_back(&worker->link);
  for (auto& shard : shards_) links.push_back(&shard->link);
  return links;
}

bool ElasticRejoinTest::Wait(const std::function<bool()>& event, const std::string& what) {
  const absl::Status status = testing::PollUntil(event, kLimit);
  if (status.ok()) return true;
  ADD_FAILURE() << "waiting for " << what << ": " << status << "\n" << WorkerLogs();
  return false;
}

bool ElasticRejoinTest::EveryoneAssigned(const std::vector<MemberLink*>& except) {
  const uint64_t generation = membership_->topology().generation;
  for (MemberLink* link : Links()) {
    if (std::find(except.begin(), except.end(), link) != except.end()) continue;
    if (link->client->latest_generation() != generation) return false;
  }
  return true;
}

std::string ElasticRejoinTest::WorkerLogs() {
  std::string logs;
  for (size_t i = 0; i < workers_.size(); ++i) {
    absl::StrAppend(&logs, "--- worker ", i, ":\n", workers_[i]->log_text.str());
  }
  return logs;
}

// Drops `victims` while they are alive: their heartbeats are withheld (each has refused one, so
// none is in flight), the clock passes the timeout, every other member heartbeats at the new
// time (twice: the first may have been stamped before), and the expiry drops exactly them.
void ElasticRejoinTest::DropLive(const std::vector<MemberLink*>& victims) {
  std::vector<uint64_t> expected;
  for (MemberLink* victim : victims) {
    victim->silent = true;
    expected.push_back(victim->client->member_id());
  }
  ASSERT_TRUE(Wait(
      [&] {
        return std::all_of(victims.begin(), victims.end(),
                           [](MemberLink* victim) { return victim->withheld > 0; });
      },
      "the victims to withhold a heartbeat"));
  clock_.Advance(2 * kHeartbeatTimeout);
  std::map<MemberLink*, int> accepted;
  for (MemberLink* link : Links()) accepted[link] = link->client->heartbeats_accepted();
  ASSERT_TRUE(Wait(
      [&] {
        for (const auto& [link, before] : accepted) {
          const bool victim = std::find(victims.begin(), victims.end(), link) != victims.end();
          if (!victim && link->client->heartbeats_accepted() < before + 2) return false;
        }
        return true;
      },
      "every other member to heartbeat at the new time"));
  std::vector<uint64_t> dropped = membership_->Expire(clock_.Now());
  std::sort(dropped.begin(), dropped.end());
  std::sort(expected.begin(), expected.end());
  ASSERT_EQ(dropped, expected) << "exactly the silent members are dropped";
  service_->Notify();
}

void ElasticRejoinTest::ExpectTheReferenceEverywhere() {
  auto reference = TrainLocally(job_);
  ASSERT_TRUE(reference.ok()) << reference.status();
  for (size_t i = 0; i < workers_.size(); ++i) {
    WorkerMember& worker = *workers_[i];
    SCOPED_TRACE(absl::StrCat("worker ", i, "'s log:\n", worker.log_text.str()));
    EXPECT_TRUE(worker.status.ok()) << worker.status;
    ASSERT_TRUE(worker.result.has_value());
    EXPECT_EQ(worker.result->training.steps, job_.steps);
    EXPECT_EQ(worker.result->slot.world, kWorkers) << "the job ended with every worker";
    EXPECT_EQ(worker.result->training.parameters, workers_[0]->result->training.parameters)
        << "the workers' parameters differ";
    EXPECT_LT(
        testing::MaxRelativeDifference(worker.result->training.parameters, reference->parameters),
        1e-5);
  }
}

// A victim registered again under a new id with a fresh credential; its old id is gone.
void ElasticRejoinTest::ExpectFreshRegistrations(const std::vector<MemberLink*>& victims) {
  for (MemberLink* victim : victims) {
    EXPECT_EQ(victim->client->registrations(), 2);
    EXPECT_NE(victim->client->member_id(), victim->first_id);
    EXPECT_FALSE(membership_->IsMember(victim->first_id)) << "the old id is gone for good";
    EXPECT_TRUE(membership_->IsMember(victim->client->member_id()));
    ASSERT_EQ(victim->credentials_held(), 2u);
    EXPECT_NE(victim->credential(1), victim->credential(0));
    EXPECT_EQ(membership_->CredentialOf(victim->client->member_id()), victim->credential(1));
  }
}

TEST_P(ElasticRejoinTest, ALiveMemberDroppedRegistersAgainAndTheJobMatchesTheReference) {
  const RejoinCase& rejoin = GetParam();
  std::vector<MemberLink*> victims;
  for (int w : rejoin.worker_victims) victims.push_back(&workers_[w]->link);
  for (int s : rejoin.shard_victims) victims.push_back(&shards_[s]->link);
  for (MemberLink* link : Links()) {
    if (std::find(victims.begin(), victims.end(), link) == victims.end()) link->rejoin.Release();
  }
  StartTrainers();
  ASSERT_TRUE(drop_hold_.AwaitArrivals(kWorkers)) << "the job never reached the drop\n"
                                                  << WorkerLogs();
  const uint64_t before = membership_->topology().generation;

  ASSERT_NO_FATAL_FAILURE(DropLive(victims));
  ASSERT_TRUE(Wait([&] { return EveryoneAssigned(victims); }, "the survivors' generation"));
  ShardMember* lagging = nullptr;
  if (rejoin.lagging_shard) {
    for (auto& shard : shards_) {
      if (std::find(victims.begin(), victims.end(), &shard->link) == victims.end()) {
        lagging = shard.get();
      }
    }
    ASSERT_NE(lagging, nullptr);
    lagging->hold_next_job = true;  // its next assignment is the rejoin's
    server::PsTestHooks::SetLoadWaitHook(*lagging->service,
                                         [lagging](uint64_t) { lagging->load_waited = true; });
  }
  drop_hold_.Release();
  // The survivors train on without the victims, unless no shard is left for ps mode.
  const bool can_train = rejoin.mode == SyncMode::kRing ||
                         rejoin.shard_victims.size() < static_cast<size_t>(rejoin.shards);
  const int survivors = kWorkers - static_cast<int>(rejoin.worker_victims.size());
  if (can_train) {
    ASSERT_TRUE(rejoin_hold_.AwaitArrivals(survivors)) << "the survivors stopped training\n"
                                                       << WorkerLogs();
  }

  for (MemberLink* victim : victims) {
    victim->silent = false;
    victim->rejoin.Release();
  }
  ASSERT_TRUE(Wait(
      [&] {
        const server::Topology topology = membership_->topology();
        return topology.workers.size() == static_cast<size_t>(kWorkers) &&
               topology.shards.size() == static_cast<size_t>(rejoin.shards) && EveryoneAssigned();
      },
      "every victim back in the job"));
  EXPECT_GE(membership_->topology().generation, before + 2);
  rejoin_hold_.Release();
  if (lagging != nullptr) {
    ASSERT_TRUE(Wait(
        [&] {
          // The lagging shard either holds the Load until its assignment comes (it waits) or
          // refused it, and the loader loads again: both must end in the same state.
          return lagging->load_waited ||
                 workers_[0]->log_text.str().find("loading the shards again") != std::string::npos;
        },
        "the loader's Load held or refused by the lagging shard"));
    lagging->job_hold.Release();
  }
  {
    absl::MutexLock lock(&mu_);
    auto done = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return finished_ >= kWorkers; };
    EXPECT_TRUE(mu_.AwaitWithTimeout(absl::Condition(&done), kLimit)) << "the job stalled";
  }
  ExpectFreshRegistrations(victims);
  const uint64_t generation = membership_->topology().generation;
  for (int s : rejoin.shard_victims) {
    ShardMember& shard = *shards_[s];
    ASSERT_TRUE(shard.link.client->latest().has_value());
    EXPECT_EQ(shard.link.client->latest()->shard(), shard.first_index)
        << "the shard is back at its place, serving the range it served before";
    EXPECT_EQ(
        shard.service->CheckLoadKey(ShardLoadKey(shard.link.credential(0), generation), generation)
            .code(),
        absl::StatusCode::kPermissionDenied)
        << "a key made from the old credential";
    EXPECT_TRUE(
        shard.service->CheckLoadKey(ShardLoadKey(shard.link.credential(1), generation), generation)
            .ok());
  }
  TearDown();
  ExpectTheReferenceEverywhere();
  EXPECT_NE(controller_log_.str().find("again: it had seen generation"), std::string::npos)
      << controller_log_.str();
}

INSTANTIATE_TEST_SUITE_P(
    Victims, ElasticRejoinTest,
    ::testing::Values(RejoinCase{"RingWorker", SyncMode::kRing, 0, {1}, {}},
                      RejoinCase{"PsWorker", SyncMode::kPs, 2, {2}, {}},
                      RejoinCase{"PsShard", SyncMode::kPs, 2, {}, {0}},
                      RejoinCase{"PsShardWhileTheOtherLags", SyncMode::kPs, 2, {}, {0}, true},
                      RejoinCase{"PsOnlyShard", SyncMode::kPs, 1, {}, {0}},
                      RejoinCase{"PsLoaderAndAShardAtOnce", SyncMode::kPs, 2, {0}, {1}}),
    [](const ::testing::TestParamInfo<RejoinCase>& info) { return info.param.name; });

}  // namespace
}  // namespace ringside::worker
