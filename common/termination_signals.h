// SIGINT/SIGTERM as an event a daemon can wait on: the handler only writes a byte to a pipe
// and a dedicated thread turns it into a notification, so no code runs in signal context.
// Create it first thing in main(). Thread-safe. One instance per process.
#ifndef RINGSIDE_COMMON_TERMINATION_SIGNALS_H_
#define RINGSIDE_COMMON_TERMINATION_SIGNALS_H_

#include <atomic>
#include <thread>

#include "absl/synchronization/notification.h"
#include "absl/time/time.h"

namespace ringside {

class TerminationSignals {
 public:
  TerminationSignals();
  ~TerminationSignals();
  TerminationSignals(const TerminationSignals&) = delete;
  TerminationSignals& operator=(const TerminationSignals&) = delete;

  bool received() const { return notification_.HasBeenNotified(); }
  void Wait() const { notification_.WaitForNotification(); }
  // True once a signal arrived; false when `timeout` passed first.
  bool WaitFor(absl::Duration timeout) const {
    return notification_.WaitForNotificationWithTimeout(timeout);
  }
  int signal() const { return signal_.load(); }  // 0 until one arrived
  // Signals received so far: a second one asks a daemon still stopping to stop at once.
  int count() const { return count_.load(); }
  // Notified once a signal arrived, for code that takes any stop event.
  const absl::Notification& notification() const { return notification_; }

 private:
  std::atomic<bool> stopping_{false};
  std::atomic<int> signal_{0};
  std::atomic<int> count_{0};
  absl::Notification notification_;
  std::thread thread_;
};

}  // namespace ringside

#endif  // RINGSIDE_COMMON_TERMINATION_SIGNALS_H_
