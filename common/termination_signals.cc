#include "common/termination_signals.h"

#include <pthread.h>
#include <signal.h>

#include <ctime>

namespace ringside {
namespace {

sigset_t TerminationSet() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

}  // namespace

TerminationSignals::TerminationSignals() {
  const sigset_t set = TerminationSet();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  thread_ = std::thread([this, set] {
    // Polls with a short timeout so the destructor can stop the thread without a signal.
    const timespec period = {0, 100 * 1000 * 1000};
    while (!stopping_.load()) {
      const int got = sigtimedwait(&set, nullptr, &period);
      if (got > 0 && !notification_.HasBeenNotified()) {
        signal_.store(got);
        notification_.Notify();
      }
    }
  });
}

TerminationSignals::~TerminationSignals() {
  stopping_.store(true);
  thread_.join();
}

}  // namespace ringside
