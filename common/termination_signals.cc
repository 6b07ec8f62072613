#include "common/termination_signals.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>

namespace ringside {
namespace {

// A signal handler can reach nothing but globals; this one is written once, by the constructor,
// before the handler is installed. Libraries start threads before main() (OpenBLAS does), so
// blocking the signals in main would not cover them: a handler covers every thread.
int g_signal_pipe_write = -1;

void OnTerminationSignal(int signal_number) {
  const int saved_errno = errno;
  const unsigned char byte = static_cast<unsigned char>(signal_number);
  [[maybe_unused]] ssize_t ignored = write(g_signal_pipe_write, &byte, 1);
  errno = saved_errno;
}

}  // namespace

TerminationSignals::TerminationSignals() {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) return;  // signals then keep their default action
  g_signal_pipe_write = fds[1];
  struct sigaction action = {};
  action.sa_handler = &OnTerminationSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  const int read_fd = fds[0];
  thread_ = std::thread([this, read_fd] {
    // Polls with a short timeout so the destructor can stop the thread without a signal.
    pollfd pending = {read_fd, POLLIN, 0};
    while (!stopping_.load()) {
      if (poll(&pending, 1, 100) <= 0) continue;
      unsigned char byte = 0;
      if (read(read_fd, &byte, 1) != 1) continue;
      count_.fetch_add(1);
      if (!notification_.HasBeenNotified()) {
        signal_.store(byte);
        notification_.Notify();
      }
    }
    close(read_fd);
  });
}

TerminationSignals::~TerminationSignals() {
  stopping_.store(true);
  if (thread_.joinable()) thread_.join();
}

}  // namespace ringside
