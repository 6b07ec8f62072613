#include "ring/ring_member.h"

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace ringside::ring {

RingMember::RingMember(RingTopology topology, Metrics* metrics, TransportSecurity security,
                       RingInboxOptions options, StreamLimits stream_limits)
    : topology_(topology),
      metrics_(metrics),
      security_(std::move(security)),
      inbox_(topology, options, ReceiveMetrics()),
      service_(inbox_, stream_limits) {}

LinkReceiveMetrics RingMember::ReceiveMetrics() const {
  if (metrics_ == nullptr || topology_.world < 2) return {};
  return metrics_->LinkReceive(WorkerName(topology_.left()), WorkerName(topology_.rank),
                               SyncMode::kRing);
}

absl::Status RingMember::Connect(const std::vector<std::string>& addresses,
                                 const std::string& link_key) {
  RETURN_IF_ERROR(ValidateRing(topology_, addresses));
  LinkSendMetrics send;
  if (metrics_ != nullptr && topology_.world > 1) {
    send = metrics_->LinkSend(WorkerName(topology_.rank), WorkerName(topology_.right()),
                              SyncMode::kRing);
  }
  allreduce_.reset();
  transport_.reset();
  transport_ = std::make_unique<GrpcRingTransport>(topology_, addresses[topology_.right()], inbox_,
                                                   send.wire_bytes, security_, link_key);
  allreduce_ = std::make_unique<RingAllreduce>(*transport_, send);
  return absl::OkStatus();
}

absl::Status RingMember::Reconfigure(RingTopology topology,
                                     const std::vector<std::string>& addresses,
                                     const std::string& link_key) {
  RETURN_IF_ERROR(ValidateTopology(topology));
  topology_ = topology;
  inbox_.SetTopology(topology, ReceiveMetrics());
  return Connect(addresses, link_key);
}

absl::Status RingMember::Allreduce(uint64_t collective, absl::Span<float> buffer,
                                   const AllreduceOptions& options) {
  if (allreduce_ == nullptr) {
    return absl::FailedPreconditionError("ring member is not connected; call Connect() first");
  }
  return allreduce_->Run(collective, buffer, options);
}

}  // namespace ringside::ring
