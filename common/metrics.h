// The one place Ringside's Prometheus metrics are defined (names and labels per
// docs/contract.md), and the HTTP exposer that serves them.
//
// Ownership: `Metrics` owns nothing but references into the registry it is given; `main` builds
// the registry (tests pass their own), so several nodes can live in one process. Components take
// the small resolved structs (`LinkSendMetrics`, `LinkReceiveMetrics`, `StepMetrics`) at set-up
// time and never call Family::Add on the hot path (per step, per message): Family::Add takes
// the family's lock and hashes the labels. Thread-safe: prometheus-cpp metrics are atomic and
// Family::Add is internally locked.
#ifndef RINGSIDE_COMMON_METRICS_H_
#define RINGSIDE_COMMON_METRICS_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/wire_dtype.h"
#include "prometheus/counter.h"
#include "prometheus/exposer.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace ringside {

enum class SyncMode { kRing, kPs };
absl::string_view SyncModeName(SyncMode mode);  // "ring" / "ps", the `mode` label value
absl::StatusOr<SyncMode> ParseSyncMode(absl::string_view text);

// Node names used as label values: "controller", "ps-<shard>", "worker-<rank>".
std::string WorkerName(int rank);
std::string PsShardName(int shard);

// Counters of one link src -> dst as seen by the sender.
struct LinkSendMetrics {
  prometheus::Counter* bytes = nullptr;           // ringside_link_bytes_total
  prometheus::Counter* messages = nullptr;        // ringside_link_messages_total
  prometheus::Counter* expected_bytes = nullptr;  // ringside_link_expected_bytes_total
  prometheus::Counter* wire_bytes = nullptr;      // ringside_link_wire_bytes_total
};

// Counter of one link src -> dst as seen by the receiver, on acceptance of a message.
struct LinkReceiveMetrics {
  prometheus::Counter* bytes = nullptr;  // ringside_link_received_bytes_total
};

enum class StepPhase { kCompute, kSync, kUpdate };

// The step loop's series of one mode.
struct StepMetrics {
  prometheus::Histogram* compute = nullptr;  // ringside_step_seconds{phase="compute"}
  prometheus::Histogram* sync = nullptr;     // ringside_step_seconds{phase="sync"}
  prometheus::Histogram* update = nullptr;   // ringside_step_seconds{phase="update"}
  prometheus::Counter* steps = nullptr;      // ringside_steps_total
  prometheus::Gauge* loss = nullptr;         // ringside_training_loss
};

class Metrics {
 public:
  explicit Metrics(std::shared_ptr<prometheus::Registry> registry);

  LinkSendMetrics LinkSend(absl::string_view src, absl::string_view dst, SyncMode mode);
  LinkReceiveMetrics LinkReceive(absl::string_view src, absl::string_view dst, SyncMode mode);
  // The sum of every ringside_link_bytes_total series of this registry: in a worker's own
  // registry, the payload bytes it has sent over the job, every mode and rank it held (what
  // `ringside compare` sets test accuracy against). Collects the family (its lock, a pass over
  // its few series): once per step, not per message.
  double LinkBytesSent() const;

  // Every series of the step loop of `mode` (creates them: see StepRecorder in
  // worker/data_parallel.h for when).
  StepMetrics Steps(SyncMode mode);
  prometheus::Histogram& StepSeconds(SyncMode mode, StepPhase phase);
  prometheus::Counter& StepsTotal(SyncMode mode);
  prometheus::Gauge& TrainingLoss(SyncMode mode);
  prometheus::Gauge& WorldSize() { return world_size_.Add({}); }
  prometheus::Gauge& Generation() { return generation_.Add({}); }
  prometheus::Gauge& ModeInfo(SyncMode mode);
  // The three gauges of the current topology: world size, generation, and 1 for `mode`'s info.
  void ExportMembership(int workers, uint64_t generation, SyncMode mode);
  // Parameter-server shard: time the shard waited between the first and last worker's push.
  prometheus::Histogram& PsWaitSeconds();
  // Shard with backup workers: stale pushes dropped (ringside_ps_dropped_pushes_total).
  prometheus::Counter& PsDroppedPushes();
  // Shard with --staleness >= 1 or async: each applied update's staleness, in updates
  // (ringside_ps_update_staleness).
  prometheus::Histogram& PsUpdateStaleness();
  // Durable state, not link payload: checkpoint bytes a worker uploaded or a controller wrote
  // (`what` = "uploaded" | "written" | "restored"), and how many.
  prometheus::Counter& CheckpointBytes(absl::string_view what);
  prometheus::Counter& Checkpoints(absl::string_view what);
  // Values with a NaN or infinity that were refused, never applied
  // (ringside_nonfinite_refused_total{what}): "push" (a shard refused a worker's push),
  // "checkpoint" (the controller refused an upload), "own_gradient" (a worker skipped its own
  // step's gradient), "regroup_state" (a regroup's source held such state and the regroup fell
  // back to the newest checkpoint).
  prometheus::Counter& NonFiniteRefused(absl::string_view what);
  // The wire dtype (common/wire_dtype.h): ringside_wire_dtype_info{dtype} 1 for `dtype`, 0 for
  // the others.
  void ExportWireDtype(WireDtype dtype);
  // ringside_wire_relative_error{mode}: the largest relative error of a sampled step's
  // synchronised gradient (ring/wire_error.h); ringside_wire_error_samples_total{mode}: how many
  // steps were sampled.
  prometheus::Gauge& WireRelativeError(SyncMode mode);
  prometheus::Counter& WireErrorSamples(SyncMode mode);
  // ringside_predicted_step_seconds{mode}: the step model's step time for this cluster in `mode`
  // (common/step_model.h; `ringside up --probe`), beside the measured ringside_step_seconds.
  prometheus::Gauge& PredictedStepSeconds(SyncMode mode);

  const std::shared_ptr<prometheus::Registry>& registry() const { return registry_; }

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Counter>& link_bytes_;
  prometheus::Family<prometheus::Counter>& link_received_bytes_;
  prometheus::Family<prometheus::Counter>& link_messages_;
  prometheus::Family<prometheus::Counter>& link_expected_bytes_;
  prometheus::Family<prometheus::Counter>& link_wire_bytes_;
  prometheus::Family<prometheus::Histogram>& step_seconds_;
  prometheus::Family<prometheus::Counter>& steps_total_;
  prometheus::Family<prometheus::Gauge>& training_loss_;
  prometheus::Family<prometheus::Gauge>& world_size_;
  prometheus::Family<prometheus::Gauge>& generation_;
  prometheus::Family<prometheus::Gauge>& mode_info_;
  prometheus::Family<prometheus::Histogram>& ps_wait_seconds_;
  prometheus::Family<prometheus::Counter>& ps_dropped_pushes_;
  prometheus::Family<prometheus::Histogram>& ps_update_staleness_;
  prometheus::Family<prometheus::Counter>& checkpoint_bytes_;
  prometheus::Family<prometheus::Counter>& checkpoints_;
  prometheus::Family<prometheus::Counter>& nonfinite_refused_;
  prometheus::Family<prometheus::Gauge>& wire_dtype_info_;
  prometheus::Family<prometheus::Gauge>& wire_relative_error_;
  prometheus::Family<prometheus::Counter>& wire_error_samples_;
  prometheus::Family<prometheus::Gauge>& predicted_step_seconds_;
};

// Serves a registry as Prometheus text at http://HOST:PORT/metrics. Owns the HTTP server.
class MetricsServer {
 public:
  // `listen` is HOST:PORT; port 0 picks a free one (see port()).
  static absl::StatusOr<std::unique_ptr<MetricsServer>> Start(
      const std::string& listen, std::shared_ptr<prometheus::Registry> registry);
  int port() const { return port_; }
  // "http://HOST:PORT/metrics", for the start-up line every daemon prints.
  std::string url() const;
  // Stops the HTTP server promptly (see the .cc for why this needs help).
  ~MetricsServer();

 private:
  MetricsServer(std::unique_ptr<prometheus::Exposer> exposer, std::string host, int port)
      : exposer_(std::move(exposer)), host_(std::move(host)), port_(port) {}
  std::unique_ptr<prometheus::Exposer> exposer_;
  std::string host_;
  int port_;
};

}  // namespace ringside

#endif  // RINGSIDE_COMMON_METRICS_H_
