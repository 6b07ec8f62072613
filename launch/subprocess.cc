#include "launch/subprocess.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/net.h"

extern char** environ;

namespace ringside::launch {
namespace {

ExitStatus FromWaitStatus(int status) {
  ExitStatus result;
  if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.signal = WTERMSIG(status);
  }
  return result;
}

absl::Status ErrnoToStatus(int error, absl::string_view what) {
  const std::string message = absl::StrCat(what, ": ", strerror(error));
  switch (error) {
    case ENOENT:
    case ENOTDIR:
      return absl::NotFoundError(message);
    case EACCES:
    case EPERM:
      return absl::PermissionDeniedError(message);
    default:
      return absl::InternalError(message);
  }
}

// Milliseconds for poll(2): rounded up so we never wake just before the deadline; -1 = forever.
int PollMillis(absl::Duration remaining) {
  if (remaining == absl::InfiniteDuration()) return -1;
  const int64_t ms = absl::ToInt64Milliseconds(absl::Ceil(remaining, absl::Milliseconds(1)));
  return static_cast<int>(std::clamp<int64_t>(ms, 0, INT_MAX));
}

// Blocks until one of `pidfds` is readable (its process ended) or `timeout` passes. Without
// pidfds (old kernels) it naps briefly instead; callers loop on Poll() either way.
void WaitForAnyExit(const std::vector<int>& pidfds, absl::Duration timeout) {
  constexpr absl::Duration kNap = absl::Milliseconds(5);
  const bool have_all =
      !pidfds.empty() && std::none_of(pidfds.begin(), pidfds.end(), [](int fd) { return fd < 0; });
  if (!have_all) {
    absl::SleepFor(std::min(timeout, kNap));
    return;
  }
  std::vector<pollfd> fds;
  for (int fd : pidfds) fds.push_back(pollfd{fd, POLLIN, 0});
  (void)poll(fds.data(), fds.size(), PollMillis(timeout));  // EINTR: the caller loops
}

// Everything the child needs, prepared before fork(): after fork only async-signal-safe calls
// are allowed, so the child must not allocate.
struct ExecImage {
  std::vector<std::string> env_storage;
  std::vector<char*> argv;
  std::vector<char*> envp;
};

ExecImage MakeExecImage(const SpawnOptions& options) {
  ExecImage image;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const absl::string_view text(*entry);
    const absl::string_view name = text.substr(0, text.find('=') + 1);
    const bool overridden =
        std::any_of(options.extra_env.begin(), options.extra_env.end(),
                    [&](const std::string& e) { return absl::StartsWith(e, name); });
    if (!overridden) image.env_storage.emplace_back(text);
  }
  for (const std::string& e : options.extra_env) image.env_storage.push_back(e);
  for (const std::string& arg : options.argv) image.argv.push_back(const_cast<char*>(arg.c_str()));
  image.argv.push_back(nullptr);
  for (std::string& e : image.env_storage) image.envp.push_back(e.data());
  image.envp.push_back(nullptr);
  return image;
}

// Runs in the forked child: only async-signal-safe calls. Never returns.
[[noreturn]] void ExecChild(const ExecImage& image, int stdin_fd, int log_fd, int error_fd,
                            bool kill_on_parent_death, pid_t parent) {
  if (kill_on_parent_death) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);  // the parent died before prctl took effect
  }
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  struct sigaction dfl;
  memset(&dfl, 0, sizeof(dfl));
  dfl.sa_handler = SIG_DFL;
  for (int sig : {SIGPIPE, SIGINT, SIGTERM}) sigaction(sig, &dfl, nullptr);
  if (dup2(stdin_fd, STDIN_FILENO) < 0) _exit(127);
  if (log_fd >= 0 && (dup2(log_fd, STDOUT_FILENO) < 0 || dup2(log_fd, STDERR_FILENO) < 0)) {
    _exit(127);
  }
  execve(image.argv[0], image.argv.data(), image.envp.data());
  const int error = errno;
  ssize_t ignored = write(error_fd, &error, sizeof(error));
  (void)ignored;
  _exit(127);
}

}  // namespace

std::string ExitStatus::ToString() const {
  if (signal != 0) {
    const char* name = sigabbrev_np(signal);
    return absl::StrCat("killed by signal ", signal, name ? absl::StrCat(" (SIG", name, ")") : "");
  }
  if (exit_code < 0) return "unknown exit status";
  return absl::StrCat("exit code ", exit_code);
}

absl::StatusOr<Subprocess> Subprocess::Spawn(const SpawnOptions& options) {
  if (options.argv.empty() || options.argv[0].empty()) {
    return absl::InvalidArgumentError("Subprocess::Spawn: argv is empty");
  }
  const ExecImage image = MakeExecImage(options);
  const std::string& program = options.argv[0];

  const int stdin_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (stdin_fd < 0) return ErrnoToStatus(errno, "open /dev/null");
  int log_fd = -1;
  if (!options.log_path.empty()) {
    log_fd = open(options.log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (log_fd < 0) {
      const int error = errno;
      close(stdin_fd);
      return ErrnoToStatus(error, absl::StrCat("open log file ", options.log_path));
    }
  }
  int error_pipe[2];
  if (pipe2(error_pipe, O_CLOEXEC) != 0) {
    const int error = errno;
    close(stdin_fd);
    if (log_fd >= 0) close(log_fd);
    return ErrnoToStatus(error, "pipe2");
  }

  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid == 0) {
    close(error_pipe[0]);
    ExecChild(image, stdin_fd, log_fd, error_pipe[1], options.kill_on_parent_death, parent);
  }
  const int fork_errno = errno;
  close(error_pipe[1]);
  close(stdin_fd);
  if (log_fd >= 0) close(log_fd);
  if (pid < 0) {
    close(error_pipe[0]);
    return ErrnoToStatus(fork_errno, "fork");
  }

  // The pipe closes on a successful exec (O_CLOEXEC) or carries execve's errno.
  int exec_errno = 0;
  ssize_t n;
  do {
    n = read(error_pipe[0], &exec_errno, sizeof(exec_errno));
  } while (n < 0 && errno == EINTR);
  close(error_pipe[0]);
  if (n == static_cast<ssize_t>(sizeof(exec_errno))) {
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return ErrnoToStatus(exec_errno, absl::StrCat("cannot execute ", program));
  }

  Subprocess process;
  process.pid_ = pid;
  process.pidfd_ = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  process.term_grace_ = options.term_grace;
  process.log_path_ = options.log_path;
  process.description_ = absl::StrJoin(options.argv, " ");
  return process;
}

Subprocess::Subprocess(Subprocess&& other) noexcept { *this = std::move(other); }

Subprocess& Subprocess::operator=(Subprocess&& other) noexcept {
  if (this == &other) return *this;
  if (running()) Kill();
  if (pidfd_ >= 0) close(pidfd_);
  pid_ = other.pid_;
  pidfd_ = other.pidfd_;
  term_grace_ = other.term_grace_;
  log_path_ = std::move(other.log_path_);
  description_ = std::move(other.description_);
  exit_status_ = std::move(other.exit_status_);
  other.Reset();
  return *this;
}

Subprocess::~Subprocess() {
  if (running()) Kill();
  if (pidfd_ >= 0) close(pidfd_);
}

void Subprocess::Reset() {
  pid_ = -1;
  pidfd_ = -1;
  exit_status_.reset();
}

std::optional<ExitStatus> Subprocess::Poll() {
  if (!running()) return exit_status_;
  int status = 0;
  struct rusage usage {};
  pid_t r;
  do {
    r = wait4(pid_, &status, WNOHANG, &usage);
  } while (r < 0 && errno == EINTR);
  if (r == 0) return std::nullopt;
  // r < 0 (ECHILD) means someone else reaped it: record an unknown status rather than spin.
  exit_status_ = r == pid_ ? FromWaitStatus(status) : ExitStatus{};
  if (r == pid_) exit_status_->peak_rss_bytes = int64_t{usage.ru_maxrss} * 1024;  // KiB on Linux
  if (pidfd_ >= 0) {
    close(pidfd_);
    pidfd_ = -1;
  }
  return exit_status_;
}

absl::StatusOr<ExitStatus> Subprocess::Wait(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    if (std::optional<ExitStatus> status = Poll()) return *status;
    const absl::Duration remaining = deadline - absl::Now();
    if (remaining <= absl::ZeroDuration()) {
      return absl::DeadlineExceededError(
          absl::StrCat("still running after ", absl::FormatDuration(timeout), ": ", description_));
    }
    WaitForAnyExit({pidfd_}, remaining);
  }
}

ExitStatus Subprocess::Kill() {
  if (!running()) return exit_status_.value_or(ExitStatus{});
  kill(pid_, SIGTERM);
  if (absl::StatusOr<ExitStatus> status = Wait(term_grace_); status.ok()) return *status;
  kill(pid_, SIGKILL);
  return Wait(absl::InfiniteDuration()).value_or(ExitStatus{});
}

absl::Status WaitAll(absl::Span<Subprocess* const> processes, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  auto kill_all = [&] {
    for (Subprocess* p : processes) p->Kill();
  };
  while (true) {
    std::vector<int> pidfds;
    std::vector<std::string> still_running;
    for (Subprocess* p : processes) {
      const std::optional<ExitStatus> status = p->Poll();
      if (!status.has_value()) {
        pidfds.push_back(p->pidfd_);
        still_running.push_back(absl::StrCat(p->pid()));
        continue;
      }
      if (!status->ok()) {
        kill_all();
        const std::string tail = TailOfFile(p->log_path(), 5);
        return absl::InternalError(
            absl::StrCat("'", p->description(), "' (pid ", p->pid(), ") failed with ",
                         status->ToString(), tail.empty() ? "" : "; its log ends with:\n", tail));
      }
    }
    if (still_running.empty()) return absl::OkStatus();
    const absl::Duration remaining = deadline - absl::Now();
    if (remaining <= absl::ZeroDuration()) {
      kill_all();
      return absl::DeadlineExceededError(
          absl::StrCat("timed out after ", absl::FormatDuration(timeout),
                       "; killed still-running pids ", absl::StrJoin(still_running, ",")));
    }
    WaitForAnyExit(pidfds, remaining);
  }
}

std::string TailOfFile(const std::string& path, int max_lines) {
  if (path.empty()) return "";
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  constexpr std::streamoff kMaxBytes = 64 * 1024;
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  in.seekg(std::max<std::streamoff>(0, size - kMaxBytes));
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::vector<std::string> lines = absl::StrSplit(buffer.str(), '\n', absl::SkipWhitespace());
  if (lines.size() > static_cast<size_t>(max_lines)) {
    lines.erase(lines.begin(), lines.end() - max_lines);
  }
  return absl::StrJoin(lines, "\n");
}

std::vector<std::string> QuotedTailOfFile(const std::string& path, int max_lines,
                                          size_t max_line_bytes) {
  std::vector<std::string> lines;
  for (absl::string_view line :
       absl::StrSplit(TailOfFile(path, max_lines), '\n', absl::SkipWhitespace())) {
    lines.push_back(QuoteForLog(line, max_line_bytes));
  }
  return lines;
}

}  // namespace ringside::launch
