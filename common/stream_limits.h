// What a server holds for its long-lived streams, bounded: how many it keeps open per peer and
// in all (StreamAdmission), and how long one may stay silent (StreamWatchdog: a deadline for its
// first message, an idle limit between messages). The ParameterShard and RingPeer services hold
// one of each; a stream is admitted when its call starts (after its credential is checked, so a
// stranger's streams cost an admission only as long as it takes to refuse them) and is watched
// until it ends.
//
// Why: without these, a peer that opens streams and sends nothing keeps each of them, and what
// each holds, for as long as its connection lives (issue 51: idle streams pinned generations).
#ifndef RINGSIDE_COMMON_STREAM_LIMITS_H_
#define RINGSIDE_COMMON_STREAM_LIMITS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <queue>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "grpcpp/server_context.h"

namespace ringside {

// The limits of one service's streams. Defaults are far above what a job needs (a worker has one
// push stream per shard and step, one ring stream per neighbour) and far below what pins a
// server; tests make them small.
struct StreamLimits {
  // From the call's start to its first message; then DEADLINE_EXCEEDED.
  absl::Duration first_message = absl::Seconds(30);
  // Between two messages read, once the first has come; then DEADLINE_EXCEEDED. A stream waiting
  // for its answer (the worker has half-closed) is not idle.
  absl::Duration idle = absl::Minutes(5);
  // Streams open at once from one peer (its authenticated rank, else its TLS identity, else its
  // address) and in all; beyond either, RESOURCE_EXHAUSTED.
  int per_peer = 64;
  int total = 1024;
};

// INVALID_ARGUMENT unless every duration is positive and both counts at least 1.
absl::Status ValidateStreamLimits(const StreamLimits& limits);

// Who a call's peer is for the per-peer bound, when no credential names it: the TLS peer identity
// (the client certificate's names) when the call has one, else the address without its port.
std::string PeerOfCall(const grpc::ServerContextBase& context);

// Counts the streams a server holds, per peer and in all. Thread-safe.
class StreamAdmission {
 public:
  // Held by an admitted stream; its destruction (or Release) frees the place. Movable.
  class Ticket {
   public:
    Ticket() = default;
    Ticket(Ticket&& other) noexcept { *this = std::move(other); }
    Ticket& operator=(Ticket&& other) noexcept;
    ~Ticket() { Release(); }
    void Release();

   private:
    friend class StreamAdmission;
    Ticket(StreamAdmission* admission, std::string peer)
        : admission_(admission), peer_(std::move(peer)) {}
    StreamAdmission* admission_ = nullptr;  // null: holds nothing
    std::string peer_;
  };

  explicit StreamAdmission(StreamLimits limits) : limits_(limits) {}
  // Every ticket must be gone first.
  ~StreamAdmission() = default;
  StreamAdmission(const StreamAdmission&) = delete;
  StreamAdmission& operator=(const StreamAdmission&) = delete;

  // A place for one more stream from `peer`; RESOURCE_EXHAUSTED (naming the bound) when the peer
  // or the server already holds its limit. `what` names the streams in the message.
  absl::StatusOr<Ticket> Admit(const std::string& peer, const std::string& what);

  int held() const;
  int held_by(const std::string& peer) const;
  uint64_t refused() const;  // Admit's RESOURCE_EXHAUSTED so far

 private:
  void Free(const std::string& peer);

  const StreamLimits limits_;
  mutable absl::Mutex mu_;
  std::map<std::string, int> by_peer_ ABSL_GUARDED_BY(mu_);
  int held_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t refused_ ABSL_GUARDED_BY(mu_) = 0;
};

// Ends streams that stay silent: one thread per watchdog (started by the first Arm), whatever the
// number of streams.
// Thread-safe. A stream Arms a Watch when it starts (its first-message deadline), Touches it
// after every message (the idle limit from then on) and may Pause it while it is waiting for the
// server, not the peer; when a deadline passes, the watch's `expire` runs once on the watchdog's
// thread with DEADLINE_EXCEEDED, holding no lock of the watchdog's. A Watch's destruction
// unregisters it and, unless it is run from `expire` itself, waits for an `expire` in progress,
// so `expire` may use what the Watch's owner owns.
class StreamWatchdog {
 public:
  using Expire = std::function<void(const absl::Status& why)>;

  class Watch {
   public:
    Watch() = default;
    Watch(Watch&& other) noexcept { *this = std::move(other); }
    Watch& operator=(Watch&& other) noexcept;
    ~Watch() { Disarm(); }

    // A message came: the idle limit runs from now on.
    void Touch();
    // The stream waits for the server (its answer), not for the peer: no deadline until Touch.
    void Pause();
    // Unregisters (see the class comment); idempotent.
    void Disarm();

   private:
    friend class StreamWatchdog;
    Watch(StreamWatchdog* watchdog, uint64_t id) : watchdog_(watchdog), id_(id) {}
    StreamWatchdog* watchdog_ = nullptr;
    uint64_t id_ = 0;
  };

  explicit StreamWatchdog(StreamLimits limits);
  // Stops the thread; every Watch must be gone first.
  ~StreamWatchdog();
  StreamWatchdog(const StreamWatchdog&) = delete;
  StreamWatchdog& operator=(const StreamWatchdog&) = delete;

  // Watches a stream that starts now: `expire` runs if no message comes within the first-message
  // deadline, or later within the idle limit. `what` names the stream in the status.
  Watch Arm(std::string what, Expire expire);

  const StreamLimits& limits() const { return limits_; }
  // Streams watched now; expired so far.
  size_t watched() const;
  uint64_t expired() const;

 private:
  struct Entry {
    absl::Time deadline;  // InfiniteFuture while paused
    bool first = true;    // no message yet
    std::string what;
    Expire expire;
  };

  void Run();
  void Touch(uint64_t id);
  void Pause(uint64_t id);
  void Disarm(uint64_t id);

  const StreamLimits limits_;
  mutable absl::Mutex mu_;
  std::map<uint64_t, Entry> entries_ ABSL_GUARDED_BY(mu_);
  // (deadline, id), possibly stale: an entry Touched since is pushed again with its new deadline.
  using Due = std::pair<absl::Time, uint64_t>;
  std::priority_queue<Due, std::vector<Due>, std::greater<Due>> due_ ABSL_GUARDED_BY(mu_);
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  uint64_t expiring_ ABSL_GUARDED_BY(mu_) = 0;  // the id whose `expire` runs now; 0: none
  uint64_t expired_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread::id thread_id_ ABSL_GUARDED_BY(mu_);
  std::thread thread_ ABSL_GUARDED_BY(mu_);
};

}  // namespace ringside

#endif  // RINGSIDE_COMMON_STREAM_LIMITS_H_
