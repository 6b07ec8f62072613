// The `ringside` command's subcommands (cli/ringside_main.cc parses flags and dispatches).
//   compare  runs the same job(s) on a local cluster in ring mode and in ps mode and reports
//            (table on stdout, --json, --report HTML). A worker that dies is reported and the
//            run goes on with the survivors; a controller or shard that dies stops everything
//            (non-zero exit naming it). Every child is stopped by PID, also on SIGINT/SIGTERM.
//   lab      compare, with every process in its own network namespace on links shaped to
//            --link_rate, and the cost model's sync-time bound at that rate per mode.
//   up       starts a local cluster and keeps it until SIGINT/SIGTERM, printing every
//            process's metrics URL (and writing them to --ready_file). Like an orchestrator it
//            restarts a controller or shard that dies, with the same command line at the same
//            address, says so, and gives up (non-zero exit naming it) on a crash loop; a worker
//            that dies is reported and the others go on.
// Both pass --checkpoint_dir and --checkpoint_every to the controller; compare gives each of
// its clusters its own subdirectory (see CompareCheckpointDir).
#ifndef RINGSIDE_CLI_COMMANDS_H_
#define RINGSIDE_CLI_COMMANDS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "cli/compression_variants.h"
#include "cli/ps_variants.h"
#include "common/link_rate.h"
#include "common/metrics.h"
#include "common/step_model.h"
#include "common/termination_signals.h"
#include "common/transport_security.h"
#include "launch/local_cluster.h"
#include "worker/local_training.h"

namespace ringside::cli {

struct ClusterFlags {
  std::string bin_dir;
  int workers = 4;
  int ps_shards = 2;
  absl::Duration heartbeat_timeout = absl::Seconds(2);
  // Empty: a fresh temporary directory, removed at the end unless a process of the cluster ended
  // without being asked to (its log is kept there, and the path printed).
  std::string work_dir;
  // The controller's durable directory (empty: none) and its checkpoint interval in steps
  // (0: none); ringside-controller's --checkpoint_dir and --checkpoint_every.
  std::string checkpoint_dir;
  int64_t checkpoint_every = 0;
  // Mutual TLS on every link, with a throw-away CA and certificates in the work directory;
  // false: plaintext (--insecure).
  bool tls = true;
};

// `ringside compare --target_accuracy`'s default: what both modes reach on Fashion-MNIST within
// the default heavy job's steps (docs/compare.md).
inline constexpr double kDefaultTargetAccuracy = 0.75;

struct CompareOptions {
  ClusterFlags cluster;
  std::vector<TrainingOptions> jobs;
  std::string json_file;
  std::string report_file;
  // `ringside lab`: where each process runs (its own network namespace) and the rate of every
  // link, which gives each mode its bound_seconds_per_step. Unset: loopback, no bound.
  launch::HostOf host_of;
  std::optional<LinkRate> link_rate;
  int64_t link_burst_bytes = 0;  // the shapers' tbf burst (launch/network_lab.h)
  // The workers' --ps_window_bytes (server::PsClientOptions::window_bytes); 0: their default,
  // and in the lab server::kLabPsWindowBytes (for its shaped links).
  uint64_t ps_window_bytes = 0;
  // --stall_timeout: a run whose first live worker shows no new step and no new byte sent for
  // this long has stalled, and fails (its logs kept) rather than waiting for ever.
  absl::Duration stall_timeout = absl::Minutes(5);
  // `ringside lab --slow_link=HOST:RATE`: hosts whose link has a rate of its own (both ways).
  std::map<std::string, LinkRate> slow_links;
  // A scaling sweep (cli/scaling_sweep.h) when either lists more than one count: every job runs
  // on one cluster per worker count (ring) and per (workers, shards) pair (ps). Empty: the
  // cluster's one size.
  std::vector<int> worker_counts;
  std::vector<int> shard_counts;
  // Chrome trace / Perfetto JSON of every worker's steps and regroups in every cluster run
  // (worker/timeline.h); empty: none.
  std::string timeline_file;
  int64_t timeline_capacity = 4096;  // events kept per worker (ringside-worker's flag)
  // --colocate: after ring and ps, ps once more with S = N shards, shard i beside worker i (in
  // the lab on worker i's host, so their traffic never crosses its link; on loopback just S = N).
  bool colocate = false;
  // The test accuracy each mode is timed to (data with a held-out test set), in (0, 1].
  double target_accuracy = kDefaultTargetAccuracy;
  // --ps_variants: ps mode runs once per variant (cli/ps_variants.h), each against the same ring
  // run; empty: once, with the job's own settings. Not with a sweep.
  std::vector<PsVariant> ps_variants;
  // --compression_variants: each codec runs once more in every mode it fits (ring: randomk),
  // beside the plain runs and alternated with them (cli/compression_variants.h). Not with a
  // sweep.
  std::vector<Compression> compression_variants;
  // --probe=FILE's costs (common/cluster_probe.h; lab: its links at --link_rate): every run's
  // predicted step and sync beside the measured ones (cli/compare_prediction.h). Unset: none.
  std::optional<ClusterCosts> predicted_costs;
  // `ringside lab --probe_out=FILE`: the lab's worker links are probed first (cli/lab_probe.h),
  // the probe written here and every run predicted from it, its links as measured rather than
  // --link_rate's.
  std::string lab_probe_out;
  // --repeats: each mode (and each variant, and --colocate's run) runs this many times, in
  // rounds alternated ring, ps, ring, ps, ... so a drift of the machine falls on every mode
  // alike (cli/report/repeats.h summarises them). Not with a sweep.
  int repeats = 1;
};

struct UpOptions {
  ClusterFlags cluster;
  SyncMode mode = SyncMode::kRing;
  TrainingOptions job;
  std::string ready_file;
  // --probe=FILE's costs: every worker exports the step model's step in both modes
  // (ringside_predicted_step_seconds{mode}) beside the measured one. Unset: not exported.
  std::optional<ClusterCosts> predicted_costs;
};

// `ringside plan` (cli/plan_command.cc): the step model's prediction per mode on each (N, S).
struct PlanOptions {
  TrainingOptions job;  // its model, batch, wire dtype, buckets, straggler and PS variants
  std::vector<int> worker_counts = {4};
  std::vector<int> shard_counts = {2};
  // The costs: a probe file (--probe), else a probe of this host on loopback (--probe_members
  // links), written to --probe_out when given. --link_rate and --link_latency replace the link
  // figures measured: the cluster the user does not have.
  std::string probe_file;
  std::string probe_out;
  int probe_members = 3;
  bool tls = true;  // the probe's links under mutual TLS (a throw-away CA); false: --insecure
  // --probe_targets: the members (HOST:PORT of a LinkProbeService each: workers given
  // --probe_token_file) probed instead of loopback, their secret and the cluster's security.
  // Compute, CPU and cores are measured where plan runs: run it on one of the cluster's hosts.
  std::vector<std::string> probe_targets;
  std::string probe_token;
  TransportSecurity probe_security;
  std::optional<LinkRate> link_rate;
  std::optional<absl::Duration> link_latency;
  // The workers' push window in ps mode (--ps_window_bytes; 0: their default): the segment the
  // model's pipeline term counts.
  uint64_t ps_window_bytes = 0;
  int64_t steps_to_target = 0;  // 0: unknown, no time to target
  // --one_host: this host's usable cores, every process of the cluster on them as compare and
  // lab run it (PlanCluster::shared_host_cores); 0: a host per process.
  double shared_host_cores = 0;
  std::string json_file;
  std::string chart_file;  // SVG: predicted step time against N per mode
  // A `ringside compare --json` file: its runs' measured steps go on the chart as points.
  std::string measured_file;
  // compare or lab --json files of this model: the model is fitted to their runs first
  // (cli/plan_calibration.h).
  std::vector<std::string> calibrate_files;
};
absl::Status RunPlan(const PlanOptions& options, std::ostream& out);

// The checkpoint directory of compare's cluster for its `job`-th job (0-based, in the order the
// jobs run) in `mode`: <checkpoint_dir>/job-<job + 1>-<mode>, so no cluster resumes another's
// state. Empty when checkpoint_dir is.
std::string CompareCheckpointDir(const std::string& checkpoint_dir, int job, SyncMode mode);

absl::Status RunCompare(const CompareOptions& options, const TerminationSignals& signals,
                        std::ostream& out);
absl::Status RunUp(const UpOptions& options, const TerminationSignals& signals, std::ostream& out);

// `ringside lab` (cli/lab_command.cc): RunCompare with every process in its own network
// namespace on links shaped to options.link_rate (required), after removing the namespaces of
// labs whose owner is gone; the lab is removed on every exit path. FAILED_PRECONDITION naming
// what is missing when the lab cannot be built here (not root, no iproute2, no tbf, ...).
absl::Status RunLab(CompareOptions options, const TerminationSignals& signals, std::ostream& out);
// `ringside lab --cleanup`: removes the namespaces of labs whose owning process is gone.
absl::Status RunLabCleanup(std::ostream& out);

}  // namespace ringside::cli

#endif  // RINGSIDE_CLI_COMMANDS_H_
