#!/usr/bin/env bash
# Every value a command takes is checked before anything starts: each bad value below must make
# its command exit 1 with one line naming the flag, and start nothing (no cluster directory, no
# output file). Then `--data=iris` alone runs only the Iris job. Usage: bad_values_test.sh BIN_DIR
set -uo pipefail
bin=$1
source "$(dirname "$0")/refusals.sh"
work=$(mktemp -d /tmp/ringside-bad-values-XXXXXX)
trap 'rm -rf "$work"' EXIT
# Where compare and up would make their clusters' directories: none may appear.
export TMPDIR=$work/tmp
mkdir -p "$TMPDIR"
missing_dir=$work/no-such-dir

for command in compare lab; do
  rs=("$bin/ringside" "$command" --insecure)
  [ "$command" = lab ] && rs+=(--link_rate=100mbit)
  expect_refused --steps "${rs[@]}" --steps=-5
  expect_refused --steps "${rs[@]}" --steps=0
  expect_refused --batch_size "${rs[@]}" --batch_size=0
  expect_refused --batch_size "${rs[@]}" --batch_size=-3
  expect_refused --lr "${rs[@]}" --lr=-1
  expect_refused --lr "${rs[@]}" --lr=nan
  expect_refused --eval_every "${rs[@]}" --eval_every=0
  expect_refused --staleness "${rs[@]}" --staleness=-1
  expect_refused --wire_dtype "${rs[@]}" --wire_dtype=fp8
  expect_refused --compression "${rs[@]}" --compression=topk:2
  expect_refused --compression_warmup "${rs[@]}" --compression_warmup=-1
  expect_refused --optimizer "${rs[@]}" --optimizer=lbfgs
  expect_refused --model "${rs[@]}" --model=4,,3
  expect_refused --workers "${rs[@]}" --workers=0
  expect_refused --ps_shards "${rs[@]}" --ps_shards=0
  expect_refused --heartbeat_timeout "${rs[@]}" --heartbeat_timeout=0s
  expect_refused --checkpoint_every "${rs[@]}" --checkpoint_every=-1
  expect_refused --target_accuracy "${rs[@]}" --target_accuracy=2
  expect_refused --timeline_capacity "${rs[@]}" --timeline_capacity=1
  expect_refused --ps_window_bytes "${rs[@]}" --ps_window_bytes=1
  expect_refused --ps_variants "${rs[@]}" --ps_variants=fastest
  expect_refused --json "${rs[@]}" --json="$missing_dir/out.json"
  expect_refused --json "${rs[@]}" --json="$work"
  expect_refused --report "${rs[@]}" --report="$missing_dir/report.html"
  expect_refused --timeline "${rs[@]}" --timeline="$missing_dir/trace.json"
  expect_refused --data "${rs[@]}" --data=bogus
  expect_refused --model "${rs[@]}" --data=synthetic:100
done
expect_refused --link_rate "$bin/ringside" lab --insecure --link_rate=fast
expect_refused --slow_link "$bin/ringside" lab --insecure --link_rate=1gbit --slow_link=worker-0

up=("$bin/ringside" up --insecure)
expect_refused --steps "${up[@]}" --steps=-1
expect_refused --batch_size "${up[@]}" --batch_size=0
expect_refused --mode "${up[@]}" --mode=mesh
expect_refused --ready_file "${up[@]}" --ready_file="$missing_dir/ready.json"
expect_refused --workers "${up[@]}" --workers=1,2
expect_refused --heartbeat_timeout "${up[@]}" --heartbeat_timeout=-1s

expect_refused --steps "$bin/ringside-controller" --insecure --steps=0 --workers=1 --ps_shards=0
expect_refused --controller "$bin/ringside-ps" --insecure
# A kind that does not fit the controller's mode, and one with staleness: refused at start.
expect_refused --compression "$bin/ringside-controller" --insecure --workers=1 --ps_shards=0 \
  --mode=ring --compression=sign
expect_refused --compression "$bin/ringside-controller" --insecure --workers=1 --ps_shards=1 \
  --mode=ps --compression=topk:0.01 --staleness=2

# Nothing above started a cluster: no directory of one, no output written.
leftovers=$(ls -A "$TMPDIR")
[ -z "$leftovers" ] || fail "a refused command left: $leftovers"

# --data=iris alone: the Iris job only (not the heavy Fashion-MNIST one first).
out=$(timeout 300 "$bin/ringside" compare --insecure --data=iris --steps=3 --workers=2 \
  --ps_shards=1 --json="$work/iris.json" 2>&1) || fail "compare --data=iris failed: $out"
jobs=$(/usr/bin/python3 -c '
import json, sys
doc = json.load(open(sys.argv[1]))
print(" ".join(j["config"]["model"] + "@" + j["config"]["data"] for j in doc["jobs"]))
' "$work/iris.json" 2>&1)
[ "$jobs" = "4,16,3@iris" ] || fail "compare --data=iris ran: $jobs"
echo "compare --data=iris ran: $jobs"

echo "bad values: $failures failures"
[ "$failures" -eq 0 ]
