// What a trainer needs of the ring, as an interface: join a generation's ring, run allreduces in
// it, and end an older generation's collective early. RingMember implements it over gRPC;
// InMemoryRingMember (memory_transport.h) over an in-process network, so the elastic protocol
// can be tested with trainers as threads.
//
// Thread-safety: Reconfigure() and Allreduce() are for one controlling thread; Supersede() is
// safe from any thread.
#ifndef RINGSIDE_RING_COLLECTIVE_H_
#define RINGSIDE_RING_COLLECTIVE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "ring/allreduce.h"
#include "ring/schedule.h"

namespace ringside::ring {

class Collective {
 public:
  virtual ~Collective() = default;

  // A new generation: this member is `topology.rank` of the ring whose RingPeer addresses are
  // `addresses` (by rank). Segments of older generations are dropped from now on. `link_key`
  // (common/auth.h) is what this member presents to its right neighbour; empty: none.
  virtual absl::Status Reconfigure(RingTopology topology, const std::vector<std::string>& addresses,
                                   const std::string& link_key) = 0;

  // One allreduce of `buffer` in the current generation (errors per RingAllreduce::Run).
  virtual absl::Status Allreduce(uint64_t collective, absl::Span<float> buffer,
                                 const AllreduceOptions& options) = 0;

  // `generation` was announced: a collective of an older one waiting for segments fails at
  // once with ABORTED (RingInbox::Supersede).
  virtual void Supersede(uint64_t generation) = 0;
};

}  // namespace ringside::ring

#endif  // RINGSIDE_RING_COLLECTIVE_H_
