#!/usr/bin/env bash
# `ringside plan` refuses every bad value and every cluster that cannot exist in one line naming
# it, and a probe file from another model or version, before it prints a plan. Then one plan from
# a probe file runs and writes its JSON, --one_host shares this host's cores, and --chart and
# --calibrate read their files. Usage: plan_bad_input_test.sh BIN_DIR
set -uo pipefail
bin=$1
source "$(dirname "$0")/refusals.sh"
work=$(mktemp -d /tmp/ringside-plan-XXXXXX)
trap 'rm -rf "$work"' EXIT

# A probe file of the small model, written by the probe itself.
probe=$work/probe.json
if ! out=$(timeout 120 "$bin/ringside" plan --insecure --probe_out="$probe" --workers=2 \
    --ps_shards=1 2>&1); then
  fail "the probe did not run: $out"
fi
[ -s "$probe" ] || fail "no probe file written"

plan=("$bin/ringside" plan --probe="$probe")
expect_refused "--workers" "${plan[@]}" --workers=0
expect_refused "--ps_shards" "${plan[@]}" --ps_shards=0
expect_refused "more than the model's K = 131 parameters" "${plan[@]}" --workers=2 --ps_shards=132
expect_refused "--link_rate" "${plan[@]}" --link_rate=0mbit
expect_refused "--link_latency" "${plan[@]}" --link_latency=-1ms
expect_refused "--straggler" "${plan[@]}" --straggler=worker-x:3
expect_refused "straggler: worker-5 names no worker of 4" "${plan[@]}" --workers=4 \
  --straggler=worker-5:3
expect_refused "--steps_to_target" "${plan[@]}" --steps_to_target=-1
expect_refused "--ps_window_bytes=8" "${plan[@]}" --ps_window_bytes=8
expect_refused "--probe reads a probe file" "${plan[@]}" --probe_out="$work/other.json"
expect_refused "--probe_members" "$bin/ringside" plan --probe_members=0
echo secret >"$work/token"
targets=("$bin/ringside" plan --probe_token_file="$work/token" --insecure)
expect_refused "port 0, which cannot be dialled" "${targets[@]}" --probe_targets=127.0.0.1:0
expect_refused "--probe_targets" "${targets[@]}" --probe_targets=no-port
expect_refused "give neither --probe nor --probe_members" "${targets[@]}" \
  --probe_targets=127.0.0.1:9 --probe="$probe"
expect_refused "--probe_token_file: give the file" "$bin/ringside" plan --insecure \
  --probe_targets=127.0.0.1:9
expect_refused "no transport security given" "$bin/ringside" plan --probe_targets=127.0.0.1:9 \
  --probe_token_file="$work/token"
expect_refused "are for --probe_targets" "$bin/ringside" plan --probe_token_file="$work/token"
expect_refused "--slow_link is for" "${plan[@]}" --slow_link=worker-1:1mbit
expect_refused "probe file: " "$bin/ringside" plan --probe="$work/absent.json"
expect_refused "measured --model=4,16,3" "${plan[@]}" --model=4,32,3
sed 's/"version": 1/"version": 7/' "$probe" >"$work/v7.json"
expect_refused "format version 7" "$bin/ringside" plan --probe="$work/v7.json"
sed 's/"link_bytes_per_second": [0-9.e+]*/"link_bytes_per_second": 0/' "$probe" >"$work/r0.json"
expect_refused "link rate 0" "$bin/ringside" plan --probe="$work/r0.json"

expect_refused "--measured lays measured steps on --chart" "${plan[@]}" --measured="$probe"
expect_refused "not a ringside compare --json file" "${plan[@]}" --measured="$probe" \
  --chart="$work/chart.svg"

# The workers' side of `ringside up --probe`.
expect_refused "--predicted_step_seconds" "$bin/ringside-worker" --insecure --predicted_step_seconds=ring=-1
expect_refused "--predicted_step_seconds" "$bin/ringside-worker" --insecure --predicted_step_seconds=gpu=1
expect_refused "format version 7" "$bin/ringside" up --insecure --probe="$work/v7.json"

# A plan from the probe file, with its JSON.
if out=$("${plan[@]}" --workers=2,4 --ps_shards=1,2 --link_rate=1gbit --json="$work/plan.json" 2>&1); then
  grep -q '^first: ' <<<"$out" || fail "no ranking in the plan: $out"
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert len(d['cells'])==4, d" \
    "$work/plan.json" || fail "plan JSON has not 4 cells"
else
  fail "plan from a probe file failed: $out"
fi

# --one_host: every process on this host's cores, as compare and lab run them; the source says
# so, and 8 workers' compute is at least the whole batch's on this host's cores, over one
# worker's share of it on a host of its own.
if out=$("${plan[@]}" --workers=8 --ps_shards=1 --batch_size=64 --one_host \
    --json="$work/one-host.json" 2>&1) &&
  "${plan[@]}" --workers=8 --ps_shards=1 --batch_size=64 --json="$work/own-hosts.json" \
    >/dev/null 2>&1; then
  python3 - "$work/one-host.json" "$work/own-hosts.json" "$probe" <<'PY' ||
import json, sys
shared, own, probe = (json.load(open(p)) for p in sys.argv[1:])
assert "(--one_host)" in shared["costs"]["source"], shared["costs"]["source"]
assert "--one_host" not in own["costs"]["source"], own["costs"]["source"]
ring = lambda plan: next(m for m in plan["cells"][0]["ranking"] if m["mode"] == "ring")
c = probe["compute_seconds_per_sample"]
assert abs(ring(own)["compute_seconds"] - 8 * c) <= 1e-9 * c, (ring(own), c)
assert ring(shared)["compute_seconds"] > ring(own)["compute_seconds"], (ring(shared), ring(own))
PY
    fail "plan --one_host does not share this host's cores: $out"
else
  fail "plan --one_host failed: $out"
fi

# --chart with --measured: a compare JSON's runs of this model become points on the curves.
cat >"$work/compare.json" <<'JSON'
{"jobs": [{"config": {"model": "4,16,3"},
           "modes": {"ring": {"step_seconds": {"p50": 0.01}, "final_world": 2},
                     "ps": {"step_seconds": {"p50": 0.02}, "final_world": 2}}},
          {"config": {"model": "784,1024,1024,10"},
           "modes": {"ring": {"step_seconds": {"p50": 0.3}, "final_world": 2}}}]}
JSON
if out=$("${plan[@]}" --workers=2 --ps_shards=1 --chart="$work/chart.svg" \
    --measured="$work/compare.json" 2>&1); then
  grep -q "with 2 measured steps" <<<"$out" || fail "the chart does not say it took 2 steps: $out"
  [ "$(grep -o 'class="mark measured ring"' "$work/chart.svg" | wc -l)" -eq 1 ] &&
    [ "$(grep -o 'class="mark measured ps"' "$work/chart.svg" | wc -l)" -eq 1 ] ||
    fail "the chart lacks the measured ring and ps points"
else
  fail "plan --chart --measured failed: $out"
fi

# --calibrate: compare JSON of this model with a step and a sync median per run, else refused.
expect_refused "--calibrate=$probe: not a ringside compare --json file" "${plan[@]}" \
  --calibrate="$probe"
expect_refused "--calibrate=$work/compare.json: no run of --model=784,128,10" "${plan[@]}" \
  --model=784,128,10 --calibrate="$work/compare.json"
cat >"$work/no-sync.json" <<'JSON'
{"jobs": [{"config": {"model": "4,16,3", "batch_size": 64},
           "modes": {"ring": {"step_seconds": {"p50": 0.01}, "final_world": 2}}}]}
JSON
expect_refused "no run with a measured step and sync" "${plan[@]}" --calibrate="$work/no-sync.json"
cat >"$work/runs.json" <<'JSON'
{"jobs": [{"config": {"model": "4,16,3", "batch_size": 64, "ps_shards": 1},
           "modes": {"ring": {"step_seconds": {"p50": 0.02}, "sync_seconds": {"p50": 0.012},
                              "final_world": 2},
                     "ps": {"step_seconds": {"p50": 0.03}, "sync_seconds": {"p50": 0.02},
                            "final_world": 2}}}]}
JSON
if out=$("${plan[@]}" --workers=8 --ps_shards=1 --calibrate="$work/runs.json" \
    --json="$work/calibrated.json" 2>&1); then
  grep -q "calibrated by the runs of $work/runs.json: ring compute" <<<"$out" ||
    fail "the plan does not say it is calibrated: $out"
  python3 -c "import json,sys; c=json.load(open(sys.argv[1]))['calibration']; \
assert c['ring']['runs']==1 and c['ps']['runs']==1 and c['ps-colocated']['runs']==0, c" \
    "$work/calibrated.json" || fail "the plan JSON lacks its calibration"
else
  fail "plan --calibrate failed: $out"
fi

[ "$failures" -eq 0 ] && echo "all refused" || exit 1
