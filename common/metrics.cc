#include "common/metrics.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <exception>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/net.h"
#include "common/status_macros.h"

namespace ringside {
namespace {

using prometheus::BuildCounter;
using prometheus::BuildGauge;
using prometheus::BuildHistogram;

absl::string_view PhaseName(StepPhase phase) {
  switch (phase) {
    case StepPhase::kCompute:
      return "compute";
    case StepPhase::kSync:
      return "sync";
    case StepPhase::kUpdate:
      return "update";
  }
  return "unknown";
}

// 100 us .. ~100 s, a factor of 2 apart: wide enough for a tiny MLP on loopback and a large
// model on a slow link.
prometheus::Histogram::BucketBoundaries SecondsBuckets() {
  prometheus::Histogram::BucketBoundaries bounds;
  for (double b = 1e-4; b < 200; b *= 2) bounds.push_back(b);
  return bounds;
}

std::map<std::string, std::string> LinkLabels(absl::string_view src, absl::string_view dst,
                                              SyncMode mode) {
  return {{"src", std::string(src)},
          {"dst", std::string(dst)},
          {"mode", std::string(SyncModeName(mode))}};
}

}  // namespace

absl::string_view SyncModeName(SyncMode mode) { return mode == SyncMode::kRing ? "ring" : "ps"; }

absl::StatusOr<SyncMode> ParseSyncMode(absl::string_view text) {
  if (text == "ring") return SyncMode::kRing;
  if (text == "ps") return SyncMode::kPs;
  return absl::InvalidArgumentError(absl::StrCat("mode '", text, "' is not one of: ring, ps"));
}

std::string WorkerName(int rank) { return absl::StrCat("worker-", rank); }
std::string PsShardName(int shard) { return absl::StrCat("ps-", shard); }

Metrics::Metrics(std::shared_ptr<prometheus::Registry> registry)
    : registry_(std::move(registry)),
      link_bytes_(BuildCounter()
                      .Name("ringside_link_bytes_total")
                      .Help("Payload bytes (tensor data only) sent from src to dst, counted by "
                            "the sender.")
                      .Register(*registry_)),
      link_received_bytes_(BuildCounter()
                               .Name("ringside_link_received_bytes_total")
                               .Help("Payload bytes from src accepted by the receiver dst.")
                               .Register(*registry_)),
      link_messages_(BuildCounter()
                         .Name("ringside_link_messages_total")
                         .Help("Messages carrying payload from src to dst.")
                         .Register(*registry_)),
      link_expected_bytes_(BuildCounter()
                               .Name("ringside_link_expected_bytes_total")
                               .Help("Payload bytes the analytic cost model expects on the link "
                                     "for the same steps.")
                               .Register(*registry_)),
      link_wire_bytes_(BuildCounter()
                           .Name("ringside_link_wire_bytes_total")
                           .Help("Serialized message bytes (payload plus protobuf framing) sent "
                                 "from src to dst.")
                           .Register(*registry_)),
      step_seconds_(BuildHistogram()
                        .Name("ringside_step_seconds")
                        .Help("Time per training step by phase.")
                        .Register(*registry_)),
      steps_total_(BuildCounter()
                       .Name("ringside_steps_total")
                       .Help("Completed synchronous steps.")
                       .Register(*registry_)),
      training_loss_(BuildGauge()
                         .Name("ringside_training_loss")
                         .Help("Loss of the last step (mean over the node's batch).")
                         .Register(*registry_)),
      world_size_(BuildGauge()
                      .Name("ringside_world_size")
                      .Help("Workers in the current generation.")
                      .Register(*registry_)),
      generation_(BuildGauge()
                      .Name("ringside_generation")
                      .Help("Topology generation.")
                      .Register(*registry_)),
      mode_info_(BuildGauge()
                     .Name("ringside_mode_info")
                     .Help("1 for the active synchronisation mode, 0 otherwise.")
                     .Register(*registry_)),
      ps_wait_seconds_(BuildHistogram()
                           .Name("ringside_ps_wait_seconds")
                           .Help("Time a parameter-server shard waited from the first to the "
                                 "last worker's gradient of a step.")
                           .Register(*registry_)),
      ps_dropped_pushes_(BuildCounter()
                             .Name("ringside_ps_dropped_pushes_total")
                             .Help("Pushes a parameter-server shard with backup workers dropped: "
                                   "late for a step already applied without them.")
                             .Register(*registry_)),
      ps_update_staleness_(BuildHistogram()
                               .Name("ringside_ps_update_staleness")
                               .Help("Staleness of each update a parameter-server shard applied "
                                     "(--staleness >= 1 or async): updates applied to its range "
                                     "between the worker's read of the parameters and this one.")
                               .Register(*registry_)),
      checkpoint_bytes_(BuildCounter()
                            .Name("ringside_checkpoint_bytes_total")
                            .Help("Checkpoint bytes uploaded (worker), written or restored "
                                  "(controller); durable state, not link payload.")
                            .Register(*registry_)),
      checkpoints_(BuildCounter()
                       .Name("ringside_checkpoints_total")
                       .Help("Checkpoints uploaded (worker), written or restored (controller).")
                       .Register(*registry_)),
      nonfinite_refused_(BuildCounter()
                             .Name("ringside_nonfinite_refused_total")
                             .Help("Values with a NaN or infinity refused, never applied: a "
                                   "shard's push, a checkpoint upload, a worker's own gradient, "
                                   "a regroup's source state.")
                             .Register(*registry_)),
      wire_dtype_info_(BuildGauge()
                           .Name("ringside_wire_dtype_info")
                           .Help("1 for the element type gradients travel in (--wire_dtype), "
                                 "0 for the others.")
                           .Register(*registry_)),
      wire_relative_error_(BuildGauge()
                               .Name("ringside_wire_relative_error")
                               .Help("Largest relative L2 error of a sampled step's synchronised "
                                     "gradient against the exact float32 sum of the same shares.")
                               .Register(*registry_)),
      wire_error_samples_(BuildCounter()
                              .Name("ringside_wire_error_samples_total")
                              .Help("Steps whose wire error was measured.")
                              .Register(*registry_)),
      predicted_step_seconds_(BuildGauge()
                                  .Name("ringside_predicted_step_seconds")
                                  .Help("The step model's predicted seconds per step of this "
                                        "cluster in each mode (ringside plan's model).")
                                  .Register(*registry_)) {}

void Metrics::ExportWireDtype(WireDtype dtype) {
  for (WireDtype each : {WireDtype::kFp32, WireDtype::kFp16, WireDtype::kBf16}) {
    wire_dtype_info_.Add({{"dtype", std::string(WireDtypeName(each))}}).Set(each == dtype ? 1 : 0);
  }
}

prometheus::Gauge& Metrics::WireRelativeError(SyncMode mode) {
  return wire_relative_error_.Add({{"mode", std::string(SyncModeName(mode))}});
}

prometheus::Gauge& Metrics::PredictedStepSeconds(SyncMode mode) {
  return predicted_step_seconds_.Add({{"mode", std::string(SyncModeName(mode))}});
}

prometheus::Counter& Metrics::WireErrorSamples(SyncMode mode) {
  return wire_error_samples_.Add({{"mode", std::string(SyncModeName(mode))}});
}

prometheus::Counter& Metrics::CheckpointBytes(absl::string_view what) {
  return checkpoint_bytes_.Add({{"what", std::string(what)}});
}

prometheus::Counter& Metrics::NonFiniteRefused(absl::string_view what) {
  return nonfinite_refused_.Add({{"what", std::string(what)}});
}

prometheus::Counter& Metrics::Checkpoints(absl::string_view what) {
  return checkpoints_.Add({{"what", std::string(what)}});
}

LinkSendMetrics Metrics::LinkSend(absl::string_view src, absl::string_view dst, SyncMode mode) {
  const auto labels = LinkLabels(src, dst, mode);
  return LinkSendMetrics{&link_bytes_.Add(labels), &link_messages_.Add(labels),
                         &link_expected_bytes_.Add(labels), &link_wire_bytes_.Add(labels)};
}

double Metrics::LinkBytesSent() const {
  double sum = 0;
  for (const prometheus::MetricFamily& family : link_bytes_.Collect()) {
    for (const prometheus::ClientMetric& metric : family.metric) sum += metric.counter.value;
  }
  return sum;
}

LinkReceiveMetrics Metrics::LinkReceive(absl::string_view src, absl::string_view dst,
                                        SyncMode mode) {
  return LinkReceiveMetrics{&link_received_bytes_.Add(LinkLabels(src, dst, mode))};
}

prometheus::Histogram& Metrics::StepSeconds(SyncMode mode, StepPhase phase) {
  return step_seconds_.Add(
      {{"mode", std::string(SyncModeName(mode))}, {"phase", std::string(PhaseName(phase))}},
      SecondsBuckets());
}

StepMetrics Metrics::Steps(SyncMode mode) {
  return StepMetrics{&StepSeconds(mode, StepPhase::kCompute), &StepSeconds(mode, StepPhase::kSync),
                     &StepSeconds(mode, StepPhase::kUpdate), &StepsTotal(mode),
                     &TrainingLoss(mode)};
}

prometheus::Counter& Metrics::StepsTotal(SyncMode mode) {
  return steps_total_.Add({{"mode", std::string(SyncModeName(mode))}});
}

prometheus::Gauge& Metrics::TrainingLoss(SyncMode mode) {
  return training_loss_.Add({{"mode", std::string(SyncModeName(mode))}});
}

prometheus::Gauge& Metrics::ModeInfo(SyncMode mode) {
  return mode_info_.Add({{"mode", std::string(SyncModeName(mode))}});
}

void Metrics::ExportMembership(int workers, uint64_t generation, SyncMode mode) {
  WorldSize().Set(workers);
  Generation().Set(static_cast<double>(generation));
  for (SyncMode each : {SyncMode::kRing, SyncMode::kPs}) ModeInfo(each).Set(each == mode ? 1 : 0);
}

prometheus::Histogram& Metrics::PsWaitSeconds() {
  return ps_wait_seconds_.Add({}, SecondsBuckets());
}

prometheus::Counter& Metrics::PsDroppedPushes() { return ps_dropped_pushes_.Add({}); }

prometheus::Histogram& Metrics::PsUpdateStaleness() {
  return ps_update_staleness_.Add(
      {}, prometheus::Histogram::BucketBoundaries{0, 1, 2, 4, 8, 16, 32, 64, 128, 256});
}

absl::StatusOr<std::unique_ptr<MetricsServer>> MetricsServer::Start(
    const std::string& listen, std::shared_ptr<prometheus::Registry> registry) {
  auto address = ParseHostPort(listen);
  if (!address.ok()) return Annotate(address.status(), "--metrics_listen");
  std::unique_ptr<prometheus::Exposer> exposer;
  try {
    // civetweb wants host:port without brackets for IPv4; it throws when it cannot bind. Its
    // defaults (2 threads, 30 s read timeout) let two idle connections block every scrape for
    // half a minute; more threads, and a short timeout that drops a connection which sends
    // nothing, keep /metrics answering whatever a stranger holds open.
    exposer = std::make_unique<prometheus::Exposer>(std::vector<std::string>{
        "listening_ports", address->ToString(), "num_threads", "8", "request_timeout_ms", "2000"});
  } catch (const std::exception& e) {
    return absl::UnavailableError(
        absl::StrCat("cannot serve metrics on ", listen, ": ", e.what(), " (is the port in use?)"));
  }
  exposer->RegisterCollectable(registry);
  const auto ports = exposer->GetListeningPorts();
  if (ports.empty()) return absl::UnavailableError("metrics server reports no listening port");
  return std::unique_ptr<MetricsServer>(
      new MetricsServer(std::move(exposer), address->host, ports.front()));
}

std::string MetricsServer::url() const {
  return absl::StrCat("http://", HostPort{host_, port_}.ToString(), "/metrics");
}

MetricsServer::~MetricsServer() {
  // civetweb's accept loop polls its socket with a 2 s timeout and checks for shutdown only
  // between polls, so stopping it takes up to 2 s (every daemon's Ctrl-C, every test's
  // teardown). Connecting to it wakes the poll; keep knocking until the server is gone.
  std::atomic<bool> stopped{false};
  const std::string host = host_ == "0.0.0.0" || host_.empty() ? "127.0.0.1" : host_;
  std::thread knocker([&stopped, host, port = port_] {
    while (!stopped.load()) {
      absl::SleepFor(absl::Milliseconds(20));
      const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (fd < 0) continue;
      sockaddr_in address{};
      address.sin_family = AF_INET;
      address.sin_port = htons(static_cast<uint16_t>(port));
      if (inet_pton(AF_INET, host.c_str(), &address.sin_addr) == 1) {
        connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address));
      }
      close(fd);
    }
  });
  exposer_.reset();
  stopped.store(true);
  knocker.join();
}

}  // namespace ringside
