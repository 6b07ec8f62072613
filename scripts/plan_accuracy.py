#!/usr/bin/python3
"""The step model's accuracy in the lab (docs/benchmarks.md, "The step model against the lab").

For each model, a probe of this host (`ringside plan --probe_out`); then for every cell of
N x link rate x model, `ringside lab --probe=...` runs ring and ps (S = 1 with --colocate, then
S = 2) and writes each run's measured and predicted step and sync (modes.<mode>.predicted). Prints
one line per run, then the goals: the median |predicted - measured| / measured of sync and of
step, the share of cells whose top-ranked mode is within 5% of the measured best, and, for
N = 8, the error of the prediction from the probe alone and from `ringside plan --calibrate` on
that rate's N = 2 and 4 runs, and the same goals per model and rate (the rows of
docs/benchmarks.md's table). Needs root (the lab) and a quiet machine: do not run it on a shared
one. The whole sweep takes hours (the heavy model at 10mbit is a minute or more a ps step), so it
can be run in parts: --models=heavy,small, --rates=10mbit,100mbit,1gbit and --workers=2,3 choose
the cells (N = 8's calibrated figure needs N = 2, 4 and 8), and
--resume keeps every cell (and probe) whose JSON is already in OUT_DIR instead of running it
again, so later sittings add to an earlier one and the summary covers every cell there.
--repredict (with --resume) leaves the measurements as they are and predicts every kept cell
again with `ringside plan --one_host` (the same probe, rate, shape, the lab's push window and
its one host's cores), so a change to the model is judged against the same runs in seconds.
Usage: scripts/plan_accuracy.py BIN_DIR OUT_DIR [--quick] [--models=...] [--rates=...]
       [--workers=...] [--resume] [--repredict]
"""
import json
import os
import statistics
import subprocess
import sys

MODELS = {"heavy": "784,1024,1024,10", "small": "784,128,10"}
WORKERS = [2, 3, 4, 6, 8]
RATES = ["10mbit", "100mbit", "1gbit"]
STEPS = {"10mbit": 6, "100mbit": 12, "1gbit": 30}


RESUME = "--resume" in sys.argv
REPREDICT = "--repredict" in sys.argv


def run(command, output=None):
    """Runs `command` unless --resume and `output` (the file it writes) is already there."""
    if RESUME and output is not None and os.path.exists(output):
        print("= kept", output, flush=True)
        return
    print("+", " ".join(command), flush=True)
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)


def chosen(flag, known):
    """The values of --flag=a,b (each one of `known`), or all of `known`."""
    for arg in sys.argv:
        if arg.startswith(f"--{flag}="):
            values = arg.split("=", 1)[1].split(",")
            unknown = [v for v in values if v not in known]
            if unknown:
                sys.exit(f"--{flag}: {', '.join(unknown)} not one of {', '.join(known)}")
            return values
    return list(known)


def lab_runs(bin_dir, out_dir, model, probe, n, rate):
    """Every run of one cell: (mode name, measured and predicted figures)."""
    runs = []
    for shards, extra in ((1, ["--colocate"]), (2, [])):
        path = os.path.join(out_dir, f"lab-{model}-n{n}-{rate}-s{shards}.json")
        run([f"{bin_dir}/ringside", "lab", f"--link_rate={rate}", f"--model={MODELS[model]}",
             "--data=synthetic:2048", "--batch_size=64", f"--steps={STEPS[rate]}",
             f"--workers={n}", f"--ps_shards={shards}", f"--probe={probe}", f"--json={path}"]
            + extra, output=path)
        cell = json.load(open(path))
        modes = cell["modes"]
        if REPREDICT:
            window = cell["config"]["ps_window_bytes"]
            repredict(bin_dir, out_dir, model, probe, n, rate, shards, window, modes)
        names = {"ps": f"ps-s{shards}", "ps_colocated": "ps-colocated"}
        if shards == 2:
            modes.pop("ring", None)  # measured once, with S = 1
        for key, mode in modes.items():
            if key in ("ring", "ps", "ps_colocated") and "predicted" in mode:
                runs.append((names.get(key, key), mode))
    return runs


def repredict(bin_dir, out_dir, model, probe, n, rate, shards, window, modes):
    """Replaces each measured mode's `predicted` with what `ringside plan` predicts now for the
    run's cell and push window."""
    path = os.path.join(out_dir, f"repredict-{model}-n{n}-{rate}-s{shards}.json")
    run([f"{bin_dir}/ringside", "plan", f"--probe={probe}", f"--link_rate={rate}",
         f"--model={MODELS[model]}", "--batch_size=64", f"--workers={n}",
         f"--ps_shards={shards}", f"--ps_window_bytes={window}", "--one_host",
         f"--json={path}"])
    ranking = json.load(open(path))["cells"][0]["ranking"]
    by_mode = {p["mode"]: p for p in ranking}
    for key, plan_mode in (("ring", "ring"), ("ps", "ps"), ("ps_colocated", "ps-colocated")):
        if key in modes and "predicted" in modes[key]:
            modes[key]["predicted"] = {"step_seconds": by_mode[plan_mode]["step_seconds"],
                                       "sync_seconds": by_mode[plan_mode]["sync_seconds"]}


def calibrated_n8(bin_dir, out_dir, model, probe, rate):
    """N = 8 as `plan --calibrate` predicts it from the N = 2 and 4 runs: {run name: step}, or
    None when OUT_DIR lacks one of those runs (a sitting that ran N = 8 alone)."""
    files = [os.path.join(out_dir, f"lab-{model}-n{n}-{rate}-s{s}.json")
             for n in (2, 4) for s in (1, 2)]
    missing = [f for f in files if not os.path.exists(f)]
    if missing:
        print(f"{model} N=8 {rate}: not calibrated, no {', '.join(missing)}")
        return None
    path = os.path.join(out_dir, f"plan-{model}-n8-{rate}.json")
    window = json.load(open(files[0]))["config"]["ps_window_bytes"]  # the lab's, as its runs'
    run([f"{bin_dir}/ringside", "plan", f"--probe={probe}", f"--link_rate={rate}",
         f"--model={MODELS[model]}", "--batch_size=64", "--workers=8", "--ps_shards=1,2",
         f"--ps_window_bytes={window}", "--one_host",
         "--calibrate=" + ",".join(files), f"--json={path}"],
        output=None if REPREDICT else path)
    steps = {}
    for cell in json.load(open(path))["cells"]:
        by_mode = {p["mode"]: p["step_seconds"] for p in cell["ranking"]}
        steps[f"ps-s{cell['shards']}"] = by_mode["ps"]
        if cell["shards"] == 1:
            steps["ring"] = by_mode["ring"]
            steps["ps-colocated"] = by_mode["ps-colocated"]
    return steps


def relative_error(predicted, measured):
    return abs(predicted - measured) / measured


def summary(label, sync_errors, step_errors, ranked, n8_calibrated):
    """One line of the goals over a group of runs (every cell, or one model and rate)."""
    if not step_errors:
        return
    line = (f"{label}: median sync error {statistics.median(sync_errors):.1%} (goal <= 10%), "
            f"median step error {statistics.median(step_errors):.1%} (goal <= 15%), "
            f"top-ranked within 5% of the best in {sum(ranked)}/{len(ranked)} cells "
            f"(goal >= 90%)")
    if n8_calibrated:
        line += (f", N = 8 from N = 2 and 4 median step error "
                 f"{statistics.median(n8_calibrated):.1%} (goal <= 15%)")
    print(line)


def main():
    bin_dir, out_dir = sys.argv[1], sys.argv[2]
    workers = [2, 4, 8] if "--quick" in sys.argv else WORKERS
    workers = [int(n) for n in chosen("workers", [str(n) for n in workers])]
    models = chosen("models", MODELS)
    rates = chosen("rates", RATES)
    os.makedirs(out_dir, exist_ok=True)
    everything = ([], [], [], [])  # sync errors, step errors, ranked, N = 8 calibrated
    n8_errors = []
    for model in models:
        layers = MODELS[model]
        probe = os.path.join(out_dir, f"probe-{model}.json")
        run([f"{bin_dir}/ringside", "plan", f"--model={layers}", f"--probe_out={probe}"],
            output=probe)
        for rate in rates:
            group = ([], [], [], [])
            n8_runs = []
            for n in workers:
                runs = lab_runs(bin_dir, out_dir, model, probe, n, rate)
                if n == 8:
                    n8_runs = runs
                for name, mode in runs:
                    p = mode["predicted"]
                    step_error = relative_error(p["step_seconds"], mode["step_seconds"]["p50"])
                    sync_error = relative_error(p["sync_seconds"], mode["sync_seconds"]["p50"])
                    group[0].append(sync_error)
                    group[1].append(step_error)
                    if n == 8:
                        n8_errors.append(step_error)
                    print(f"{model} N={n} {rate} {name}: step {mode['step_seconds']['p50']:.4f}"
                          f" s predicted {p['step_seconds']:.4f} s ({step_error:.1%}); sync"
                          f" {mode['sync_seconds']['p50']:.4f} s predicted"
                          f" {p['sync_seconds']:.4f} s ({sync_error:.1%})")
                if runs:
                    best = min(m["step_seconds"]["p50"] for _, m in runs)
                    top = min(runs, key=lambda r: r[1]["predicted"]["step_seconds"])
                    group[2].append(top[1]["step_seconds"]["p50"] <= 1.05 * best)
            predicted = calibrated_n8(bin_dir, out_dir, model, probe, rate) if n8_runs else None
            if predicted:
                for name, mode in n8_runs:
                    measured = mode["step_seconds"]["p50"]
                    error = relative_error(predicted[name], measured)
                    group[3].append(error)
                    print(f"{model} N=8 {rate} {name} from N = 2, 4: step {measured:.4f} s "
                          f"predicted {predicted[name]:.4f} s ({error:.1%})")
            summary(f"{model} {rate}", *group)
            for whole, part in zip(everything, group):
                whole.extend(part)
    summary("every cell", *everything)
    if n8_errors:
        print(f"N = 8 median step error {statistics.median(n8_errors):.1%} from the probe")


if __name__ == "__main__":
    main()
