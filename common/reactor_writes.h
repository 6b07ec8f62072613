// The writes and the one Finish of a gRPC server streaming reactor (grpc::ServerWriteReactor or
// grpc::ServerBidiReactor) whose writes may be started off a reaction.
//
// Why: gRPC keeps a server call alive while one of its reactions runs, or while an operation is
// outstanding; nothing else keeps it. A thread that is not running a reaction (a shard's applier
// answering a step, the thread that changed the membership) and starts a write races with any
// reaction that calls Finish: once Finish is called and nothing is outstanding, gRPC may end the
// call (OnDone, which frees the reactor) between that thread's deciding to write and its
// StartWrite. ReactorWrites closes that window: every write and the Finish of the stream go
// through it, and a Finish asked for while a write is being started is deferred and issued by the
// writing thread right after its StartWrite (the write keeps the call alive until OnWriteDone).
// Server reactors have no holds (a client reactor's AddHold does this job for a client: see
// ring/grpc_transport.cc), hence this helper.
//
// Ownership: a member of the reactor, made with the reactor and the reactor's own mutex, so that
// `prepare` can read and change state the reactor guards with that mutex.
// Thread-safety: thread-safe. Each method holds the mutex only briefly (never while calling
// gRPC, which may run a reaction inline) and never waits. The caller keeps to one write in flight
// (it starts a write only once the previous one's OnWriteDone has come), yet two starts may
// overlap here: a write can complete, and its OnWriteDone start the next, before the thread that
// started the first has returned from StartWrite. A deferred Finish is issued by the last of the
// overlapping starters, after every write they started.
#ifndef RINGSIDE_COMMON_REACTOR_WRITES_H_
#define RINGSIDE_COMMON_REACTOR_WRITES_H_

#include <optional>
#include <type_traits>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/support/status.h"

namespace ringside {

// `Reactor`: anything with StartWrite(const Message*) and Finish(grpc::Status), as gRPC's server
// write and bidi reactors have (tests pass a fake).
template <typename Reactor>
class ReactorWrites {
 public:
  // What Finish did with the status.
  enum class Ending {
    kIssued,    // Finish was called on the reactor, now
    kDeferred,  // a write is being started: Finish is called once it has been issued
    kAlready,   // the stream was finished before: nothing done
  };

  // `reactor` and `mu` (the reactor's mutex, not held when calling any method here) must outlive
  // this object.
  ReactorWrites(Reactor& reactor, absl::Mutex& mu) : reactor_(reactor), mu_(mu) {}
  ReactorWrites(const ReactorWrites&) = delete;
  ReactorWrites& operator=(const ReactorWrites&) = delete;

  // Starts the next write, from a reaction or from any other thread, unless the stream is
  // finished. `prepare` runs under the mutex and returns a pointer to the message to write (it
  // must stay untouched until OnWriteDone), or nullptr when there is nothing to write now; it is
  // not called on a finished stream. `claimed` runs outside the mutex once the write is claimed,
  // just before StartWrite (tests stop a thread there). A Finish asked for meanwhile is issued
  // right after StartWrite, on this thread. True when a write was started.
  template <typename Prepare, typename Claimed>
  bool StartWrite(Prepare&& prepare, Claimed&& claimed) {
    std::invoke_result_t<Prepare&> message = nullptr;  // a pointer to the message
    {
      absl::MutexLock lock(&mu_);
      if (finished_) return false;
      message = prepare();
      if (message == nullptr) return false;
      ++starting_;
    }
    claimed();
    reactor_.StartWrite(message);
    std::optional<grpc::Status> deferred;
    {
      absl::MutexLock lock(&mu_);
      if (--starting_ == 0) deferred.swap(deferred_);
    }
    // The writes started keep the call alive until their OnWriteDone, and nobody else will call
    // Finish: this is the stream's one Finish.
    if (deferred.has_value()) reactor_.Finish(*std::move(deferred));
    return true;
  }
  template <typename Prepare>
  bool StartWrite(Prepare&& prepare) {
    return StartWrite(std::forward<Prepare>(prepare), [] {});
  }

  // The stream's one Finish, from a reaction or from any other thread that knows the call is
  // alive (a reaction in progress or a write outstanding keeps it so); later calls do nothing.
  Ending Finish(grpc::Status status) {
    {
      absl::MutexLock lock(&mu_);
      if (finished_) return Ending::kAlready;
      finished_ = true;
      if (starting_ > 0) {
        deferred_ = std::move(status);
        return Ending::kDeferred;
      }
    }
    reactor_.Finish(std::move(status));
    return Ending::kIssued;
  }

  // Whether Finish has been asked for (issued or deferred).
  bool finished() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return finished_; }

 private:
  Reactor& reactor_;
  absl::Mutex& mu_;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  int starting_ ABSL_GUARDED_BY(mu_) = 0;  // StartWrites between their claim and their return
  std::optional<grpc::Status> deferred_ ABSL_GUARDED_BY(mu_);  // the Finish it must issue
};

}  // namespace ringside

#endif  // RINGSIDE_COMMON_REACTOR_WRITES_H_
