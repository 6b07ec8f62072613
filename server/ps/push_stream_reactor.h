// The skeleton the ParameterShard service's push streams share (Step, ps_step_stream.cc;
// PushPull, ps_push_pull_stream.cc): a bidi reactor that holds itself until gRPC is done with
// the call, reads the worker's share one message at a time, writes its answer one message at a
// time behind ReactorWrites (common/reactor_writes.h: writes may be started off a reaction, by
// the shard's applier) and finishes once. Each stream keeps only its protocol: what a message,
// the end of the reads and a completed write mean.
//
// `Derived` (CRTP) provides, all called on gRPC's reactions:
//   bool OnMessage();               // a message is in `in()`: false ends the reads (the derived
//                                   // class has finished the stream then)
//   void OnReadsEnded(bool cancelled);  // the worker half-closed (false) or went away (true)
//   void OnWritten();               // the write in flight is done; start the next one, or finish
//   void OnStreamDone();            // OnDone, before the reactor lets go of itself
//   void OnFinishDeferred();        // a Finish waits for a write being started (ReactorWrites)
// Ownership: made with std::make_shared and handed to Start, after which the reactor holds itself
// until OnDone; anything that answers it off a reaction (the shard) holds it only weakly
// (weak_from_this), so a step that never completes does not keep it.
// Thread-safety: the reactions are gRPC's; FinishOnce and the writes are thread-safe (they go
// through ReactorWrites under mutex()).
#ifndef RINGSIDE_SERVER_PS_PUSH_STREAM_REACTOR_H_
#define RINGSIDE_SERVER_PS_PUSH_STREAM_REACTOR_H_

#include <memory>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/reactor_writes.h"
#include "grpcpp/grpcpp.h"

namespace ringside::server {

template <typename Derived, typename Request, typename Response>
class PushStreamReactor : public grpc::ServerBidiReactor<Request, Response>,
                          public std::enable_shared_from_this<Derived> {
 public:
  using Writes = ReactorWrites<PushStreamReactor>;

  // Holds itself until OnDone, then starts reading. Returns the reactor gRPC is to drive.
  static Derived* Start(std::shared_ptr<Derived> reactor) {
    Derived* raw = reactor.get();
    PushStreamReactor* base = raw;
    {
      absl::MutexLock lock(&base->mu_);
      base->self_ = std::move(reactor);
    }
    base->StartRead(&base->in_);
    return raw;
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      derived().OnReadsEnded(context_->IsCancelled());
      return;
    }
    if (derived().OnMessage()) this->StartRead(&in_);
  }

  void OnWriteDone(bool ok) override {
    if (!ok) {
      FinishOnce(grpc::Status(grpc::StatusCode::UNAVAILABLE, "worker stopped reading"));
      return;
    }
    derived().OnWritten();
  }

  void OnCancel() override {
    // The worker is gone: a complete share still counts, a partial one is abandoned (the
    // derived OnReadsEnded, as the pending read fails).
    FinishOnce(grpc::Status(grpc::StatusCode::CANCELLED, "worker cancelled the step"));
  }

  void OnDone() override {
    derived().OnStreamDone();
    std::shared_ptr<Derived> last;  // released after the lock: may delete this
    absl::MutexLock lock(&mu_);
    last = std::move(self_);
  }

 protected:
  explicit PushStreamReactor(grpc::CallbackServerContext* context) : context_(context) {}

  grpc::CallbackServerContext& context() const { return *context_; }
  // The message just read (OnMessage's).
  Request& in() { return in_; }
  const Request& in() const { return in_; }
  // Guards what the writes' `prepare` reads and changes.
  absl::Mutex& mutex() ABSL_LOCK_RETURNED(mu_) { return mu_; }
  Writes& writes() { return writes_; }
  // The stream's one Finish (ReactorWrites: left to a thread that is starting a write).
  typename Writes::Ending FinishOnce(const grpc::Status& status) {
    const typename Writes::Ending ending = writes_.Finish(status);
    if (ending == Writes::Ending::kDeferred) derived().OnFinishDeferred();
    return ending;
  }

 private:
  Derived& derived() { return static_cast<Derived&>(*this); }

  grpc::CallbackServerContext* const context_;
  Request in_;  // the read in flight, one at a time
  absl::Mutex mu_;
  Writes writes_{*this, mu_};  // every write and the one Finish
  std::shared_ptr<Derived> self_ ABSL_GUARDED_BY(mu_);
};

}  // namespace ringside::server

#endif  // RINGSIDE_SERVER_PS_PUSH_STREAM_REACTOR_H_
