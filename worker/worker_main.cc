// ringside-worker: one worker daemon. Flags become WorkerOptions; worker/worker_daemon.h does
// the rest.

#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/allocator_tuning.h"
#include "common/flags/flags_usage.h"
#include "common/flags/security_flags.h"
#include "common/flags/training_flags.h"
#include "common/termination_signals.h"
#include "worker/worker_daemon.h"

namespace {
const ringside::worker::WorkerOptions kDefaults;
}  // namespace

ABSL_FLAG(std::string, mode, "ring", "ring (static ring, --peers) or ps (static shards, --ps)");
ABSL_FLAG(int, rank, kDefaults.cluster.rank, "this worker's rank (0-based)");
ABSL_FLAG(std::string, ps, "",
          "ps mode: every parameter-server shard's address HOST:PORT, comma-separated, in shard "
          "order");
ABSL_FLAG(int, workers, kDefaults.cluster.workers, "ps mode: the number of workers in the job");
ABSL_FLAG(std::string, peers, "",
          "static ring: every worker's RingPeer address HOST:PORT, comma-separated, in rank "
          "order (the same list on every worker)");
ABSL_FLAG(std::string, listen, "", "address to serve RingPeer on (default: --peers[--rank])");
ABSL_FLAG(std::string, metrics_listen, kDefaults.metrics_listen,
          "address of the Prometheus /metrics endpoint (port 0: any free port, printed)");
ABSL_FLAG(std::string, job, "train",
          "train (the only job; the benchmark ranks are `ringside-bench ring-rank|ps-rank`)");
ABSL_FLAG(int64_t, segment_bytes, kDefaults.segment_bytes,
          "largest payload of one ring message; chunks are streamed in segments of this size");
ABSL_FLAG(int64_t, ps_window_bytes, kDefaults.ps_window_bytes,
          "ps mode: how far this worker's pushes to a shard may run ahead of the sum it has "
          "received back, so every worker's pushes share the shard's link evenly; pushes travel "
          "in segments of a quarter of it (at most --segment_bytes)");
ABSL_FLAG(absl::Duration, timeout, kDefaults.timeout,
          "deadline of one allreduce, ps step or state transfer; a dead or stuck peer fails it "
          "after this");
ABSL_FLAG(std::string, result_file, "", "write the job's result here as JSON (atomically)");
ABSL_FLAG(std::string, params_out, "", "train job: write the final parameters here (float32)");
ABSL_FLAG(std::string, controller, "",
          "elastic: the controller's HOST:PORT; rank, peers, mode and the job come from there "
          "(--rank, --peers, --ps, --workers, --mode and the job flags but --device are unused)");
ABSL_FLAG(std::string, join_token_file, "", "elastic: file holding the job's join token");
ABSL_FLAG(std::string, advertise, "",
          "elastic: HOST:PORT the other workers dial (default: the --listen host and bound port)");
ABSL_FLAG(std::string, trace_file, "",
          "append one JSON line per completed step (step, generation, mode, rank, world, loss, "
          "parameters checksum)");
ABSL_FLAG(std::string, eval_file, "",
          "while rank 0, evaluate the job on the data's held-out test set (fashion-mnist) every "
          "--eval_every steps, off the training path, and append one JSON line per evaluation "
          "(step, seconds, test_accuracy, test_loss, loss, eval_seconds) here; empty: none");
ABSL_FLAG(std::string, timeline_file, "",
          "write a Chrome trace / Perfetto JSON of every step's phases (compute, sync, update) "
          "and every regroup here, atomically: at start, every few seconds, when the job is done "
          "and at exit");
ABSL_FLAG(int64_t, timeline_capacity, kDefaults.outputs.timeline_capacity,
          "--timeline_file keeps the newest this many events (4 per step), dropping older ones");
ABSL_FLAG(std::string, ready_file, "",
          "once serving (elastic: once registered), write {port, metrics_port, address} here as "
          "JSON");
ABSL_FLAG(absl::Duration, regroup_timeout, kDefaults.elastic.regroup_timeout,
          "elastic: after a failed step, how long to wait for the controller's next generation");
ABSL_FLAG(std::string, fault_at, "",
          "test only: end this worker with SIGKILL at a named protocol point, POINT[@STEP] "
          "(worker/fault_injection.h lists the points)");
ABSL_FLAG(int64_t, hold_at, -1,
          "test only: having completed this many steps, wait there once for the controller's next "
          "generation (so a test switches modes at an exact step); negative: never");
ABSL_FLAG(bool, linger, kDefaults.cluster.linger,
          "after the job, keep serving metrics until SIGINT/SIGTERM (for scraping)");
ABSL_FLAG(std::string, probe_token_file, "",
          "also serve the link probe on --listen to callers presenting the secret in this file "
          "(`ringside plan --probe_targets` measures this worker's link); empty: none");
ABSL_FLAG(std::string, predicted_step_seconds, "",
          "ring=S,ps=S: the step model's predicted seconds per step in each mode, exported as "
          "ringside_predicted_step_seconds{mode} (ringside up --probe sets it); empty: none");

namespace {

namespace worker = ringside::worker;

absl::StatusOr<worker::StaticClusterOptions> StaticClusterFromFlags() {
  worker::StaticClusterOptions cluster;
  absl::StatusOr<ringside::SyncMode> mode = ringside::ParseSyncMode(absl::GetFlag(FLAGS_mode));
  if (!mode.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--mode: ", mode.status().message()));
  }
  cluster.mode = *mode;
  cluster.ps = absl::StrSplit(absl::GetFlag(FLAGS_ps), ',', absl::SkipEmpty());
  cluster.workers = absl::GetFlag(FLAGS_workers);
  cluster.rank = absl::GetFlag(FLAGS_rank);
  cluster.peers = absl::StrSplit(absl::GetFlag(FLAGS_peers), ',', absl::SkipEmpty());
  cluster.linger = absl::GetFlag(FLAGS_linger);
  return cluster;
}

// --job survives only to point users of the old benchmark jobs to their new place.
absl::Status CheckJobFlag() {
  const std::string job = absl::GetFlag(FLAGS_job);
  if (job == "train") return absl::OkStatus();
  if (job != "allreduce" && job != "pushpull") {
    return absl::InvalidArgumentError(absl::StrCat("--job=", job, ": the only job is train"));
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "--job=", job, ": ringside-worker trains; the benchmark ranks moved to `ringside-bench ",
      job == "pushpull" ? "ps-rank" : "ring-rank", "`"));
}

worker::ElasticWorkerOptions ElasticFromFlags() {
  worker::ElasticWorkerOptions elastic;
  elastic.member.controller = absl::GetFlag(FLAGS_controller);
  elastic.member.join_token_file = absl::GetFlag(FLAGS_join_token_file);
  elastic.member.advertise = absl::GetFlag(FLAGS_advertise);
  elastic.regroup_timeout = absl::GetFlag(FLAGS_regroup_timeout);
  return elastic;
}

worker::WorkerOutputs OutputsFromFlags() {
  worker::WorkerOutputs outputs;
  outputs.result_file = absl::GetFlag(FLAGS_result_file);
  outputs.params_out = absl::GetFlag(FLAGS_params_out);
  outputs.trace_file = absl::GetFlag(FLAGS_trace_file);
  outputs.eval_file = absl::GetFlag(FLAGS_eval_file);
  outputs.timeline_file = absl::GetFlag(FLAGS_timeline_file);
  outputs.timeline_capacity = absl::GetFlag(FLAGS_timeline_capacity);
  outputs.ready_file = absl::GetFlag(FLAGS_ready_file);
  return outputs;
}

absl::StatusOr<worker::WorkerTestOptions> TestOptionsFromFlags() {
  worker::WorkerTestOptions testing;
  if (const std::string fault = absl::GetFlag(FLAGS_fault_at); !fault.empty()) {
    absl::StatusOr<worker::FaultPlan> plan = worker::ParseFaultPlan(fault);
    if (!plan.ok()) return plan.status();
    testing.fault = *std::move(plan);
  }
  testing.hold_at = absl::GetFlag(FLAGS_hold_at);
  return testing;
}

// --predicted_step_seconds=ring=S,ps=S (either may be left out).
absl::Status PredictedStepsFromFlags(worker::WorkerOptions& options) {
  const std::string text = absl::GetFlag(FLAGS_predicted_step_seconds);
  for (absl::string_view item : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    const std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(item, '=');
    double seconds = 0;
    if (!absl::SimpleAtod(kv.second, &seconds) || !(seconds > 0) || seconds > 1e6 ||
        (kv.first != "ring" && kv.first != "ps")) {
      return absl::InvalidArgumentError(absl::StrCat("--predicted_step_seconds: '", item,
                                                     "' is not ring=SECONDS or ps=SECONDS (> 0)"));
    }
    (kv.first == "ring" ? options.predicted_ring_step_seconds : options.predicted_ps_step_seconds) =
        seconds;
  }
  return absl::OkStatus();
}

// Each concern's flags in turn; the first bad flag is the error.
absl::StatusOr<worker::WorkerOptions> OptionsFromFlags() {
  worker::WorkerOptions options;
  absl::StatusOr<worker::StaticClusterOptions> cluster = StaticClusterFromFlags();
  if (!cluster.ok()) return cluster.status();
  options.cluster = *std::move(cluster);
  if (absl::Status job = CheckJobFlag(); !job.ok()) return job;
  options.listen = absl::GetFlag(FLAGS_listen);
  options.metrics_listen = absl::GetFlag(FLAGS_metrics_listen);
  options.segment_bytes = absl::GetFlag(FLAGS_segment_bytes);
  options.ps_window_bytes = absl::GetFlag(FLAGS_ps_window_bytes);
  options.timeout = absl::GetFlag(FLAGS_timeout);
  options.probe_token_file = absl::GetFlag(FLAGS_probe_token_file);
  if (absl::Status predicted = PredictedStepsFromFlags(options); !predicted.ok()) return predicted;
  absl::StatusOr<ringside::TrainingOptions> training = ringside::TrainingOptionsFromFlags();
  if (!training.ok()) return training.status();
  options.training = *std::move(training);
  options.elastic = ElasticFromFlags();
  options.outputs = OutputsFromFlags();
  absl::StatusOr<ringside::TransportSecurity> security = ringside::TransportSecurityFromFlags();
  if (!security.ok()) return security.status();
  options.security = *std::move(security);
  absl::StatusOr<worker::WorkerTestOptions> testing = TestOptionsFromFlags();
  if (!testing.ok()) return testing.status();
  options.testing = *std::move(testing);
  return options;
}

}  // namespace

constexpr char kUsage[] =
    "ringside-worker: computes gradients and synchronises them over a ring or shards.\n"
    "Static ring: ringside-worker --rank=R --peers=HOST:PORT,HOST:PORT,...\n"
    "Static PS:   ringside-worker --mode=ps --rank=R --workers=N --ps=HOST:PORT,...\n"
    "Elastic:     ringside-worker --controller=HOST:PORT --join_token_file=PATH "
    "--listen=HOST:PORT\n"
    "Probe only:  ringside-worker --probe_token_file=PATH --listen=HOST:PORT (the link probe\n"
    "             `ringside plan --probe_targets` measures, until SIGTERM)\n"
    "Every link: --tls_ca=PEM --tls_cert=PEM --tls_key=PEM (mutual TLS) or --insecure";

int main(int argc, char** argv) {
  ringside::TerminationSignals signals;
  ringside::TuneAllocatorForSegmentStreams();
  ringside::ConfigureFlagsUsage(kUsage);
  if (ringside::PrintHelpIfAsked(argc, argv, kUsage, std::cout)) return 0;
  absl::ParseCommandLine(argc, argv);
  absl::StatusOr<ringside::worker::WorkerOptions> options = OptionsFromFlags();
  absl::Status status = options.status();
  if (status.ok()) status = ringside::worker::RunWorker(*options, signals, std::cout);
  if (!status.ok()) {
    std::cerr << "ringside-worker: " << status << "\n";
    return signals.received() ? 128 + signals.signal() : 1;
  }
  return 0;
}
