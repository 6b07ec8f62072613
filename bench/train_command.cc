// ringside-bench train: samples/s of the whole training loop (compute, sync, update) in both of
// Ringside's modes, beside PyTorch's DistributedDataParallel over Gloo on the same job when
// Debian's python3-torch is installed, with the ratios measured within each run. On data with a
// held-out test set (--data=fashion-mnist) also each system's test accuracy at equal steps and
// its seconds to --target_accuracy.
//
// Each run starts `ringside compare` on the job (the product's own path: real daemons, one
// cluster per mode, samples/s from worker-0's step trace, test accuracy from its evaluator) and
// then bench/ddp_train.py with the same model (tanh), initial-weight scale, data, global batch,
// steps, Adam and learning rate. The runs alternate implementations so a machine that gets
// busier during the sweep skews each ratio less than it skews the columns.
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
#include "bench/train_report.h"
#include "common/file_util.h"
#include "common/status_macros.h"
#include "common/training_options.h"
#include "launch/subprocess.h"
#include "launch/temp_dir.h"
#include "nlohmann/json.hpp"
#include "worker/dataset.h"

ABSL_FLAG(std::string, model, "784,1024,1024,10", "train: the MLP's layer list");
ABSL_FLAG(int64_t, steps, 50, "train: steps per run and mode");
ABSL_FLAG(int64_t, rows, 2048, "train: synthetic rows (each worker's data set)");
ABSL_FLAG(std::string, data, "synthetic",
          "train: synthetic (--rows rows), fashion-mnist or fashion-mnist:DIR (test accuracy and "
          "time to --target_accuracy too)");
ABSL_FLAG(double, lr, 0, "train: Adam's learning rate; 0: 0.001 on fashion-mnist, else 0.01");
ABSL_FLAG(int64_t, eval_every, 25, "train: evaluate test accuracy every this many steps");
ABSL_FLAG(double, target_accuracy, 0.75, "train: the test accuracy timed to, in (0, 1]");
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
  std::string data;         // as ringside compare's --data: synthetic:ROWS, fashion-mnist[:DIR]
  std::string fashion_dir;  // fashion-mnist's directory; empty for synthetic data
  int workers = 4, ps_shards = 2;
  int64_t steps = 50, rows = 2048, batch_size = 64, eval_every = 25;
  double lr = 0.01, target_accuracy = 0.75;
  uint64_t seed = 1;
  bool tls = false;
};

std::string BinDir() {
  absl::StatusOr<std::string> self = SelfExecutable();
  if (!self.ok()) return ".";
  return self->substr(0, self->rfind('/'));
}

// Runs `argv` to completion within `timeout`; its output goes to `log`.
absl::Status RunToEnd(std::vector<std::string> argv, const std::string& log,
                      absl::Duration timeout) {
  launch::SpawnOptions spawn;
  spawn.argv = std::move(argv);
  spawn.log_path = log;
  // One BLAS thread per process on both sides, as ddp_train.py gives torch: N workers share the
  // machine's cores alike, and neither system oversubscribes them (each Ringside worker would
  // otherwise start one OpenBLAS thread per core).
  spawn.extra_env = {"OPENBLAS_NUM_THREADS=1", "OMP_NUM_THREADS=1"};
  absl::StatusOr<launch::Subprocess> process = launch::Subprocess::Spawn(spawn);
  if (!process.ok()) return process.status();
  absl::StatusOr<launch::ExitStatus> exit = process->Wait(timeout);
  if (!exit.ok()) return exit.status();
  if (!exit->ok()) {
    return absl::InternalError(absl::StrCat("'", spawn.argv[0], "' ended with ", exit->ToString(),
                                            "; its log ends with:\n", launch::TailOfFile(log, 8)));
  }
  return absl::OkStatus();
}

// The job as `ringside compare` trains it (tanh and the device left at their defaults).
TrainingOptions TrainingOf(const TrainJob& job) {
  TrainingOptions training;
  training.model = job.model;
  training.data = job.data;
  training.steps = job.steps;
  training.eval_every = job.eval_every;
  training.batch_size = job.batch_size;
  training.optimizer = {OptimizerKind::kAdam, static_cast<float>(job.lr)};
  training.seed = job.seed;
  return training;
}

absl::StatusOr<std::vector<TrainResult>> RunRingside(const TrainJob& job, int run,
                                                     const launch::TempDir& dir,
                                                     absl::Duration timeout) {
  const std::string json_path = dir.File(absl::StrCat("compare-", run, ".json"));
  std::vector<std::string> argv = {BinDir() + "/ringside", "compare"};
  for (std::string& flag : TrainingOptionsArgv(TrainingOf(job))) argv.push_back(std::move(flag));
  argv.insert(argv.end(), {absl::StrCat("--target_accuracy=", job.target_accuracy),
                           absl::StrCat("--workers=", job.workers),
                           absl::StrCat("--ps_shards=", job.ps_shards), "--json=" + json_path});
  if (!job.tls) argv.push_back("--insecure");
  RETURN_IF_ERROR(RunToEnd(argv, dir.File(absl::StrCat("compare-", run, ".log")), timeout));
  ASSIGN_OR_RETURN(const std::string text, ReadFileToString(json_path));
  const nlohmann::json json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return absl::InternalError("ringside compare wrote unreadable JSON");
  absl::StatusOr<std::vector<TrainResult>> results = RingsideResults(json, run);
  if (!results.ok()) return Annotate(results.status(), json_path);
  return results;
}

absl::StatusOr<TrainResult> RunTorch(const TrainJob& job, int run, const launch::TempDir& dir,
                                     const std::string& script, absl::Duration timeout) {
  const std::string out = dir.File(absl::StrCat("ddp-", run, ".log"));
  std::vector<std::string> argv = {absl::GetFlag(FLAGS_python),
                                   script,
                                   absl::StrCat("--workers=", job.workers),
                                   "--model=" + job.model,
                                   absl::StrCat("--batch_size=", job.batch_size),
                                   absl::StrCat("--steps=", job.steps),
                                   absl::StrCat("--rows=", job.rows),
                                   absl::StrCat("--lr=", job.lr),
                                   absl::StrCat("--seed=", job.seed)};
  if (!job.fashion_dir.empty()) {
    argv.push_back("--fashion_mnist=" + job.fashion_dir);
    argv.push_back(absl::StrCat("--eval_every=", job.eval_every));
    argv.push_back(absl::StrCat("--target_accuracy=", job.target_accuracy));
  }
  RETURN_IF_ERROR(RunToEnd(argv, out, timeout));
  ASSIGN_OR_RETURN(const std::string text, ReadFileToString(out));
  // The JSON is the last line; torch may print warnings before it.
  const size_t end = text.find_last_not_of("\n");
  const size_t line = end == std::string::npos ? 0 : text.rfind('\n', end);
  const nlohmann::json json = nlohmann::json::parse(
      end == std::string::npos ? "" : text.substr(line == std::string::npos ? 0 : line + 1),
      nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) {
    return absl::InternalError(
        absl::StrCat("ddp_train.py printed no result:\n", launch::TailOfFile(out, 8)));
  }
  return TorchResult(json, run);
}

// Whether python3 can import torch (the probe's output is kept in the work directory).
bool TorchImportable(const launch::TempDir& dir) {
  return RunToEnd({absl::GetFlag(FLAGS_python), "-c", "import torch"}, dir.File("torch-probe.log"),
                  absl::Seconds(120))
      .ok();
}

// The job the flags describe; INVALID_ARGUMENT naming the flag.
absl::StatusOr<TrainJob> JobFromFlags() {
  TrainJob job;
  job.model = absl::GetFlag(FLAGS_model);
  job.workers = absl::GetFlag(FLAGS_workers) > 0 ? absl::GetFlag(FLAGS_workers) : 4;
  job.ps_shards = absl::GetFlag(FLAGS_ps_shards) > 0 ? absl::GetFlag(FLAGS_ps_shards) : 2;
  job.steps = absl::GetFlag(FLAGS_steps);
  job.rows = absl::GetFlag(FLAGS_rows);
  job.batch_size = absl::GetFlag(FLAGS_batch_size) > 0 ? absl::GetFlag(FLAGS_batch_size) : 64;
  job.seed = absl::GetFlag(FLAGS_seed);
  job.tls = absl::GetFlag(FLAGS_tls);
  job.eval_every = absl::GetFlag(FLAGS_eval_every);
  job.target_accuracy = absl::GetFlag(FLAGS_target_accuracy);
  if (job.steps < 1 || job.batch_size % job.workers != 0) {
    return absl::InvalidArgumentError("need --steps >= 1 and --batch_size a multiple of --workers");
  }
  if (job.eval_every < 1 || !(job.target_accuracy > 0 && job.target_accuracy <= 1)) {
    return absl::InvalidArgumentError("need --eval_every >= 1 and --target_accuracy in (0, 1]");
  }
  const std::string data = absl::GetFlag(FLAGS_data);
  job.data = data == "synthetic" ? absl::StrCat("synthetic:", job.rows) : data;
  absl::StatusOr<worker::DataSpec> spec = worker::ParseDataSpec(job.data);
  if (!spec.ok() || spec->kind == worker::DataSpec::Kind::kIris) {
    return absl::InvalidArgumentError(
        absl::StrCat("--data=", data, ": want synthetic, fashion-mnist or fashion-mnist:DIR"));
  }
  if (spec->kind == worker::DataSpec::Kind::kFashionMnist) {
    absl::StatusOr<ModelSpec> model = ModelSpec::Parse(job.model, "tanh");
    if (!model.ok()) return Annotate(model.status(), "--model");
    if (absl::Status fits = worker::CheckDataFitsModel(job.data, *model); !fits.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--data: ", fits.message()));
    }
    job.fashion_dir = spec->directory;
  }
  const double lr = absl::GetFlag(FLAGS_lr);
  if (lr < 0) return absl::InvalidArgumentError("--lr must be positive (0: the data's default)");
  job.lr = lr > 0 ? lr : (job.fashion_dir.empty() ? 0.01 : 0.001);
  return job;
}

// Runs every implementation `runs` times, alternating; false when any run failed.
bool RunAll(const TrainJob& job, int runs, bool with_torch, const launch::TempDir& dir,
            std::vector<TrainResult>& results) {
  const absl::Duration timeout = absl::Seconds(absl::GetFlag(FLAGS_timeout_s));
  bool all_ok = true;
  struct Outcome {  // what RunWithProgress reports
    absl::Status status;
  };
  for (int run = 1; run <= runs; ++run) {
    RunWithProgress(run, runs, absl::StrCat("run ", run, ": ringside compare"), [&] {
      absl::StatusOr<std::vector<TrainResult>> ours = RunRingside(job, run, dir, timeout);
      if (ours.ok()) results.insert(results.end(), ours->begin(), ours->end());
      if (!ours.ok()) std::cerr << "\n  " << ours.status().message() << "\n";
      all_ok &= ours.ok();
      return Outcome{ours.status()};
    });
    if (!with_torch) continue;
    RunWithProgress(run, runs, absl::StrCat("run ", run, ": PyTorch DDP"), [&] {
      absl::StatusOr<TrainResult> theirs =
          RunTorch(job, run, dir, absl::GetFlag(FLAGS_torch_script), timeout);
      if (theirs.ok()) results.push_back(*theirs);
      if (!theirs.ok()) std::cerr << "\n  " << theirs.status().message() << "\n";
      all_ok &= theirs.ok();
      return Outcome{theirs.status()};
    });
  }
  return all_ok;
}

}  // namespace

int RunTrainCommand(const std::vector<std::string>& args) {
  if (!args.empty()) {
    std::cerr << "ringside-bench train: unexpected argument '" << args[0] << "'\n";
    return 1;
  }
  const absl::StatusOr<TrainJob> job = JobFromFlags();
  const int runs = absl::GetFlag(FLAGS_runs);
  const std::string torch = absl::GetFlag(FLAGS_torch);
  if (!job.ok() || runs < 1) {
    std::cerr << "ringside-bench train: "
              << (job.ok() ? std::string("need --runs >= 1") : std::string(job.status().message()))
              << "\n";
    return 1;
  }
  if (torch != "auto" && torch != "on" && torch != "off") {
    std::cerr << "ringside-bench train: --torch must be auto, on or off, not '" << torch << "'\n";
    return 1;
  }
  absl::StatusOr<launch::TempDir> dir = launch::TempDir::Create("ringside-bench-train-");
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
  std::vector<TrainResult> results;
  const bool all_ok = RunAll(*job, runs, with_torch, *dir, results);
  const TrainTitle title{
      job->model, job->data, job->workers,         job->ps_shards, job->batch_size,
      job->steps, job->lr,   job->target_accuracy, job->tls,       !job->fashion_dir.empty()};
  const nlohmann::json json = {
      {"benchmark", "train"},
      {"units",
       {{"samples_per_second", "global batch x steps / summed step seconds (worker-0 / rank 0)"},
        {"peak_rss_bytes", "the largest worker's peak resident memory (Ringside only; else 0)"},
        {"seconds_to_target",
         "from the first step to the end of the first step evaluated at or above the target"}}},
      {"records", TrainRecords(title, results)}};
  return FinishSweep("train", TrainTable(title, results, runs), all_ok, absl::GetFlag(FLAGS_json),
                     json);
}

}  // namespace ringside::bench
