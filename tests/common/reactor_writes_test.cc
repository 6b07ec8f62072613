#include "common/reactor_writes.h"

#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ringside {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// Stands in for a gRPC server reactor: records what ReactorWrites calls on it, in order.
class FakeReactor {
 public:
  void StartWrite(const std::string* message) {
    Record("write " + *message);
    if (during_write) during_write(*message);  // gRPC may run a reaction inline from StartWrite
  }
  void Finish(grpc::Status status) { Record("finish " + status.error_message()); }

  std::vector<std::string> calls() {
    absl::MutexLock lock(&mu_);
    return calls_;
  }

  std::function<void(const std::string& message)> during_write;

 private:
  void Record(std::string call) {
    absl::MutexLock lock(&mu_);
    calls_.push_back(std::move(call));
  }

  absl::Mutex mu_;
  std::vector<std::string> calls_ ABSL_GUARDED_BY(mu_);
};

using Ending = ReactorWrites<FakeReactor>::Ending;

grpc::Status Cancelled(const std::string& why) {
  return grpc::Status(grpc::StatusCode::CANCELLED, why);
}

class ReactorWritesTest : public ::testing::Test {
 protected:
  FakeReactor reactor_;
  absl::Mutex mu_;  // the reactor's own mutex
  std::string message_ = "m1";
  ReactorWrites<FakeReactor> writes_{reactor_, mu_};
};

TEST_F(ReactorWritesTest, AFinishWithNoWriteStartingIsIssuedAtOnceAndOnlyOnce) {
  EXPECT_EQ(writes_.Finish(Cancelled("first")), Ending::kIssued);
  EXPECT_EQ(writes_.Finish(Cancelled("second")), Ending::kAlready);
  EXPECT_THAT(reactor_.calls(), ElementsAre("finish first"));
  absl::MutexLock lock(&mu_);
  EXPECT_TRUE(writes_.finished());
}

TEST_F(ReactorWritesTest, PrepareRunsUnderTheReactorsMutexAndItsMessageIsWritten) {
  bool prepared = false;
  EXPECT_TRUE(writes_.StartWrite([&] {
    mu_.AssertHeld();
    prepared = true;
    return &message_;
  }));
  EXPECT_TRUE(prepared);
  EXPECT_THAT(reactor_.calls(), ElementsAre("write m1"));
  absl::MutexLock lock(&mu_);
  EXPECT_FALSE(writes_.finished());
}

// The race the helper exists for: a reaction on another thread finishes the stream while a
// thread off any reaction is between deciding to write and writing. The Finish must come after
// the write, from the writing thread, or gRPC could end the call under that write.
TEST_F(ReactorWritesTest, AFinishWhileAWriteIsBeingStartedIsIssuedRightAfterTheWrite) {
  Ending ending = Ending::kAlready;
  const bool wrote = writes_.StartWrite(
      [&] { return &message_; },
      [&] {
        std::thread reaction([&] { ending = writes_.Finish(Cancelled("worker left")); });
        reaction.join();
        // Deferred, not issued: nothing reached the reactor.
        EXPECT_THAT(reactor_.calls(), IsEmpty());
      });
  EXPECT_TRUE(wrote);
  EXPECT_EQ(ending, Ending::kDeferred);
  EXPECT_THAT(reactor_.calls(), ElementsAre("write m1", "finish worker left"));
  // The deferred Finish was the stream's one Finish.
  EXPECT_EQ(writes_.Finish(Cancelled("late")), Ending::kAlready);
  EXPECT_THAT(reactor_.calls(), ElementsAre("write m1", "finish worker left"));
}

TEST_F(ReactorWritesTest, NoWriteStartsOnAFinishedStream) {
  ASSERT_EQ(writes_.Finish(grpc::Status::OK), Ending::kIssued);
  bool prepared = false;
  EXPECT_FALSE(writes_.StartWrite([&] {
    prepared = true;
    return &message_;
  }));
  EXPECT_FALSE(prepared) << "a finished stream has nothing to prepare";
  EXPECT_THAT(reactor_.calls(), ElementsAre("finish "));
}

TEST_F(ReactorWritesTest, NothingToWriteClaimsNothing) {
  bool claimed = false;
  EXPECT_FALSE(
      writes_.StartWrite([]() -> const std::string* { return nullptr; }, [&] { claimed = true; }));
  EXPECT_FALSE(claimed);
  // No write is being started, so a Finish is issued at once.
  EXPECT_EQ(writes_.Finish(Cancelled("done")), Ending::kIssued);
  EXPECT_THAT(reactor_.calls(), ElementsAre("finish done"));
}

// gRPC may run a reaction (a failed write's OnWriteDone) inline from StartWrite; one that
// finishes the stream must not deadlock on the mutex, and its Finish follows the write.
TEST_F(ReactorWritesTest, AReactionRunInlineFromStartWriteMayFinish) {
  Ending ending = Ending::kAlready;
  reactor_.during_write = [&](const std::string&) {
    ending = writes_.Finish(Cancelled("write failed"));
  };
  EXPECT_TRUE(writes_.StartWrite([&] { return &message_; }));
  EXPECT_EQ(ending, Ending::kDeferred);
  EXPECT_THAT(reactor_.calls(), ElementsAre("write m1", "finish write failed"));
}

// Starts overlap when a write completes, and its OnWriteDone starts the next, before the thread
// that started the first has returned. A Finish deferred meanwhile belongs after the second
// write: the first starter returning must not issue it while the second is still to be written.
TEST_F(ReactorWritesTest, AFinishDeferredByOverlappingStartsFollowsTheLastWrite) {
  std::string second = "m2";
  absl::Notification second_claimed, first_returned;
  Ending ending = Ending::kAlready;
  std::thread on_write_done;
  reactor_.during_write = [&](const std::string& message) {
    if (message != "m1") return;
    on_write_done = std::thread([&] {
      writes_.StartWrite([&] { return &second; },
                         [&] {
                           ending = writes_.Finish(Cancelled("worker left"));
                           second_claimed.Notify();
                           first_returned.WaitForNotification();
                         });
    });
    second_claimed.WaitForNotification();
  };
  EXPECT_TRUE(writes_.StartWrite([&] { return &message_; }));
  EXPECT_EQ(ending, Ending::kDeferred);
  EXPECT_THAT(reactor_.calls(), ElementsAre("write m1")) << "finished before m2 was written";
  first_returned.Notify();
  on_write_done.join();
  EXPECT_THAT(reactor_.calls(), ElementsAre("write m1", "write m2", "finish worker left"));
}

TEST_F(ReactorWritesTest, WritesFollowOneAnotherUntilTheFinish) {
  std::string second = "m2";
  EXPECT_TRUE(writes_.StartWrite([&] { return &message_; }));
  EXPECT_TRUE(writes_.StartWrite([&] { return &second; }));
  EXPECT_EQ(writes_.Finish(grpc::Status::OK), Ending::kIssued);
  EXPECT_FALSE(writes_.StartWrite([&] { return &message_; }));
  EXPECT_THAT(reactor_.calls(), ElementsAre("write m1", "write m2", "finish "));
}

}  // namespace
}  // namespace ringside
