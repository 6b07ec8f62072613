// Answers of a shard that has nothing to serve yet (an elastic shard before its first Load), or
// whose generation's consistency is served by the other push stream. Internal to the
// ParameterShard service.
#ifndef RINGSIDE_SERVER_PS_PS_REFUSALS_H_
#define RINGSIDE_SERVER_PS_PS_REFUSALS_H_

#include "grpcpp/grpcpp.h"

namespace ringside::server {

inline grpc::Status NothingServed() {
  return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                      "this shard holds no parameters yet: a worker loads them when a generation "
                      "in ps mode begins; take the latest assignment from the controller");
}

// A PushPull stream to a shard of synchronous steps.
inline grpc::Status SynchronousGeneration() {
  return grpc::Status(
      grpc::StatusCode::FAILED_PRECONDITION,
      "this shard's generation runs synchronous steps (--staleness=0 without backup "
      "workers): use Step");
}

// A Step stream to a push-pull shard.
inline grpc::Status PushPullGeneration() {
  return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                      "this shard's generation runs push-pull (--staleness, async or "
                      "--backup_workers): use PushPull");
}

template <typename Message>
class RefusedWrite final : public grpc::ServerWriteReactor<Message> {
 public:
  explicit RefusedWrite(const grpc::Status& why = NothingServed()) { this->Finish(why); }
  void OnDone() override { delete this; }
};

}  // namespace ringside::server

#endif  // RINGSIDE_SERVER_PS_PS_REFUSALS_H_
