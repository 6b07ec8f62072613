#include "bench/ps_runner.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "bench/flag_types.h"
#include "bench/rank_processes.h"
#include "common/cluster_files.h"
#include "common/cost_model.h"
#include "common/file_util.h"
#include "common/ranges.h"
#include "common/status_macros.h"
#include "launch/await_file.h"
#include "launch/subprocess.h"
#include "launch/temp_dir.h"

namespace ringside::bench {
namespace {

std::string ShardReadyPath(const launch::TempDir& dir, int shard) {
  return dir.File(absl::StrCat("shard-", shard, ".ready.json"));
}
std::string WorkerResultFile(const launch::TempDir& dir, int rank) {
  return dir.File(absl::StrCat("worker-", rank, ".json"));
}

absl::Status CheckExecutable(const std::string& path, absl::string_view name) {
  if (access(path.c_str(), X_OK) == 0) return absl::OkStatus();
  return absl::NotFoundError(absl::StrCat("no executable ", name, " at ", path,
                                          " (build it, or pass --",
                                          name == "ringside-ps" ? "ps" : "rank", "_binary=PATH)"));
}

// Waits for every shard's ready file (launch/await_file.h) under one deadline.
absl::StatusOr<std::vector<int>> WaitForShards(std::vector<launch::Subprocess>& shards,
                                               const launch::TempDir& dir, const PsCellSpec& spec,
                                               absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  std::vector<int> ports;
  for (size_t s = 0; s < shards.size(); ++s) {
    const int shard = static_cast<int>(s);
    ASSIGN_OR_RETURN(
        std::string text,
        launch::AwaitFileFrom(shards[s], ShardReadyPath(dir, shard), absl::StrCat("shard ", s),
                              std::max(deadline - absl::Now(), absl::ZeroDuration()),
                              /*log_lines=*/5));
    ASSIGN_OR_RETURN(ports.emplace_back(), ParseShardReady(text, spec, shard));
  }
  return ports;
}

// Runs the workers of a cell against its ready shards and reads their results.
absl::Status RunWorkers(const PsRunnerConfig& config, const PsCellSpec& spec,
                        const launch::TempDir& dir, const std::vector<int>& shard_ports,
                        PsCellResult* result) {
  std::vector<std::vector<std::string>> argvs;
  std::vector<std::string> result_files;
  for (int rank = 0; rank < spec.workers; ++rank) {
    result_files.push_back(WorkerResultFile(dir, rank));
    argvs.push_back(PsWorkerArgv(config, spec, rank, shard_ports, result_files.back()));
  }
  ASSIGN_OR_RETURN(std::vector<RankResult> ranks,
                   RunRankProcesses(argvs, result_files, dir, "worker", config.timeout));
  return AggregatePsWorkers(std::move(ranks), result);
}

// Signals every shard first and then reaps them one by one, so the cell waits for the slowest
// shard's shutdown rather than for the sum (ringside-ps can take seconds to leave gRPC's
// shutdown). A second SIGTERM from Kill() is harmless to a daemon already stopping.
void StopShards(std::vector<launch::Subprocess>& shards) {
  for (launch::Subprocess& shard : shards) {
    if (shard.running()) kill(shard.pid(), SIGTERM);
  }
  for (size_t s = 0; s < shards.size(); ++s) {
    const launch::ExitStatus exit = shards[s].Kill();
    // The workers' results are complete and checked by now: a shard that stops badly is
    // reported, but does not fail the cell.
    if (!exit.ok()) {
      std::cerr << "ringside-bench: warning: shard " << s << " did not stop cleanly after SIGTERM ("
                << exit.ToString() << ")\n";
    }
  }
}

absl::Status RunPsCellProcesses(const PsRunnerConfig& config, const PsCellSpec& spec,
                                PsCellResult* result) {
  RETURN_IF_ERROR(CheckExecutable(config.ps_binary, "ringside-ps"));
  RETURN_IF_ERROR(CheckExecutable(config.rank_binary, "ringside-bench"));
  ASSIGN_OR_RETURN(launch::TempDir dir, launch::TempDir::Create("ringside-ps-bench-"));
  if (config.keep_temp) {
    dir.Keep();
    std::cerr << "ringside-bench: keeping " << dir.path() << "\n";
  }
  // Declared after `dir` so that the shards are gone before their directory is removed.
  std::vector<launch::Subprocess> shards;
  absl::Status status;
  for (int s = 0; s < spec.shards && status.ok(); ++s) {
    launch::SpawnOptions options;
    options.argv = PsShardArgv(config, spec, s, ShardReadyPath(dir, s));
    options.log_path = dir.File(absl::StrCat("shard-", s, ".log"));
    options.term_grace = config.shard_term_grace;
    absl::StatusOr<launch::Subprocess> process = launch::Subprocess::Spawn(options);
    status = process.status();
    if (process.ok()) shards.push_back(*std::move(process));
  }
  if (status.ok()) {
    absl::StatusOr<std::vector<int>> ports = WaitForShards(shards, dir, spec, config.ready_timeout);
    status = ports.ok() ? RunWorkers(config, spec, dir, *ports, result) : ports.status();
  }
  StopShards(shards);
  return status;
}

std::string FormatSeconds(double seconds) {
  if (seconds >= 1) return absl::StrFormat("%.3f s", seconds);
  if (seconds >= 1e-3) return absl::StrFormat("%.3f ms", seconds * 1e3);
  return absl::StrFormat("%.1f us", seconds * 1e6);
}

// Analytic byte counts are often fractions of a MiB (2(N-1)/N, N/S): two decimals, not
// FormatByteSize's exact but unwieldy "1536KiB".
std::string FormatBytesPerStep(int64_t bytes) {
  if (bytes >= (1 << 20))
    return absl::StrFormat("%.2f MiB", static_cast<double>(bytes) / (1 << 20));
  return absl::StrFormat("%.2f KiB", static_cast<double>(bytes) / (1 << 10));
}

PsReportRow RingRow(const CellResult& cell) {
  PsReportRow row;
  row.implementation = std::string(ImplementationName(cell.spec.implementation));
  row.workers = cell.spec.world;
  row.bytes = cell.spec.bytes();
  row.elements = cell.spec.elements;
  row.iters = cell.spec.iters;
  row.busiest_node_bytes =
      static_cast<int64_t>(RingBusiestNode(row.elements, row.workers).elements * 4);
  row.ran = cell.status.ok();
  if (row.ran) {
    row.seconds_per_op = cell.seconds_per_op;
    row.check_ok = cell.check_ok;
    row.max_abs_error = cell.max_abs_error;
  } else {
    row.error = cell.status.ToString();
  }
  return row;
}

PsReportRow PsRow(const PsCellResult& cell, const CellResult* ring) {
  PsReportRow row;
  row.implementation = "ps";
  row.workers = cell.spec.workers;
  row.shards = cell.spec.shards;
  row.bytes = cell.spec.bytes();
  row.elements = cell.spec.elements;
  row.iters = cell.spec.iters;
  row.busiest_node_bytes =
      static_cast<int64_t>(PsBusiestNode(row.elements, row.workers, row.shards).elements * 4);
  row.ran = cell.status.ok();
  if (!row.ran) {
    row.error = cell.status.ToString();
    return row;
  }
  row.seconds_per_op = cell.seconds_per_op;
  row.check_ok = cell.check_ok;
  row.max_abs_error = cell.max_abs_error;
  if (ring != nullptr && ring->status.ok() && ring->seconds_per_op > 0) {
    row.ring_seconds_per_op = ring->seconds_per_op;
    row.ratio_to_ring = row.seconds_per_op / ring->seconds_per_op;
  }
  return row;
}

nlohmann::json OrNull(const std::optional<double>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json();
}

}  // namespace

std::vector<std::string> PsShardArgv(const PsRunnerConfig& config, const PsCellSpec& spec,
                                     int shard, const std::string& ready_file) {
  // SGD with lr 1 on zero parameters keeps every value a small exact integer, which is what the
  // workers' check expects.
  std::vector<std::string> argv = {config.ps_binary,
                                   absl::StrCat("--shard=", shard),
                                   absl::StrCat("--ps_shards=", spec.shards),
                                   absl::StrCat("--workers=", spec.workers),
                                   "--listen=127.0.0.1:0",
                                   "--metrics_listen=127.0.0.1:0",
                                   absl::StrCat("--elements=", spec.elements),
                                   "--optimizer=sgd",
                                   "--lr=1",
                                   absl::StrCat("--segment_bytes=", config.segment_bytes),
                                   absl::StrCat("--ready_file=", ready_file)};
  argv.insert(argv.end(), config.security_flags.begin(), config.security_flags.end());
  return argv;
}

std::vector<std::string> PsWorkerArgv(const PsRunnerConfig& config, const PsCellSpec& spec,
                                      int rank, const std::vector<int>& shard_ports,
                                      const std::string& result_file) {
  std::vector<std::string> shards;
  for (int port : shard_ports) shards.push_back(absl::StrCat("127.0.0.1:", port));
  std::vector<std::string> argv = {config.rank_binary,
                                   "ps-rank",
                                   absl::StrCat("--rank=", rank),
                                   absl::StrCat("--workers=", spec.workers),
                                   absl::StrCat("--ps=", absl::StrJoin(shards, ",")),
                                   absl::StrCat("--elements=", spec.elements),
                                   absl::StrCat("--iters=", spec.iters),
                                   absl::StrCat("--warmup=", spec.warmup),
                                   absl::StrCat("--segment_bytes=", config.segment_bytes),
                                   "--metrics_listen=127.0.0.1:0",
                                   absl::StrCat("--result_file=", result_file)};
  argv.insert(argv.end(), config.security_flags.begin(), config.security_flags.end());
  return argv;
}

absl::StatusOr<int> ParseShardReady(absl::string_view text, const PsCellSpec& spec, int shard) {
  absl::StatusOr<ReadyFile> ready = ParseReadyFile(text);
  if (!ready.ok()) return Annotate(ready.status(), absl::StrCat("shard ", shard));
  const ElementRange expected =
      EvenRanges(static_cast<uint64_t>(spec.elements), spec.shards)[shard];
  if (static_cast<uint64_t>(ready->range_begin) != expected.begin ||
      static_cast<uint64_t>(ready->range_end) != expected.end) {
    return absl::InternalError(absl::StrCat("shard ", shard, " owns [", ready->range_begin, ", ",
                                            ready->range_end, ") but the workers assume [",
                                            expected.begin, ", ", expected.end, ")"));
  }
  return ready->port;
}

absl::Status AggregatePsWorkers(std::vector<RankResult> workers, PsCellResult* cell) {
  // A PS cell's worker results have the shape of ring ranks' results: reuse their checks.
  CellResult as_ring;
  as_ring.spec.world = cell->spec.workers;
  as_ring.spec.elements = cell->spec.elements;
  as_ring.spec.iters = cell->spec.iters;
  RETURN_IF_ERROR(AggregateRanks(std::move(workers), &as_ring));
  cell->seconds_per_op = as_ring.seconds_per_op;
  cell->check_ok = as_ring.check_ok;
  cell->max_abs_error = as_ring.max_abs_error;
  cell->workers = std::move(as_ring.ranks);
  return absl::OkStatus();
}

PsCellResult RunPsCell(const PsRunnerConfig& config, const PsCellSpec& spec) {
  PsCellResult result;
  result.spec = spec;
  result.status = RunPsCellProcesses(config, spec, &result);
  if (!result.status.ok()) result.check_ok = false;
  return result;
}

std::vector<PsReportRow> BuildPsRows(const std::vector<PsCellResult>& ps_cells,
                                     const std::vector<CellResult>& ring_cells) {
  const auto find_ring = [&](int workers, int64_t elements) -> const CellResult* {
    for (const CellResult& ring : ring_cells) {
      if (ring.spec.world == workers && ring.spec.elements == elements) return &ring;
    }
    return nullptr;
  };
  std::vector<PsReportRow> rows;
  std::vector<const CellResult*> emitted;
  for (const PsCellResult& cell : ps_cells) {
    const CellResult* ring = find_ring(cell.spec.workers, cell.spec.elements);
    if (ring != nullptr && std::find(emitted.begin(), emitted.end(), ring) == emitted.end()) {
      rows.push_back(RingRow(*ring));
      emitted.push_back(ring);
    }
    rows.push_back(PsRow(cell, ring));
  }
  for (const CellResult& ring : ring_cells) {
    if (std::find(emitted.begin(), emitted.end(), &ring) == emitted.end()) {
      rows.push_back(RingRow(ring));
    }
  }
  return rows;
}

std::string FormatPsTable(const std::vector<PsReportRow>& rows) {
  std::string out =
      absl::StrFormat("%-9s %3s %3s %8s %6s %12s %12s %7s %15s %s\n", "impl", "N", "S", "size",
                      "iters", "time/step", "ring time/op", "ps/ring", "busiest in/step", "check");
  std::string errors;
  for (const PsReportRow& row : rows) {
    const std::string shards = row.shards > 0 ? absl::StrCat(row.shards) : "-";
    if (!row.ran) {
      absl::StrAppendFormat(&out, "%-9s %3d %3s %8s %6d %12s %12s %7s %15s %s\n",
                            row.implementation, row.workers, shards, FormatByteSize(row.bytes),
                            row.iters, "-", "-", "-", FormatBytesPerStep(row.busiest_node_bytes),
                            "ERROR");
      absl::StrAppend(&errors, "  ", row.implementation, " N=", row.workers,
                      row.shards > 0 ? absl::StrCat(" S=", row.shards) : "", " ",
                      FormatByteSize(row.bytes), ": ", row.error, "\n");
      continue;
    }
    absl::StrAppendFormat(
        &out, "%-9s %3d %3s %8s %6d %12s %12s %7s %15s %s\n", row.implementation, row.workers,
        shards, FormatByteSize(row.bytes), row.iters, FormatSeconds(row.seconds_per_op),
        row.ring_seconds_per_op ? FormatSeconds(*row.ring_seconds_per_op) : "-",
        row.ratio_to_ring ? absl::StrFormat("%.2f", *row.ratio_to_ring) : "-",
        FormatBytesPerStep(row.busiest_node_bytes), row.check_ok ? "ok" : "WRONG");
  }
  if (!errors.empty()) absl::StrAppend(&out, "errors:\n", errors);
  return out;
}

nlohmann::json PsToJson(const std::vector<PsReportRow>& rows) {
  nlohmann::json records = nlohmann::json::array();
  for (const PsReportRow& row : rows) {
    nlohmann::json record = {
        {"implementation", row.implementation},
        {"workers", row.workers},
        {"bytes", row.bytes},
        {"elements", row.elements},
        {"iters", row.iters},
        {"seconds_per_op", row.ran ? nlohmann::json(row.seconds_per_op) : nlohmann::json()},
        {"check_ok", row.ran && row.check_ok},
        {"max_abs_error", row.max_abs_error},
        {"busiest_node_bytes", row.busiest_node_bytes},
    };
    if (row.implementation == "ps") {
      record["shards"] = row.shards;
      record["ring_seconds_per_op"] = OrNull(row.ring_seconds_per_op);
      record["ratio_to_ring"] = OrNull(row.ratio_to_ring);
    }
    if (!row.ran) record["error"] = row.error;
    records.push_back(std::move(record));
  }
  return {{"benchmark", "ps"},
          {"units",
           {{"seconds_per_op",
             "seconds: PS, the slowest worker's median push-pull step; ring, the slowest rank's "
             "median allreduce"},
            {"ratio_to_ring", "PS seconds_per_op / ring seconds_per_op for the same N and K"},
            {"busiest_node_bytes",
             "analytic bytes into the busiest node per step: PS max(N*ceil(K/S), K)*4, ring "
             "2(N-1)K/N*4"}}},
          {"records", std::move(records)}};
}

}  // namespace ringside::bench
