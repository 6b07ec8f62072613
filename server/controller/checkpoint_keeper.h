// The controller's side of durable state (ringside-controller --checkpoint_dir): the newest
// checkpoint of the job, held in memory to hand to a resuming job at once, and written to the
// directory (common/checkpoint_store.h: atomic, checksummed, the oldest beyond a few pruned) by
// a writer thread of its own, so no gRPC callback thread waits for the disk.
//
// At start it takes the newest intact checkpoint in the directory (each damaged newer one is
// logged and skipped), and refuses one written for another job: the model, data or optimiser
// would not fit.
// Thread-safe. Errors: Open's (the store's, or FAILED_PRECONDITION for another job's
// checkpoint); Accept's FAILED_PRECONDITION for a checkpoint not newer than the newest.
#ifndef RINGSIDE_SERVER_CONTROLLER_CHECKPOINT_KEEPER_H_
#define RINGSIDE_SERVER_CONTROLLER_CHECKPOINT_KEEPER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/checkpoint_store.h"
#include "common/metrics.h"

namespace ringside::server {

// The sizes the job's state has: what every upload must match before anything is stored.
struct CheckpointShape {
  uint64_t parameters = 0;
  uint64_t optimizer_state = 0;
  uint64_t state_elements() const { return parameters + optimizer_state; }
};

class CheckpointKeeper {
 public:
  // `job` is the job spec's serialised bytes, stored with every checkpoint and compared with a
  // restored one's. `metrics` may be null; it and `log` must outlive the keeper.
  static absl::StatusOr<std::unique_ptr<CheckpointKeeper>> Open(const std::string& dir,
                                                                std::string job,
                                                                CheckpointShape shape,
                                                                Metrics* metrics,
                                                                std::ostream& log);
  // Writes a checkpoint still pending, then stops the writer.
  ~CheckpointKeeper();

  // A complete upload of the shape: it becomes the newest at once and is written soon.
  absl::Status Accept(uint64_t step, std::vector<float> parameters,
                      std::vector<float> optimizer_state);
  std::shared_ptr<const Checkpoint> newest() const;  // null: none
  uint64_t newest_step() const;                      // 0: none
  const CheckpointShape& shape() const { return shape_; }

  // Until every accepted checkpoint is on disk (tests, and an orderly stop).
  void AwaitWritten() const;

 private:
  CheckpointKeeper(CheckpointStore store, std::string job, CheckpointShape shape, Metrics* metrics,
                   std::ostream& log);
  void WriteLoop();

  const CheckpointStore store_;
  const std::string job_;
  const CheckpointShape shape_;
  Metrics* const metrics_;
  std::ostream& log_;

  mutable absl::Mutex mu_;
  std::shared_ptr<const Checkpoint> newest_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<const Checkpoint> pending_ ABSL_GUARDED_BY(mu_);  // accepted, not yet written
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread writer_;  // last: starts once everything above is built
};

}  // namespace ringside::server

#endif  // RINGSIDE_SERVER_CONTROLLER_CHECKPOINT_KEEPER_H_
