// Test-only hooks into the parameter-server shard (server/ps): moments inside its reactors and
// its applier that no public interface exposes, reported to a callback the test sets. The shard's
// classes make this a friend instead of offering setters in their production headers; no
// production folder may include tests/ (tests/architecture/check_layers.cmake).
#ifndef RINGSIDE_TESTS_SUPPORT_PS_TEST_HOOKS_H_
#define RINGSIDE_TESTS_SUPPORT_PS_TEST_HOOKS_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <utility>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "server/ps/ps_service.h"
#include "server/ps/shard_state.h"

namespace ringside::server {

class PsTestHooks {
 public:
  using StepEvent = ParameterShardService::StepEvent;
  using ApplyHook = ShardState::ApplyHook;

  // Reported by every Step stream opened after this, as it happens, on the thread doing it
  // (ParameterShardService::StepEvent says what each event is). Null: nothing reported.
  static void SetStepHook(ParameterShardService& service,
                          std::function<void(StepEvent event, int worker)> hook) {
    absl::MutexLock lock(&service.mu_);
    service.step_hook_ = std::move(hook);
  }

  // Asked (on a gRPC thread, holding no lock) by every Step stream opened after this at its
  // first segment, with the push's generation, worker and step: an error refuses the push with
  // that status, as the shard refuses a bad message (nothing of it is held). Null: none.
  static void SetPushRefusalHook(
      ParameterShardService& service,
      std::function<absl::Status(uint64_t generation, int worker, uint64_t step)> hook) {
    absl::MutexLock lock(&service.mu_);
    service.push_refusal_hook_ = std::move(hook);
  }

  // Called (on a gRPC thread, holding no lock) by every Load stream opened after this that
  // begins to wait for the shard's assignment of `generation`. Null: nothing reported.
  static void SetLoadWaitHook(ParameterShardService& service,
                              std::function<void(uint64_t generation)> hook) {
    absl::MutexLock lock(&service.mu_);
    service.load_wait_hook_ = std::move(hook);
  }

  // Runs on the applier thread for every segment [begin, end) of a step it applies, after the
  // segment is summed and before the optimiser updates it, without the state's lock: blocking
  // in it holds a step half-applied. Null: none.
  static void SetApplyHook(ShardState& state, ApplyHook hook) {
    absl::MutexLock lock(&state.mu_);
    state.apply_hook_ = std::move(hook);
  }

  // Returns once `count` reads (ShardState::ReadApplied) wait for the step being applied to end.
  static void AwaitWaitingReads(ShardState& state, size_t count) {
    absl::MutexLock lock(&state.mu_);
    auto waiting = [&state, count]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(state.mu_) {
      return state.readers_.size() >= count;
    };
    state.mu_.Await(absl::Condition(&waiting));
  }
};

}  // namespace ringside::server

#endif  // RINGSIDE_TESTS_SUPPORT_PS_TEST_HOOKS_H_
