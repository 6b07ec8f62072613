// `ringside-bench ring-rank` and `ps-rank`: one of Ringside's benchmark ranks (bench/rank_jobs.h),
// started by `ring` and `ps`, one process per rank.
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_split.h"
#include "bench/bench_flags.h"
#include "bench/commands.h"
#include "bench/rank_jobs.h"
#include "common/allocator_tuning.h"
#include "common/flags/security_flags.h"
#include "common/termination_signals.h"
#include "grpc/grpc.h"

ABSL_FLAG(std::string, peers, "",
          "ring-rank (internal): every rank's RingPeer address (HOST:PORT), in rank order");
ABSL_FLAG(std::string, ps, "", "ps-rank (internal): every shard's address, in shard order");
ABSL_FLAG(std::string, metrics_listen, "127.0.0.1:0",
          "ring-rank, ps-rank (internal): where the rank serves /metrics");
ABSL_FLAG(bool, linger, false,
          "ring-rank, ps-rank (internal): after the result, serve /metrics until SIGINT/SIGTERM");
ABSL_FLAG(int, op_timeout_s, 60,
          "ring-rank, ps-rank (internal): seconds one allreduce or push-pull step may take");

namespace ringside::bench {
namespace {

absl::StatusOr<RankJobOptions> OptionsFromFlags() {
  RankJobOptions options;
  absl::StatusOr<TransportSecurity> security = TransportSecurityFromFlags();
  if (!security.ok()) return security.status();
  options.security = *std::move(security);
  options.rank = absl::GetFlag(FLAGS_rank);
  options.peers = absl::StrSplit(absl::GetFlag(FLAGS_peers), ',', absl::SkipEmpty());
  options.shards = absl::StrSplit(absl::GetFlag(FLAGS_ps), ',', absl::SkipEmpty());
  options.workers = absl::GetFlag(FLAGS_workers);
  options.elements = absl::GetFlag(FLAGS_elements);
  options.iters = absl::GetFlag(FLAGS_iters);
  options.warmup = absl::GetFlag(FLAGS_warmup);
  options.segment_bytes = absl::GetFlag(FLAGS_segment_bytes);
  options.timeout = absl::Seconds(absl::GetFlag(FLAGS_op_timeout_s));
  options.metrics_listen = absl::GetFlag(FLAGS_metrics_listen);
  options.result_file = absl::GetFlag(FLAGS_result_file);
  return options;
}

int RunRankJob(const char* name, const std::vector<std::string>& args,
               absl::Status (*run)(const RankJobOptions&, std::ostream&)) {
  if (!args.empty()) {
    std::cerr << "ringside-bench " << name << ": unexpected argument '" << args[0] << "'\n";
    return 1;
  }
  TerminationSignals signals;
  absl::StatusOr<RankJobOptions> options = OptionsFromFlags();
  if (!options.ok()) {
    std::cerr << "ringside-bench " << name << ": " << options.status() << "\n";
    return 1;
  }
  if (absl::GetFlag(FLAGS_linger)) options->linger_until = &signals.notification();
  if (absl::Status status = run(*options, std::cout); !status.ok()) {
    std::cerr << "ringside-bench " << name << ": " << status << "\n";
    return 1;
  }
  return 0;
}

// gRPC's last shutdown (when the last channel goes) joins its executor threads, and one of them
// can sit in a poll until its next timer, the 10 s keepalive: a rank then lingered that long
// after its work (about one cell in thirty, each time `ringside-bench ring` waited for it). The
// rank holds gRPC to its end and leaves without gRPC's teardown once its output is flushed (its
// result file is written and renamed before).
[[noreturn]] void RunRank(const char* name, const std::vector<std::string>& args,
                          absl::Status (*run)(const RankJobOptions&, std::ostream&)) {
  grpc_init();
  const int code = RunRankJob(name, args, run);
  std::cout.flush();
  std::cerr.flush();
  std::_Exit(code);
}

}  // namespace

// The ranks stand in for ringside-worker, so they stream segments with its allocator settings.
int RunRingRankCommand(const std::vector<std::string>& args) {
  TuneAllocatorForSegmentStreams();
  RunRank("ring-rank", args, &RunRingRank);
}

int RunPsRankCommand(const std::vector<std::string>& args) {
  TuneAllocatorForSegmentStreams();
  RunRank("ps-rank", args, &RunPsRank);
}

}  // namespace ringside::bench
