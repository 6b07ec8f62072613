#!/usr/bin/env bash
# How long a drained worker stalls the others (docs/benchmarks.md, "Drain time"; issue 48).
# usage: bench/drain_time.sh BIN_DIR [RUNS] [TAG]
# For each sync mode and PS variant (ring; ps; ps --staleness=1; ps --staleness=async;
# ps --backup_workers=1) and each signal (TERM: the worker leaves; KILL: the heartbeat timeout
# drops it), RUNS times: starts `ringside up` with 4 workers, 2 shards in ps mode and
# --heartbeat_timeout=10s (as deploy/k8s/base/controller.yaml), sends worker-3 the signal once
# the job passed step 60, and prints the time from the end of worker-3's last step to the start
# of the survivors' first step of the new generation (the step traces' unix_seconds minus the
# step's seconds), and the generations the job went through (one regroup: 2). Stops each
# cluster on exit, also on failure. Run it on a quiet machine. DRAIN_SIGNALS="TERM" runs the
# SIGTERM runs alone (a before/after comparison of the leave).
set -euo pipefail
bin=${1:?usage: bench/drain_time.sh BIN_DIR [RUNS] [TAG]}
runs=${2:-3}
tag=${3:-run}
up=
stop_cluster() {
  if [ -n "$up" ]; then
    kill -INT "$up" 2>/dev/null || true
    wait "$up" 2>/dev/null || true
    up=
  fi
}
trap stop_cluster EXIT

# The gap, from DIR's traces: worker-3's last step's end to the survivors' first step of a
# newer generation (its start), and the newest generation a survivor trained in.
gap() {
  python3 - "$1" <<'EOF'
import glob, json, sys
d = sys.argv[1]
def lines(name):
    out = []
    for text in open(f"{d}/{name}.trace.jsonl"):
        try:
            out.append(json.loads(text))
        except ValueError:
            pass  # a line cut short
    return out
leaver = lines("worker-3")
last = leaver[-1]
starts, newest = [], 0
for w in ("worker-0", "worker-1", "worker-2"):
    after = [l for l in lines(w) if l["generation"] > last["generation"]]
    newest = max([newest] + [l["generation"] for l in after])
    if after:
        starts.append(after[0]["unix_seconds"] - after[0]["seconds"])
if not starts:
    print("no survivor stepped in a new generation")
    sys.exit(1)
print(f"{min(starts) - last['unix_seconds']:.3f} s (leaver's last step {last['step']}, "
      f"generations up to {newest})")
EOF
}

one_run() {  # one_run SIGNAL NAME FLAGS...
  local signal=$1 name=$2 log dir pid steps_url
  shift 2
  log=$(mktemp /tmp/drain_time.XXXXXX.log)
  setsid "$bin/ringside" up --model=784,1024,1024,10 --data=fashion-mnist --steps=300 \
    --workers=4 --heartbeat_timeout=10s "$@" > "$log" 2>&1 &
  up=$!
  until grep -q 'worker-3 (pid [0-9]*)' "$log"; do
    kill -0 "$up" 2>/dev/null || { echo "ringside up ended; its output:"; tail -20 "$log"; exit 1; }
    sleep 0.5
  done
  dir=$(grep -o 'logs in [^,]*' "$log" | head -1 | cut -d' ' -f3)
  pid=$(grep -o 'worker-3 (pid [0-9]*)' "$log" | grep -o '[0-9]*)' | tr -d ')')
  steps_url=$(grep -o 'worker-0 (pid [0-9]*)  http[^ ]*' "$log" | awk '{print $4}')
  until [ "$(curl -s "$steps_url" | awk '/^ringside_steps_total/ {s += $2} END {print int(s)}')" \
    -ge 60 ] 2>/dev/null; do sleep 0.2; done
  kill "-$signal" "$pid"
  # The survivors' first step of a new generation is in their traces once they wrote it.
  until gap "$dir" > /dev/null 2>&1; do sleep 0.2; done
  echo "$tag $name SIG$signal: $(gap "$dir")"
  stop_cluster
  rm -f "$log"
  case $dir in /tmp/*) rm -rf "$dir" ;; esac  # kept by `ringside up` after a lost worker
}

for run in $(seq "$runs"); do
  for signal in ${DRAIN_SIGNALS:-TERM KILL}; do
    one_run "$signal" "ring#$run" --mode=ring
    one_run "$signal" "ps#$run" --mode=ps --ps_shards=2
    one_run "$signal" "ps-staleness-1#$run" --mode=ps --ps_shards=2 --staleness=1
    one_run "$signal" "ps-async#$run" --mode=ps --ps_shards=2 --staleness=async
    one_run "$signal" "ps-backup-1#$run" --mode=ps --ps_shards=2 --backup_workers=1
  done
done
