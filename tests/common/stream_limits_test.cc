// StreamAdmission and StreamWatchdog (common/stream_limits.h) without gRPC: the bounds, and which
// streams expire. Expiries are waited for as events (a notification), never timed.
#include "common/stream_limits.h"

#include <atomic>
#include <string>
#include <vector>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace ringside {
namespace {

TEST(StreamLimitsTest, ValidatesItsFields) {
  EXPECT_TRUE(ValidateStreamLimits(StreamLimits{}).ok());
  EXPECT_FALSE(ValidateStreamLimits(StreamLimits{absl::ZeroDuration()}).ok());
  EXPECT_FALSE(ValidateStreamLimits(StreamLimits{absl::Seconds(1), absl::Seconds(-1), 1, 1}).ok());
  EXPECT_FALSE(ValidateStreamLimits(StreamLimits{absl::Seconds(1), absl::Seconds(1), 0, 1}).ok());
}

TEST(StreamAdmissionTest, BoundsEachPeerAndTheWholeAndFreesOnRelease) {
  StreamAdmission admission(StreamLimits{absl::Seconds(1), absl::Seconds(1), 2, 3});
  std::vector<StreamAdmission::Ticket> tickets;
  for (int i = 0; i < 2; ++i) {
    auto ticket = admission.Admit("a", "streams");
    ASSERT_TRUE(ticket.ok());
    tickets.push_back(*std::move(ticket));
  }
  auto third = admission.Admit("a", "streams");
  EXPECT_EQ(third.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(third.status().message().find("from this peer"), std::string::npos);
  auto other = admission.Admit("b", "streams");
  ASSERT_TRUE(other.ok());
  auto fourth = admission.Admit("c", "streams");
  EXPECT_EQ(fourth.status().code(), absl::StatusCode::kResourceExhausted) << "3 in all";
  EXPECT_EQ(admission.held(), 3);
  EXPECT_EQ(admission.held_by("a"), 2);
  EXPECT_EQ(admission.refused(), 2u);
  tickets.pop_back();
  EXPECT_EQ(admission.held_by("a"), 1);
  StreamAdmission::Ticket moved = *std::move(other);
  moved.Release();
  moved.Release();  // idempotent
  EXPECT_EQ(admission.held(), 1);
  EXPECT_TRUE(admission.Admit("c", "streams").ok());
}

TEST(StreamWatchdogTest, ASilentStreamExpiresOnceAndATouchedOneWaitsForTheIdleLimit) {
  StreamWatchdog watchdog(StreamLimits{absl::Milliseconds(1), absl::Minutes(10), 1, 1});
  absl::Notification expired;
  absl::Status why;
  StreamWatchdog::Watch silent = watchdog.Arm("stream a", [&](const absl::Status& status) {
    why = status;
    expired.Notify();
  });
  ASSERT_TRUE(expired.WaitForNotificationWithTimeout(absl::Seconds(20)));
  EXPECT_EQ(why.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_NE(why.message().find("stream a"), std::string::npos);
  EXPECT_EQ(watchdog.expired(), 1u);
  EXPECT_EQ(watchdog.watched(), 0u);
  silent.Touch();  // after its expiry: nothing
  silent.Disarm();
}

TEST(StreamWatchdogTest, ATouchBelowTheFirstDeadlineBringsTheExpiryForward) {
  StreamWatchdog watchdog(StreamLimits{absl::Minutes(10), absl::Milliseconds(1), 1, 1});
  absl::Notification expired;
  absl::Status why;
  StreamWatchdog::Watch watch = watchdog.Arm("stream b", [&](const absl::Status& status) {
    why = status;
    expired.Notify();
  });
  watch.Touch();
  ASSERT_TRUE(expired.WaitForNotificationWithTimeout(absl::Seconds(20)));
  EXPECT_NE(why.message().find("idle limit"), std::string::npos) << why;
}

TEST(StreamWatchdogTest, APausedOrDisarmedStreamNeverExpires) {
  StreamWatchdog watchdog(StreamLimits{absl::Minutes(10), absl::Milliseconds(1), 1, 1});
  std::atomic<int> expiries{0};
  StreamWatchdog::Watch paused = watchdog.Arm("paused", [&](const absl::Status&) { ++expiries; });
  paused.Touch();
  paused.Pause();
  StreamWatchdog::Watch disarmed =
      watchdog.Arm("disarmed", [&](const absl::Status&) { ++expiries; });
  disarmed.Disarm();
  // A third stream's expiry is the event: touched after the paused one, its deadline is queued
  // after that one's (deadlines run in order, ties by arming order), so the watchdog has passed
  // the paused stream's old deadline by then.
  absl::Notification marker;
  StreamWatchdog::Watch last = watchdog.Arm("last", [&](const absl::Status&) { marker.Notify(); });
  last.Touch();
  ASSERT_TRUE(marker.WaitForNotificationWithTimeout(absl::Seconds(20)));
  EXPECT_EQ(expiries.load(), 0);
  EXPECT_EQ(watchdog.watched(), 1u) << "the paused one";
}

}  // namespace
}  // namespace ringside
