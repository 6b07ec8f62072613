// The ParameterShard gRPC service over a ShardState (proto/ps.proto says the protocol). One
// small reactor per Step stream: it validates and stores segments as they are read, completes
// the worker's share on half-close, and streams the updated range back once the step is applied.
// A stream cancelled before its share is complete abandons it (nothing half-applied); a worker
// that has pushed and then disappears still counts for the step.
// Thread-safe; reactors never block.
#ifndef RINGSIDE_SERVER_PS_SERVICE_H_
#define RINGSIDE_SERVER_PS_SERVICE_H_

#include <cstdint>
#include <vector>

#include "common/metrics.h"
#include "proto/ps.grpc.pb.h"
#include "server/shard_state.h"

namespace ringside::server {

// Per-worker link counters of one shard (index = worker rank); empty members are not counted.
struct ShardLinkMetrics {
  std::vector<LinkReceiveMetrics> from_worker;  // worker -> shard gradients
  std::vector<LinkSendMetrics> to_worker;       // shard -> worker parameters
};

class ParameterShardService final : public proto::ParameterShard::CallbackService {
 public:
  // `state` must outlive the service. `segment_bytes`: largest parameter segment sent back.
  ParameterShardService(ShardState& state, ShardLinkMetrics metrics, uint64_t segment_bytes);

  grpc::ServerBidiReactor<proto::PsPush, proto::PsParameters>* Step(
      grpc::CallbackServerContext* context) override;
  grpc::ServerWriteReactor<proto::PsParameters>* GetParameters(
      grpc::CallbackServerContext* context, const proto::PsRangeRequest* request) override;

 private:
  ShardState& state_;
  const ShardLinkMetrics metrics_;
  const uint64_t segment_elements_;
};

}  // namespace ringside::server

#endif  // RINGSIDE_SERVER_PS_SERVICE_H_
