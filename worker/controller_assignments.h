// The controller's watch stream as an AssignmentSource: each proto::Assignment the member's
// ControllerClient holds, converted once into the trainer's plain struct (the job with this
// worker's own device). Thread-safe as ControllerClient is.
#ifndef RINGSIDE_WORKER_CONTROLLER_ASSIGNMENTS_H_
#define RINGSIDE_WORKER_CONTROLLER_ASSIGNMENTS_H_

#include <string>

#include "server/controller/controller_client.h"
#include "worker/assignment_source.h"

namespace ringside::worker {

// INVALID_ARGUMENT for an unknown mode or a job this worker cannot run.
absl::StatusOr<GenerationAssignment> GenerationAssignmentOf(const proto::Assignment& assignment,
                                                            const std::string& device);

class ControllerAssignments final : public AssignmentSource {
 public:
  // `client` must outlive this object.
  ControllerAssignments(server::ControllerClient& client, std::string device)
      : client_(client), device_(std::move(device)) {}

  absl::StatusOr<GenerationAssignment> WaitForNewer(uint64_t after, absl::Time deadline) override;
  void ReportCompletedSteps(uint64_t steps) override { client_.set_completed_steps(steps); }
  absl::Status ReportFailedGeneration(uint64_t generation) override {
    return client_.ReportFailedGeneration(generation);
  }
  absl::Status SaveCheckpoint(uint64_t step, uint64_t parameters, uint64_t state_elements,
                              const StatePieceReader& read) override {
    return client_.PutCheckpoint(step, parameters, state_elements, read);
  }
  absl::Status LoadCheckpoint(uint64_t step, absl::Span<float> parameters,
                              absl::Span<float> optimizer_state) override {
    return client_.GetCheckpoint(step, parameters, optimizer_state);
  }

 private:
  server::ControllerClient& client_;
  const std::string device_;
};

}  // namespace ringside::worker

#endif  // RINGSIDE_WORKER_CONTROLLER_ASSIGNMENTS_H_
