// ringside-bench train: samples/s of the whole training loop (compute, sync, update) in both of
// Ringside's modes, beside PyTorch's DistributedDataParallel over Gloo on the same job when
// Debian's python3-torch is installed, with the ratios measured within each run.
//
// Each run starts `ringside compare` on the job (the product's own path: real daemons, one
// cluster per mode, samples/s from worker-0's step trace) and then bench/ddp_train.py with the
// same model, global batch, steps, rows and optimiser. The runs alternate implementations so
// a machine that gets busier during the sweep skews each ratio less than it skews the columns.
#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bench/bench_flags.h"
#include "bench/commands.h"
#include "bench/rank_processes.h"
#include "common/file_util.h"
#include "common/status_macros.h"
#include "launch/subprocess.h"
#include "launch/temp_dir.h"
#include "nlohmann/json.hpp"

ABSL_FLAG(std::string, model, "784,1024,1024,10", "train: the MLP's layer list");
ABSL_FLAG(int64_t, steps, 50, "train: steps per run and mode");
ABSL_FLAG(int64_t, rows, 2048, "train: synthetic rows (each worker's data set)");
ABSL_FLAG(int, runs, 3, "train: runs; each runs every implementation once");
ABSL_FLAG(std::string, torch, "auto",
          "train: PyTorch DDP baseline: auto (when --python can import torch), on (required), off");
ABSL_FLAG(std::string, torch_script, RINGSIDE_BENCH_DDP_SCRIPT,
          "train: the PyTorch DDP script (bench/ddp_train.py)");
// Debian's python3-torch installs for the system interpreter, which a PATH python3 (pyenv, a
// virtual environment) need not be.
ABSL_FLAG(std::string, python, "/usr/bin/python3", "train: the Python that runs the DDP script");
ABSL_FLAG(
    bool, tls, false,
    "train: run Ringside's clusters with mutual TLS (default plaintext, as the DDP baseline)");

namespace ringside::bench {
namespace {

struct TrainJob {
  std::string model;
  int workers = 4, ps_shards = 2;
  int64_t steps = 50, rows = 2048, batch_size = 64;
  uint64_t seed = 1;
  bool tls = false;
};

// One implementation's figures in one run.
struct TrainResult {
  std::string implementation;  // "ringside-ring", "ringside-ps", "pytorch-ddp-gloo"
  int run = 0;
  double samples_per_second = 0, step_p50 = 0;
  int64_t peak_rss_bytes = 0;  // the largest worker's (Ringside only)
};

std::string BinDir() {
  absl::StatusOr<std::string> self = SelfExecutable();
  if (!self.ok()) return ".";
  return self->substr(0, self->rfind('/'));
}

// Runs `argv` to completion within `timeout`; its output goes to `log`.
absl::Status RunToEnd(std::vector<std::string> argv, const std::string& log,
                      absl::Duration timeout) {
  SpawnOptions spawn;
  spawn.argv = std::move(argv);
  spawn.log_path = log;
  absl::StatusOr<Subprocess> process = Subprocess::Spawn(spawn);
  if (!process.ok()) return process.status();
  absl::StatusOr<ExitStatus> exit = process->Wait(timeout);
  if (!exit.ok()) return exit.status();
  if (!exit->ok()) {
    return absl::InternalError(absl::StrCat("'", spawn.argv[0], "' ended with ", exit->ToString(),
                                            "; its log ends with:\n", TailOfFile(log, 8)));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<TrainResult>> RunRingside(const TrainJob& job, int run,
                                                     const TempDir& dir, absl::Duration timeout) {
  const std::string json_path = dir.File(absl::StrCat("compare-", run, ".json"));
  std::vector<std::string> argv = {BinDir() + "/ringside",
                                   "compare",
                                   "--model=" + job.model,
                                   absl::StrCat("--data=synthetic:", job.rows),
                                   absl::StrCat("--steps=", job.steps),
                                   absl::StrCat("--batch_size=", job.batch_size),
                                   absl::StrCat("--workers=", job.workers),
                                   absl::StrCat("--ps_shards=", job.ps_shards),
                                   absl::StrCat("--seed=", job.seed),
                                   "--optimizer=adam",
                                   "--json=" + json_path};
  if (!job.tls) argv.push_back("--insecure");
  RETURN_IF_ERROR(RunToEnd(argv, dir.File(absl::StrCat("compare-", run, ".log")), timeout));
  ASSIGN_OR_RETURN(const std::string text, ReadFileToString(json_path));
  const nlohmann::json json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return absl::InternalError("ringside compare wrote unreadable JSON");
  std::vector<TrainResult> results;
  for (const char* mode : {"ring", "ps"}) {
    if (!json.contains("modes") || !json["modes"].contains(mode) ||
        !json["modes"][mode].contains("step_seconds")) {
      return absl::InternalError(absl::StrCat("ringside compare's JSON has no modes.", mode,
                                              ".step_seconds: ", json_path));
    }
    const nlohmann::json& m = json["modes"][mode];
    TrainResult result{absl::StrCat("ringside-", mode), run, m.value("samples_per_second", 0.0),
                       m["step_seconds"].value("p50", 0.0)};
    for (const nlohmann::json& p : m.value("processes", nlohmann::json::array())) {
      if (p.value("name", "").rfind("worker-", 0) == 0) {
        result.peak_rss_bytes =
            std::max(result.peak_rss_bytes, p.value("peak_rss_bytes", int64_t{0}));
      }
    }
    results.push_back(result);
  }
  return results;
}

absl::StatusOr<TrainResult> RunTorch(const TrainJob& job, int run, const TempDir& dir,
                                     const std::string& script, absl::Duration timeout) {
  const std::string out = dir.File(absl::StrCat("ddp-", run, ".log"));
  RETURN_IF_ERROR(
      RunToEnd({absl::GetFlag(FLAGS_python), script, absl::StrCat("--workers=", job.workers),
                "--model=" + job.model, absl::StrCat("--batch_size=", job.batch_size),
                absl::StrCat("--steps=", job.steps), absl::StrCat("--rows=", job.rows),
                absl::StrCat("--seed=", job.seed)},
               out, timeout));
  ASSIGN_OR_RETURN(const std::string text, ReadFileToString(out));
  // The JSON is the last line; torch may print warnings before it.
  const size_t line = text.rfind('{');
  const nlohmann::json json = nlohmann::json::parse(
      line == std::string::npos ? "" : text.substr(line), nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) {
    return absl::InternalError(
        absl::StrCat("ddp_train.py printed no result:\n", TailOfFile(out, 8)));
  }
  return TrainResult{"pytorch-ddp-gloo", run, json.value("samples_per_second", 0.0),
                     json.value("step_seconds_p50", 0.0)};
}

// Whether python3 can import torch (the probe's output is kept in the work directory).
bool TorchImportable(const TempDir& dir) {
  return RunToEnd({absl::GetFlag(FLAGS_python), "-c", "import torch"}, dir.File("torch-probe.log"),
                  absl::Seconds(120))
      .ok();
}

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

std::string Table(const std::vector<TrainResult>& results, int runs) {
  std::string out = absl::StrFormat("%-18s %4s %12s %12s %14s\n", "implementation", "run",
                                    "samples/s", "step p50", "worker RSS");
  for (const TrainResult& r : results) {
    out += absl::StrFormat("%-18s %4d %12.1f %10.2fms %12s\n", r.implementation, r.run,
                           r.samples_per_second, r.step_p50 * 1e3,
                           r.peak_rss_bytes > 0
                               ? absl::StrFormat("%.1f MiB", r.peak_rss_bytes / 1048576.0)
                               : std::string("-"));
  }
  // Ratios within each run, then their median and range over the runs.
  auto ratio_line = [&](const std::string& ours, const std::string& base) {
    std::vector<double> ratios;
    for (int run = 1; run <= runs; ++run) {
      double a = 0, b = 0;
      for (const TrainResult& r : results) {
        if (r.run != run) continue;
        if (r.implementation == ours) a = r.samples_per_second;
        if (r.implementation == base) b = r.samples_per_second;
      }
      if (a > 0 && b > 0) ratios.push_back(a / b);
    }
    if (ratios.empty()) return std::string();
    const auto [low, high] = std::minmax_element(ratios.begin(), ratios.end());
    return absl::StrFormat("samples/s %s / %s: median %.3f (range %.3f-%.3f over %d runs)\n", ours,
                           base, Median(ratios), *low, *high, ratios.size());
  };
  out += ratio_line("ringside-ring", "pytorch-ddp-gloo");
  out += ratio_line("ringside-ps", "pytorch-ddp-gloo");
  out += ratio_line("ringside-ps", "ringside-ring");
  return out;
}

}  // namespace

int RunTrainCommand(const std::vector<std::string>& args) {
  if (!args.empty()) {
    std::cerr << "ringside-bench train: unexpected argument '" << args[0] << "'\n";
    return 1;
  }
  TrainJob job;
  job.model = absl::GetFlag(FLAGS_model);
  job.workers = absl::GetFlag(FLAGS_workers) > 0 ? absl::GetFlag(FLAGS_workers) : 4;
  job.ps_shards = absl::GetFlag(FLAGS_ps_shards) > 0 ? absl::GetFlag(FLAGS_ps_shards) : 2;
  job.steps = absl::GetFlag(FLAGS_steps);
  job.rows = absl::GetFlag(FLAGS_rows);
  job.batch_size = absl::GetFlag(FLAGS_batch_size) > 0 ? absl::GetFlag(FLAGS_batch_size) : 64;
  job.seed = absl::GetFlag(FLAGS_seed);
  job.tls = absl::GetFlag(FLAGS_tls);
  const int runs = absl::GetFlag(FLAGS_runs);
  const std::string torch = absl::GetFlag(FLAGS_torch);
  if (runs < 1 || job.steps < 1 || job.batch_size % job.workers != 0) {
    std::cerr << "ringside-bench train: need --runs >= 1, --steps >= 1 and "
                 "--batch_size a multiple of --workers\n";
    return 1;
  }
  if (torch != "auto" && torch != "on" && torch != "off") {
    std::cerr << "ringside-bench train: --torch must be auto, on or off, not '" << torch << "'\n";
    return 1;
  }
  absl::StatusOr<TempDir> dir = TempDir::Create("ringside-bench-train-");
  if (!dir.ok()) {
    std::cerr << "ringside-bench train: " << dir.status().message() << "\n";
    return 1;
  }
  if (absl::GetFlag(FLAGS_keep_temp)) dir->Keep();
  bool with_torch = torch == "on";
  if (torch == "auto") {
    with_torch = TorchImportable(*dir);
    if (!with_torch) {
      std::cerr << "ringside-bench train: no PyTorch baseline: " << absl::GetFlag(FLAGS_python)
                << " cannot import torch "
                   "(apt-get install python3-torch to add it)\n";
    }
  }
  const absl::Duration timeout = absl::Seconds(absl::GetFlag(FLAGS_timeout_s));
  std::vector<TrainResult> results;
  bool all_ok = true;
  struct Outcome {  // what RunWithProgress reports
    absl::Status status;
  };
  for (int run = 1; run <= runs; ++run) {
    RunWithProgress(run, runs, absl::StrCat("run ", run, ": ringside compare"), [&] {
      absl::StatusOr<std::vector<TrainResult>> ours = RunRingside(job, run, *dir, timeout);
      if (ours.ok()) results.insert(results.end(), ours->begin(), ours->end());
      if (!ours.ok()) std::cerr << "\n  " << ours.status().message() << "\n";
      all_ok &= ours.ok();
      return Outcome{ours.status()};
    });
    if (!with_torch) continue;
    RunWithProgress(run, runs, absl::StrCat("run ", run, ": PyTorch DDP"), [&] {
      absl::StatusOr<TrainResult> theirs =
          RunTorch(job, run, *dir, absl::GetFlag(FLAGS_torch_script), timeout);
      if (theirs.ok()) results.push_back(*theirs);
      if (!theirs.ok()) std::cerr << "\n  " << theirs.status().message() << "\n";
      all_ok &= theirs.ok();
      return Outcome{theirs.status()};
    });
  }
  nlohmann::json records = nlohmann::json::array();
  for (const TrainResult& r : results) {
    records.push_back({{"implementation", r.implementation},
                       {"run", r.run},
                       {"model", job.model},
                       {"workers", job.workers},
                       {"ps_shards", job.ps_shards},
                       {"batch_size", job.batch_size},
                       {"steps", job.steps},
                       {"samples_per_second", r.samples_per_second},
                       {"step_seconds_p50", r.step_p50},
                       {"peak_rss_bytes", r.peak_rss_bytes}});
  }
  const nlohmann::json json = {
      {"benchmark", "train"},
      {"units",
       {{"samples_per_second", "global batch x steps / summed step seconds (worker-0 / rank 0)"},
        {"peak_rss_bytes", "the largest worker's peak resident memory (Ringside only; else 0)"}}},
      {"records", std::move(records)}};
  const std::string title = absl::StrFormat(
      "train: %s, global batch %d, Adam, %d steps, %d workers, %d PS shards, %s\n", job.model,
      job.batch_size, job.steps, job.workers, job.ps_shards, job.tls ? "mutual TLS" : "plaintext");
  return FinishSweep("train", title + Table(results, runs), all_ok, absl::GetFlag(FLAGS_json),
                     json);
}

}  // namespace ringside::bench
