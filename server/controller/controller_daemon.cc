#include "server/controller/controller_daemon.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/cluster_files.h"
#include "common/compression.h"
#include "common/file_util.h"
#include "common/grpc_util.h"
#include "common/model_spec.h"
#include "common/net.h"
#include "common/optimizer.h"
#include "common/status_macros.h"
#include "prometheus/registry.h"
#include "server/controller/checkpoint_keeper.h"
#include "server/controller/controller_service.h"
#include "server/controller/job_spec.h"
#include "server/controller/membership.h"
#include "server/controller/membership_record.h"

namespace ringside::server {
namespace {

void ExportTopology(const Topology& topology, Metrics& metrics) {
  metrics.ExportMembership(static_cast<int>(topology.workers.size()), topology.generation,
                           topology.mode);
}

absl::Status ValidateControllerOptions(const ControllerOptions& options) {
  if (options.workers < 1 || options.ps_shards < 0) {
    return absl::InvalidArgumentError("--workers must be >= 1 and --ps_shards >= 0");
  }
  if (options.heartbeat_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--heartbeat_timeout must be positive");
  }
  if (options.checkpoint_every < 0 ||
      (options.checkpoint_every > 0 && options.checkpoint_dir.empty())) {
    return absl::InvalidArgumentError(
        "--checkpoint_every must be >= 0, and > 0 only with a --checkpoint_dir to write to");
  }
  // The job's settings together, and its compression against the mode it starts in: refused
  // here, before any member joins, rather than by every worker at its first step.
  RETURN_IF_ERROR(CheckSyncSettings(options.training));
  return CheckCompressionFitsMode(options.training.compression, options.mode);
}

struct Tokens {
  std::string join_token;      // --join_token_file
  std::string operator_token;  // --operator_token_file: guards SetMode; empty: no mode switches
};

absl::StatusOr<Tokens> ReadTokens(const ControllerOptions& options) {
  Tokens tokens;
  ASSIGN_OR_RETURN(tokens.join_token, ReadJoinToken(options.join_token_file));
  if (!options.operator_token_file.empty()) {
    ASSIGN_OR_RETURN(tokens.operator_token,
                     ReadTokenFile(options.operator_token_file, "--operator_token_file"));
  }
  return tokens;
}

// The --checkpoint_dir: the keeper of the job's checkpoints (opening it creates the directory
// and takes the newest intact checkpoint), and the membership record a restarted controller
// resumes from.
absl::StatusOr<std::unique_ptr<CheckpointKeeper>> OpenDurableState(const ControllerOptions& options,
                                                                   const proto::JobSpec& job,
                                                                   Membership& membership,
                                                                   Metrics& metrics,
                                                                   std::ostream& log) {
  ASSIGN_OR_RETURN(const ModelSpec model,
                   ModelSpec::Parse(options.training.model, options.training.activation));
  const uint64_t parameters = model.parameter_count();
  const CheckpointShape shape{parameters,
                              Optimizer::StateSize(options.training.optimizer.kind, parameters)};
  ASSIGN_OR_RETURN(std::unique_ptr<CheckpointKeeper> checkpoints,
                   CheckpointKeeper::Open(options.checkpoint_dir, job.SerializeAsString(), shape,
                                          &metrics, log));
  ASSIGN_OR_RETURN(std::optional<MembershipRecord> record,
                   LoadMembershipRecord(options.checkpoint_dir));
  if (record.has_value()) {
    RETURN_IF_ERROR(Annotate(membership.Restore(*record, absl::Now()),
                             MembershipRecordPath(options.checkpoint_dir)));
    log << "controller: resumed generation " << record->topology.generation << " with "
        << record->members.size() << " members from "
        << MembershipRecordPath(options.checkpoint_dir) << "\n";
  }
  // Said before anything is served: a reader who sees the restored generation in the metrics
  // finds these lines in the log.
  log.flush();
  return checkpoints;
}

// The main thread's work until a termination signal: it expires silent members every quarter
// of the heartbeat timeout and, after every change of the membership (a registration, a mode
// switch, an expiry), saves the record before it pushes and logs the new generation.
class MembershipFollower {
 public:
  MembershipFollower(const ControllerOptions& options, Membership& membership,
                     ControllerService& service, Metrics& metrics, std::ostream& log)
      : options_(options),
        membership_(membership),
        service_(service),
        metrics_(metrics),
        log_(log),
        next_expiry_(absl::Now() + options.heartbeat_timeout / 4) {}

  void Run(const TerminationSignals& signals) {
    while (!signals.received()) {
      const uint64_t version = membership_.AwaitChange(
          saved_version_, std::min(next_expiry_, absl::Now() + absl::Milliseconds(200)));
      const std::vector<uint64_t> dropped = ExpireIfDue();
      SaveRecord(version);
      const Topology topology = membership_.topology();
      if (!dropped.empty() || topology.generation != exported_generation_) Announce(topology);
    }
    // A change since the last save (a leave in the same instant as the signal, say) is saved
    // too, so a controller restarted on the same directory resumes exactly where this one ended.
    SaveRecord(membership_.version());
    log_ << "controller: stopped by signal " << signals.signal() << " at generation "
         << membership_.topology().generation
         << (options_.checkpoint_dir.empty()
                 ? "; without --checkpoint_dir its members register again with the next one\n"
                 : "; its membership record is saved for the next one to resume\n");
    log_.flush();
  }

 private:
  std::vector<uint64_t> ExpireIfDue() {
    if (absl::Now() < next_expiry_) return {};
    std::vector<uint64_t> dropped = membership_.Expire(absl::Now());
    next_expiry_ = absl::Now() + options_.heartbeat_timeout / 4;
    for (uint64_t id : dropped) {
      log_ << "controller: dropped member " << id << " (silent for " << options_.heartbeat_timeout
           << ")\n";
    }
    return dropped;
  }

  // `version`: what AwaitChange returned; with a --checkpoint_dir, the record of the
  // membership's current version is saved first.
  void SaveRecord(uint64_t version) {
    if (options_.checkpoint_dir.empty() || membership_.version() == saved_version_) {
      saved_version_ = version;
      return;
    }
    saved_version_ = membership_.version();
    if (absl::Status saved = SaveMembershipRecord(options_.checkpoint_dir, membership_.Record());
        !saved.ok()) {
      log_ << "controller: cannot save the membership record (a restarted controller would "
              "lose the job's members): "
           << saved << "\n";
    }
  }

  void Announce(const Topology& topology) {
    exported_generation_ = topology.generation;
    ExportTopology(topology, metrics_);
    service_.Notify();
    log_ << "controller: generation " << topology.generation << ", " << topology.workers.size()
         << " workers, " << topology.shards.size() << " shards, mode "
         << SyncModeName(topology.mode) << "\n";
    if (topology.mode == SyncMode::kPs && topology.shards.empty() && topology.generation > 0) {
      log_ << "controller: ps mode has no shard left; the workers wait for a shard to register "
              "(or for `ringside ctl mode ring`)\n";
    }
    log_.flush();
  }

  const ControllerOptions& options_;
  Membership& membership_;
  ControllerService& service_;
  Metrics& metrics_;
  std::ostream& log_;
  uint64_t exported_generation_ = 0;
  uint64_t saved_version_ = 0;
  absl::Time next_expiry_;
};

}  // namespace

absl::Status RunController(const ControllerOptions& options, const TerminationSignals& signals,
                           std::ostream& log) {
  RETURN_IF_ERROR(ValidateControllerOptions(options));
  ASSIGN_OR_RETURN(const Tokens tokens, ReadTokens(options));
  Membership membership(MembershipConfig{options.workers, options.ps_shards, tokens.join_token,
                                         options.heartbeat_timeout, options.mode});
  auto registry = std::make_shared<prometheus::Registry>();
  Metrics metrics(registry);
  const proto::JobSpec job = JobSpecOf(options.training);
  std::unique_ptr<CheckpointKeeper> checkpoints;
  if (!options.checkpoint_dir.empty()) {
    ASSIGN_OR_RETURN(checkpoints, OpenDurableState(options, job, membership, metrics, log));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<MetricsServer> metrics_server,
                   MetricsServer::Start(options.metrics_listen, registry));
  ControllerService service(membership, job, options.heartbeat_timeout, log);
  service.SetOperatorToken(tokens.operator_token);
  if (checkpoints != nullptr) {
    service.EnableCheckpoints(checkpoints.get(), static_cast<uint64_t>(options.checkpoint_every),
                              &metrics.NonFiniteRefused("checkpoint"));
  }
  ASSIGN_OR_RETURN(StartedServer server, StartServer(options.listen, {&service}, options.security));
  ExportTopology(membership.topology(), metrics);
  log << "controller: serving on " << ParseHostPort(options.listen)->host << ":" << server.port
      << " (" << options.security.Describe() << "), waiting for " << options.workers
      << " workers and " << options.ps_shards << " shards, metrics at " << metrics_server->url()
      << "\n";
  log.flush();
  if (!options.ready_file.empty()) {
    RETURN_IF_ERROR(WriteFileAtomically(
        options.ready_file, ReadyFileText({server.port, metrics_server->port(), /*address=*/""})));
  }
  MembershipFollower(options, membership, service, metrics, log).Run(signals);
  return absl::OkStatus();
}

}  // namespace ringside::server
