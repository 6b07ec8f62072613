// Runs child processes from an argv (no shell), with their stdout and stderr captured to a log
// file, bounded waits and guaranteed clean-up. Used by benchmarks and multi-process tests that
// start real Ringside binaries on loopback.
//
// Ownership: a `Subprocess` owns one child. It is move-only; its destructor kills a child that is
// still running (SIGTERM, then SIGKILL after the grace period) and reaps it, so no zombie and no
// stray process outlives the owner. By default a child also gets SIGKILL if the *thread* that
// spawned it dies (PR_SET_PDEATHSIG), so a crashed or killed parent leaves nothing behind; spawn
// from a thread that lives as long as the child (e.g. the main thread).
//
// Thread-safety: thread-compatible. One `Subprocess` must not be used from two threads at once;
// distinct objects may be used concurrently.
//
// Errors: spawn failures (fork, log file, exec of a missing or non-executable program) are
// reported by `Spawn` itself (NOT_FOUND, PERMISSION_DENIED, INTERNAL); waits that run out of time
// give DEADLINE_EXCEEDED; a child that exits non-zero is an ordinary `ExitStatus`, not an error.
#ifndef RINGSIDE_LAUNCH_SUBPROCESS_H_
#define RINGSIDE_LAUNCH_SUBPROCESS_H_

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"

namespace ringside::launch {

// How a child ended: exactly one of `exit_code` (>= 0) or `signal` (> 0) is set.
struct ExitStatus {
  int exit_code = -1;  // from exit()/return of main, or -1 when killed by a signal
  int signal = 0;      // terminating signal, or 0 when the child exited
  // The child's peak resident memory (the kernel's ru_maxrss at reaping), 0 when unknown. What
  // `ringside compare` reports per process, measured without sampling.
  int64_t peak_rss_bytes = 0;
  bool ok() const { return signal == 0 && exit_code == 0; }
  std::string ToString() const;  // "exit code 3", "killed by signal 9 (Killed)"
};

struct SpawnOptions {
  // argv[0] is the program: an absolute or relative path (not searched in PATH). Required.
  std::vector<std::string> argv;
  // Where the child's stdout and stderr both go (created or truncated). Empty: inherit ours.
  std::string log_path;
  // Extra "NAME=value" entries added to (or overriding) the inherited environment.
  std::vector<std::string> extra_env;
  // Deliver SIGKILL to the child when the spawning thread dies.
  bool kill_on_parent_death = true;
  // Time between SIGTERM and SIGKILL when the child has to be stopped.
  absl::Duration term_grace = absl::Seconds(2);
};

class Subprocess {
 public:
  // Starts the child. stdin is /dev/null. Fails without leaving a process behind.
  static absl::StatusOr<Subprocess> Spawn(const SpawnOptions& options);

  Subprocess(Subprocess&& other) noexcept;
  Subprocess& operator=(Subprocess&& other) noexcept;
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;
  ~Subprocess();  // Kill() when still running

  pid_t pid() const { return pid_; }
  const std::string& log_path() const { return log_path_; }
  // "prog arg1 arg2 ..." for messages.
  const std::string& description() const { return description_; }
  // The exit status once the child has been reaped.
  const std::optional<ExitStatus>& exit_status() const { return exit_status_; }
  bool running() const { return pid_ > 0 && !exit_status_.has_value(); }

  // Non-blocking: reaps the child if it has ended. nullopt while it runs.
  std::optional<ExitStatus> Poll();

  // Waits up to `timeout` (InfiniteDuration allowed) for the child to end and reaps it.
  // DEADLINE_EXCEEDED if it is still running then; the child is left running.
  absl::StatusOr<ExitStatus> Wait(absl::Duration timeout);

  // Stops the child (SIGTERM, SIGKILL after `term_grace`) and reaps it. Returns how it ended
  // (which may be a normal exit if it had already finished). Idempotent.
  ExitStatus Kill();

 private:
  friend absl::Status WaitAll(absl::Span<Subprocess* const> processes, absl::Duration timeout);

  Subprocess() = default;
  void Reset();  // forget the child (after a move)

  pid_t pid_ = -1;
  int pidfd_ = -1;  // for waits with a timeout; -1 when the kernel lacks pidfd_open
  absl::Duration term_grace_ = absl::Seconds(2);
  std::string log_path_;
  std::string description_;
  std::optional<ExitStatus> exit_status_;
};

// Waits for all `processes` to end within `timeout`. Returns OK when every one exited with code
// 0. As soon as one ends otherwise, or when the time is up, kills the ones still running and
// returns an error naming the culprit (INTERNAL for a failed child, DEADLINE_EXCEEDED for a
// timeout), with the last lines of its log when it has one.
absl::Status WaitAll(absl::Span<Subprocess* const> processes, absl::Duration timeout);

// The last `max_lines` lines of the file at `path` (empty if unreadable); for error messages.
std::string TailOfFile(const std::string& path, int max_lines);

// What a child's log says last, fit to print and to keep in a report: its last `max_lines`
// non-blank lines, each quoted, escaped and cut to `max_line_bytes` (QuoteForLog), since a log
// may hold anything. Empty when the log is unreadable or empty.
inline constexpr int kLogTailLines = 20;
inline constexpr size_t kLogTailLineBytes = 200;
std::vector<std::string> QuotedTailOfFile(const std::string& path, int max_lines = kLogTailLines,
                                          size_t max_line_bytes = kLogTailLineBytes);

}  // namespace ringside::launch

#endif  // RINGSIDE_LAUNCH_SUBPROCESS_H_
