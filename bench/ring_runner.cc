#include "bench/ring_runner.h"

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "bench/gloo_rank.h"
#include "bench/rank_processes.h"
#include "common/status_macros.h"
#include "launch/free_port.h"
#include "launch/subprocess.h"
#include "launch/temp_dir.h"

namespace ringside::bench {
namespace {

constexpr Implementation kRingImplementations[] = {Implementation::kRingside,
                                                   Implementation::kGlooAllreduceRing,
                                                   Implementation::kGlooRingChunked};

// Rank argv for every rank of the cell, or why the cell cannot start.
absl::StatusOr<std::vector<std::vector<std::string>>> BuildArgvs(const RunnerConfig& config,
                                                                 const CellSpec& spec,
                                                                 const launch::TempDir& dir) {
  std::vector<std::vector<std::string>> argvs;
  if (spec.implementation == Implementation::kRingside) {
    if (access(config.rank_binary.c_str(), X_OK) != 0) {
      return absl::NotFoundError(absl::StrCat("no executable rank binary at ", config.rank_binary,
                                              " (--rank_binary=PATH, or leave it empty)"));
    }
    ASSIGN_OR_RETURN(const std::vector<int> ports, launch::PickFreePorts(spec.workers));
    for (int rank = 0; rank < spec.workers; ++rank) {
      argvs.push_back(RingsideWorkerArgv(config, spec, rank, ports,
                                         dir.File(absl::StrCat("rank-", rank, ".json"))));
    }
    return argvs;
  }
  if (!IsGloo(spec.implementation)) {
    return absl::InvalidArgumentError(
        absl::StrCat(ImplementationName(spec.implementation), " is not a ring implementation"));
  }
  if (!HaveGloo()) {
    return absl::UnimplementedError("this ringside-bench was built without Gloo (libgloo-dev)");
  }
  const std::string store_dir = dir.File("gloo-store");
  std::error_code error;
  if (!std::filesystem::create_directory(store_dir, error)) {
    return absl::InternalError(absl::StrCat("cannot create ", store_dir, ": ", error.message()));
  }
  for (int rank = 0; rank < spec.workers; ++rank) {
    argvs.push_back(GlooRankArgv(config, spec, rank, store_dir,
                                 dir.File(absl::StrCat("rank-", rank, ".json"))));
  }
  return argvs;
}

absl::Status RunCellProcesses(const RunnerConfig& config, const CellSpec& spec,
                              CellResult* result) {
  ASSIGN_OR_RETURN(launch::TempDir dir, launch::TempDir::Create("ringside-bench-"));
  if (config.keep_temp) {
    dir.Keep();
    std::cerr << "ringside-bench: keeping " << dir.path() << "\n";
  }
  ASSIGN_OR_RETURN(const std::vector<std::vector<std::string>> argvs,
                   BuildArgvs(config, spec, dir));
  std::vector<std::string> result_files;
  for (int rank = 0; rank < spec.workers; ++rank) {
    result_files.push_back(dir.File(absl::StrCat("rank-", rank, ".json")));
  }
  ASSIGN_OR_RETURN(std::vector<RankResult> ranks,
                   RunRankProcesses(argvs, result_files, dir, "rank", config.timeout));
  return AggregateRanks(std::move(ranks), result);
}

}  // namespace

absl::StatusOr<Implementation> ParseImplementation(absl::string_view text) {
  for (Implementation implementation : kRingImplementations) {
    if (text == ImplementationName(implementation)) return implementation;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown implementation '", text,
                   "' (expected ringside, gloo_allreduce_ring or gloo_ring_chunked)"));
}

bool AbslParseFlag(absl::string_view text, ImplementationList* out, std::string* error) {
  ImplementationList parsed;
  for (absl::string_view part : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    absl::StatusOr<Implementation> implementation = ParseImplementation(part);
    if (!implementation.ok()) {
      *error = std::string(implementation.status().message());
      return false;
    }
    if (std::find(parsed.values.begin(), parsed.values.end(), *implementation) ==
        parsed.values.end()) {
      parsed.values.push_back(*implementation);
    }
  }
  if (parsed.values.empty()) {
    *error = "expected a comma-separated list such as ringside,gloo_allreduce_ring";
    return false;
  }
  *out = std::move(parsed);
  return true;
}

std::string AbslUnparseFlag(const ImplementationList& list) {
  return absl::StrJoin(list.values, ",", [](std::string* out, Implementation implementation) {
    out->append(std::string(ImplementationName(implementation)));
  });
}

int DefaultIters(int64_t bytes) {
  constexpr int64_t kPayloadPerCell = int64_t{512} << 20;
  return static_cast<int>(
      std::clamp<int64_t>(kPayloadPerCell / std::max<int64_t>(bytes, 1), 5, 1000));
}

std::vector<std::string> RingsideWorkerArgv(const RunnerConfig& config, const CellSpec& spec,
                                            int rank, const std::vector<int>& ports,
                                            const std::string& result_file) {
  std::vector<std::string> peers;
  for (int port : ports) peers.push_back(absl::StrCat("127.0.0.1:", port));
  std::vector<std::string> argv = {config.rank_binary,
                                   "ring-rank",
                                   absl::StrCat("--rank=", rank),
                                   absl::StrCat("--peers=", absl::StrJoin(peers, ",")),
                                   absl::StrCat("--elements=", spec.elements),
                                   absl::StrCat("--iters=", spec.iters),
                                   absl::StrCat("--warmup=", spec.warmup),
                                   absl::StrCat("--segment_bytes=", config.segment_bytes),
                                   "--metrics_listen=127.0.0.1:0",
                                   absl::StrCat("--result_file=", result_file)};
  argv.insert(argv.end(), config.security_flags.begin(), config.security_flags.end());
  return argv;
}

std::vector<std::string> GlooRankArgv(const RunnerConfig& config, const CellSpec& spec, int rank,
                                      const std::string& store_dir,
                                      const std::string& result_file) {
  const GlooAlgorithm algorithm = spec.implementation == Implementation::kGlooRingChunked
                                      ? GlooAlgorithm::kRingChunked
                                      : GlooAlgorithm::kAllreduceRing;
  return {config.self_binary,
          "gloo-rank",
          absl::StrCat("--rank=", rank),
          absl::StrCat("--world=", spec.workers),
          absl::StrCat("--store_dir=", store_dir),
          absl::StrCat("--algorithm=", GlooAlgorithmName(algorithm)),
          absl::StrCat("--elements=", spec.elements),
          absl::StrCat("--iters=", spec.iters),
          absl::StrCat("--warmup=", spec.warmup),
          absl::StrCat("--gloo_timeout_s=", absl::ToInt64Seconds(config.gloo_timeout)),
          absl::StrCat("--result_file=", result_file)};
}

CellResult RunCell(const RunnerConfig& config, const CellSpec& spec) {
  return MeasureCell(spec,
                     [&](CellResult* result) { return RunCellProcesses(config, spec, result); });
}

}  // namespace ringside::bench
