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
// Every stream holds its place among the service's streams (a StreamAdmission ticket) and is
// watched for silence (a StreamWatchdog: its first message, then the next, must come in time;
// else it ends with DEADLINE_EXCEEDED) until OnDone. Once the worker has half-closed, the stream
// waits for the shard, not the worker: it is not watched then.
// Ownership: made with std::make_shared and handed to Start, after which the reactor holds itself
// until OnDone; anything that answers it off a reaction (the shard) holds it only weakly
// (weak_from_this), so a step that never completes does not keep it.
// Thread-safety: the reactions are gRPC's; FinishOnce and the writes are thread-safe (they go
// through ReactorWrites under mutex()).
#ifndef RINGSIDE_SERVER_PS_PUSH_STREAM_REACTOR_H_
#define RINGSIDE_SERVER_PS_PUSH_STREAM_REACTOR_H_

#include <memory>
#include <optional>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/grpc_util.h"
#include "common/reactor_writes.h"
#include "common/stream_limits.h"
#include "grpcpp/grpcpp.h"

namespace ringside::server {

template <typename Derived, typename Request, typename Response>
class PushStreamReactor : public grpc::ServerBidiReactor<Request, Response>,
                          public std::enable_shared_from_this<Derived> {
 public:
  using Writes = ReactorWrites<PushStreamReactor>;

  // Holds itself and `ticket` until OnDone, arms its watch with `watchdog` (which must outlive
  // it), then starts reading. Returns the reactor gRPC is to drive. `what` names the stream in
  // the status a silent one ends with.
  static Derived* Start(std::shared_ptr<Derived> reactor, StreamAdmission::Ticket ticket,
                        StreamWatchdog& watchdog, std::string what) {
    Derived* raw = reactor.get();
    PushStreamReactor* base = raw;
    base->ticket_ = std::move(ticket);
    // Off any reaction: the Finish goes through ReactorWrites, which issues it only on a stream
    // nobody has finished, and such a call is alive; one due before the first read is started
    // is left to Start.
    base->watch_ = watchdog.Arm(std::move(what),
                                [weak = std::weak_ptr<Derived>(reactor)](const absl::Status& why) {
                                  std::shared_ptr<Derived> self = weak.lock();
                                  if (self == nullptr) return;
                                  PushStreamReactor& stream = *self;
                                  {
                                    absl::MutexLock lock(&stream.mu_);
                                    if (!stream.reading_) {
                                      stream.expired_early_ = why;
                                      return;
                                    }
                                  }
                                  self->FinishOnce(ToGrpcStatus(why));
                                });
    {
      absl::MutexLock lock(&base->mu_);
      base->self_ = std::move(reactor);
    }
    base->StartRead(&base->in_);
    std::optional<absl::Status> expired;
    {
      absl::MutexLock lock(&base->mu_);
      base->reading_ = true;
      expired.swap(base->expired_early_);
    }
    if (expired.has_value()) base->FinishOnce(ToGrpcStatus(*expired));
    return raw;
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      watch_.Pause();  // half-closed (or gone): what remains is the shard's to do
      derived().OnReadsEnded(context_->IsCancelled());
      return;
    }
    watch_.Touch();
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
    watch_.Disarm();  // no expiry runs from now on
    ticket_.Release();
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
  // Set by Start before the first reaction; released by OnDone.
  StreamAdmission::Ticket ticket_;
  StreamWatchdog::Watch watch_;
  Request in_;  // the read in flight, one at a time
  absl::Mutex mu_;
  Writes writes_{*this, mu_};  // every write and the one Finish
  std::shared_ptr<Derived> self_ ABSL_GUARDED_BY(mu_);
  bool reading_ ABSL_GUARDED_BY(mu_) = false;  // Start has started the first read
  std::optional<absl::Status> expired_early_ ABSL_GUARDED_BY(mu_);  // a deadline before that
};

}  // namespace ringside::server

#endif  // RINGSIDE_SERVER_PS_PUSH_STREAM_REACTOR_H_
