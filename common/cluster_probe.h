// The probe's file: what `ringside plan --probe_out` measured on a cluster (each link's latency
// and bandwidth, a sample's compute on the job's model and device, the sync work's CPU seconds
// per byte, the cores a process gets, a shard's service rate), which `ringside plan --probe`
// reads back as the step model's ClusterCosts (common/step_model.h). One JSON object:
//   {"format":"ringside-probe","version":1,"model":"784,1024,1024,10","activation":"tanh",
//    "device":"cpu","link_latency_seconds":A,"link_bytes_per_second":B,
//    "compute_seconds_per_sample":C,"sync_cpu_seconds_per_byte":D,"cores_per_process":E,
//    "shard_bytes_per_second":F,"links":[{"link":"a->b","latency_seconds":A,
//    "bytes_per_second":B,"device":"cpu","compute_seconds_per_sample":C,"usable_cores":U}, ...]}
// The top-level link figures are the slowest link's (the one a step waits for), the other costs
// the slowest profiled member's. A link's last three fields are there only where its member
// profiled itself (`ringside plan --probe_targets`: each member; a loopback or lab probe: one
// for the host). Extra fields are ignored. Pure apart from file I/O; thread-safe. Errors: NOT_FOUND
// / INTERNAL for I/O, INVALID_ARGUMENT for a malformed file or a value out of range (naming the
// file and the field), FAILED_PRECONDITION for another format version or another model than the
// job's.
#ifndef RINGSIDE_COMMON_CLUSTER_PROBE_H_
#define RINGSIDE_COMMON_CLUSTER_PROBE_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/step_model.h"
#include "nlohmann/json.hpp"

namespace ringside {

inline constexpr int kClusterProbeVersion = 1;

struct LinkProbe {
  std::string link;  // "probe->127.0.0.1:4711"
  double latency_seconds = 0;
  double bytes_per_second = 0;
  // The member's profile of itself; empty device: not profiled.
  std::string device;
  double compute_seconds_per_sample = 0;
  double usable_cores = 0;
};

struct ClusterProbe {
  int version = kClusterProbeVersion;
  std::string model;       // --model as given to the probe
  std::string activation;  // --activation
  std::string device;      // where compute_seconds_per_sample was measured: "cpu", "cuda:0"
  ClusterCosts costs;      // link figures: the slowest link's
  std::vector<LinkProbe> links;
};

nlohmann::json ClusterProbeJson(const ClusterProbe& probe);
// Writes atomically (temporary file, then rename).
absl::Status WriteClusterProbe(const std::string& path, const ClusterProbe& probe);
// Reads and checks every field (the costs as CheckPlanInput would).
absl::StatusOr<ClusterProbe> ReadClusterProbe(const std::string& path);

// FAILED_PRECONDITION unless `probe` measured this `model` and `activation`: a sample's compute
// on another model says nothing of this one's.
absl::Status CheckProbeMatchesModel(const ClusterProbe& probe, const std::string& path,
                                    const std::string& model, const std::string& activation);

}  // namespace ringside

#endif  // RINGSIDE_COMMON_CLUSTER_PROBE_H_
