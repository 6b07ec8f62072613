#!/usr/bin/python3
"""The step model's accuracy in the lab (docs/benchmarks.md, "The step model against the lab").

For each model, a probe of this host (`ringside plan --probe_out`); then for every cell of
N x link rate x model, `ringside lab --probe=...` runs ring and ps (S = 1 with --colocate, then
S = 2) and writes each run's measured and predicted step and sync (modes.<mode>.predicted). Prints
one line per run, then the goals: the median |predicted - measured| / measured of sync and of
step, the share of cells whose top-ranked mode is within 5% of the measured best, and, for
N = 8, the error of the prediction from the probe alone and from `ringside plan --calibrate` on
that rate's N = 2 and 4 runs. Needs root (the lab) and a quiet machine: do not run it on a
shared one. Usage: scripts/plan_accuracy.py BIN_DIR OUT_DIR [--quick]
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


def run(command):
    print("+", " ".join(command), flush=True)
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)


def lab_runs(bin_dir, out_dir, model, probe, n, rate):
    """Every run of one cell: (mode name, measured and predicted figures)."""
    runs = []
    for shards, extra in ((1, ["--colocate"]), (2, [])):
        path = os.path.join(out_dir, f"lab-{model}-n{n}-{rate}-s{shards}.json")
        run([f"{bin_dir}/ringside", "lab", f"--link_rate={rate}", f"--model={MODELS[model]}",
             "--data=synthetic:2048", "--batch_size=64", f"--steps={STEPS[rate]}",
             f"--workers={n}", f"--ps_shards={shards}", f"--probe={probe}", f"--json={path}"]
            + extra)
        modes = json.load(open(path))["modes"]
        names = {"ps": f"ps-s{shards}", "ps_colocated": "ps-colocated"}
        if shards == 2:
            modes.pop("ring", None)  # measured once, with S = 1
        for key, mode in modes.items():
            if key in ("ring", "ps", "ps_colocated") and "predicted" in mode:
                runs.append((names.get(key, key), mode))
    return runs


def calibrated_n8(bin_dir, out_dir, model, probe, rate):
    """N = 8 as `plan --calibrate` predicts it from the N = 2 and 4 runs: {run name: step}."""
    files = [os.path.join(out_dir, f"lab-{model}-n{n}-{rate}-s{s}.json")
             for n in (2, 4) for s in (1, 2)]
    path = os.path.join(out_dir, f"plan-{model}-n8-{rate}.json")
    run([f"{bin_dir}/ringside", "plan", f"--probe={probe}", f"--link_rate={rate}",
         f"--model={MODELS[model]}", "--batch_size=64", "--workers=8", "--ps_shards=1,2",
         "--calibrate=" + ",".join(files), f"--json={path}"])
    steps = {}
    for cell in json.load(open(path))["cells"]:
        by_mode = {p["mode"]: p["step_seconds"] for p in cell["ranking"]}
        steps[f"ps-s{cell['shards']}"] = by_mode["ps"]
        if cell["shards"] == 1:
            steps["ring"] = by_mode["ring"]
            steps["ps-colocated"] = by_mode["ps-colocated"]
    return steps


def main():
    bin_dir, out_dir = sys.argv[1], sys.argv[2]
    workers = [2, 4, 8] if "--quick" in sys.argv else WORKERS
    os.makedirs(out_dir, exist_ok=True)
    sync_errors, step_errors, ranked, n8_errors, n8_calibrated = [], [], [], [], []
    for model, layers in MODELS.items():
        probe = os.path.join(out_dir, f"probe-{model}.json")
        run([f"{bin_dir}/ringside", "plan", f"--model={layers}", f"--probe_out={probe}"])
        for rate in RATES:
            n8_runs = []
            for n in workers:
                runs = lab_runs(bin_dir, out_dir, model, probe, n, rate)
                if n == 8:
                    n8_runs = runs
                for name, mode in runs:
                    p = mode["predicted"]
                    step_error = abs(p["step_seconds"] - mode["step_seconds"]["p50"]) / \
                        mode["step_seconds"]["p50"]
                    sync_error = abs(p["sync_seconds"] - mode["sync_seconds"]["p50"]) / \
                        mode["sync_seconds"]["p50"]
                    step_errors.append(step_error)
                    sync_errors.append(sync_error)
                    if n == 8:
                        n8_errors.append(step_error)
                    print(f"{model} N={n} {rate} {name}: step {mode['step_seconds']['p50']:.4f}"
                          f" s predicted {p['step_seconds']:.4f} s ({step_error:.1%}); sync"
                          f" {mode['sync_seconds']['p50']:.4f} s predicted"
                          f" {p['sync_seconds']:.4f} s ({sync_error:.1%})")
                if runs:
                    best = min(m["step_seconds"]["p50"] for _, m in runs)
                    top = min(runs, key=lambda r: r[1]["predicted"]["step_seconds"])
                    ranked.append(top[1]["step_seconds"]["p50"] <= 1.05 * best)
            if n8_runs:
                predicted = calibrated_n8(bin_dir, out_dir, model, probe, rate)
                for name, mode in n8_runs:
                    measured = mode["step_seconds"]["p50"]
                    error = abs(predicted[name] - measured) / measured
                    n8_calibrated.append(error)
                    print(f"{model} N=8 {rate} {name} from N = 2, 4: step {measured:.4f} s "
                          f"predicted {predicted[name]:.4f} s ({error:.1%})")
    print(f"median sync error {statistics.median(sync_errors):.1%} (goal <= 10%)")
    print(f"median step error {statistics.median(step_errors):.1%} (goal <= 15%)")
    print(f"top-ranked within 5% of the best in {sum(ranked)}/{len(ranked)} cells (goal >= 90%)")
    if n8_errors:
        print(f"N = 8 median step error {statistics.median(n8_errors):.1%} from the probe")
    if n8_calibrated:
        print(f"N = 8 median step error {statistics.median(n8_calibrated):.1%} from the N = 2 "
              f"and 4 runs (goal <= 15%)")


if __name__ == "__main__":
    main()
