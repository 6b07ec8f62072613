#!/usr/bin/env bash
# How long a live mode switch takes (docs/benchmarks.md, "A level regroup hands nothing over").
# usage: bench/switch_time.sh BIN_DIR [TAG]
# Starts the heavy job with `ringside up` in ring mode, switches it to ps at step 60 and back to
# ring 40 steps later, and prints for each switch how long `ringside ctl mode` took and then how
# long until every worker exports the new generation (ringside_generation, polled). Stops the
# cluster on exit, also on failure. Run it on a quiet machine.
set -euo pipefail
bin=${1:?usage: bench/switch_time.sh BIN_DIR [TAG]}
tag=${2:-run}
log=$(mktemp /tmp/switch_time.XXXXXX.log)
load=$(cut -d' ' -f1-3 /proc/loadavg)
setsid "$bin/ringside" up --model=784,1024,1024,10 --data=fashion-mnist --steps=400 --mode=ring \
  > "$log" 2>&1 &
up=$!
trap 'kill -INT $up 2>/dev/null; sleep 3; kill -- -$up 2>/dev/null || true' EXIT
until grep -q 'switch modes with:' "$log"; do
  kill -0 $up 2>/dev/null || { echo "ringside up ended; its output:"; tail -20 "$log"; exit 1; }
  sleep 0.5
done
ctl_ps=$(sed -n 's/^switch modes with: //p' "$log")
ctl_ring=${ctl_ps/mode ps/mode ring}
urls=$(grep -o 'worker-[0-9]* (pid [0-9]*)  http[^ ]*' "$log" | awk '{print $4}')
first_url=$(echo "$urls" | head -1)
steps() { curl -s "$first_url" | awk '/^ringside_steps_total/ {s += $2} END {print int(s)}'; }
lowest_generation() {
  for url in $urls; do curl -s "$url" | awk '/^ringside_generation / {print int($2)}'; done |
    sort -n | head -1
}
wait_steps() { until [ "$(steps)" -ge "$1" ] 2>/dev/null; do sleep 0.2; done; }
switch() {  # switch WANTED_GENERATION COMMAND...
  local wanted=$1 start asked reached
  shift
  start=$(date +%s.%N)
  "$@" > /dev/null
  asked=$(date +%s.%N)
  until [ "$(lowest_generation)" -ge "$wanted" ] 2>/dev/null; do sleep 0.005; done
  reached=$(date +%s.%N)
  echo "$tag load[$load] to generation $wanted: ctl $(echo "$asked - $start" | bc) s," \
    "then every worker $(echo "$reached - $asked" | bc) s"
}
wait_steps 60
generation=$(lowest_generation)
# shellcheck disable=SC2086  # the printed command line is split into its words on purpose
switch $((generation + 1)) $ctl_ps
wait_steps 100
# shellcheck disable=SC2086
switch $((generation + 2)) $ctl_ring
# A switch that superseded a step some members had completed replays it on the others.
dir=$(grep -o 'logs in [^,]*' "$log" | head -1 | cut -d' ' -f3)
replays=$(cat "$dir"/worker-*.log 2>/dev/null | grep -c 'replayed step' || true)
echo "$tag: $replays member(s) replayed a step at a switch"
rm -f "$log"
