// A shard's applier thread, the one the synchronous shard (ShardState) and the push-pull shard
// (PushPullShard) both run their arithmetic on: started by the constructor, joined by the
// destructor. The loop runs callbacks (a reply's next write, a pull's answer), and one of them may
// drop the last reference to the shard that owns the thread: the shard's destructor, and so this
// one, then runs on the applier itself, which cannot join itself. It is detached instead and told
// so through the Liveness it was given, which lives on its own stack: the loop checks
// owner_destroyed() after running callbacks and returns at once, touching nothing of its owner.
// The owner declares it last (built once everything the loop reads is, destroyed first) and tells
// its loop to return (a flag under its lock, signalled) before this destructor joins.
#ifndef RINGSIDE_SERVER_PS_APPLIER_THREAD_H_
#define RINGSIDE_SERVER_PS_APPLIER_THREAD_H_

#include <functional>
#include <thread>
#include <utility>

namespace ringside::server {

class ApplierThread {
 public:
  // Whether the loop's owner is gone: set, on the applier thread itself, by a destructor run
  // there. Only the applier reads or writes it.
  class Liveness {
   public:
    bool owner_destroyed() const { return destroyed_; }

   private:
    friend class ApplierThread;
    bool destroyed_ = false;
  };

  // Runs `loop` on a new thread; it returns once its owner says stop, or owner_destroyed().
  explicit ApplierThread(std::function<void(const Liveness&)> loop)
      : thread_([this, loop = std::move(loop)] {
          Liveness liveness;
          liveness_ = &liveness;  // read only on this thread, by a destructor run here
          loop(liveness);
        }) {}
  // Joins the loop (its owner has told it to return), or, run on the applier itself from a
  // callback that dropped the last reference, detaches it and marks its owner destroyed.
  ~ApplierThread() {
    if (std::this_thread::get_id() == thread_.get_id()) {
      liveness_->destroyed_ = true;
      thread_.detach();
    } else {
      thread_.join();
    }
  }
  ApplierThread(const ApplierThread&) = delete;
  ApplierThread& operator=(const ApplierThread&) = delete;

 private:
  Liveness* liveness_ = nullptr;  // the applier's, on its stack
  std::thread thread_;            // last: starts once liveness_ is built
};

}  // namespace ringside::server

#endif  // RINGSIDE_SERVER_PS_APPLIER_THREAD_H_
