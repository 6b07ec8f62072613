#!/usr/bin/env bash
# `make demo` until `ringside compare` exists: a static ring of 4 ringside-worker processes on
# loopback trains the Iris MLP, shows every link's bytes as Prometheus serves them next to the
# cost model; the same job then runs through 2 parameter-server shards; finally the ring is timed
# against Gloo. Stops every process it started (by PID), also on Ctrl-C.
set -euo pipefail
bin=${1:-build/bin}
workers=4
dir=$(mktemp -d -t ringside-demo-XXXXXX)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Free loopback ports: random candidates not listening now (ss from iproute2).
pick_port() {
  while true; do
    local port=$((20000 + RANDOM % 40000))
    if ! ss -Htln "sport = :$port" | grep -q .; then echo "$port"; return; fi
  done
}
peers=""
for ((r = 0; r < workers; r++)); do peers+="${peers:+,}127.0.0.1:$(pick_port)"; done

echo "== Ring of $workers workers on loopback ($peers) trains Iris (4,16,3, Adam, 200 steps)"
for ((r = 0; r < workers; r++)); do
  "$bin/ringside-worker" --rank=$r --peers="$peers" --job=train --device=cpu --linger \
    --result_file="$dir/result-$r.json" >"$dir/worker-$r.log" 2>&1 &
  pids+=($!)
done
for ((r = 0; r < workers; r++)); do
  for _ in $(seq 600); do [ -s "$dir/result-$r.json" ] && break; sleep 0.1; done
  if [ ! -s "$dir/result-$r.json" ]; then
    echo "worker $r produced no result; its log:" >&2; tail -20 "$dir/worker-$r.log" >&2; exit 1
  fi
done
grep -h "step 200\|trained" "$dir/worker-0.log"
echo
printf '%-9s %-9s %-18s %s\n' worker accuracy "parameters (FNV)" "metrics"
for ((r = 0; r < workers; r++)); do
  json=$(cat "$dir/result-$r.json")
  acc=$(grep -o '"accuracy":[0-9.]*' <<<"$json" | cut -d: -f2)
  sum=$(grep -o '"checksum":"[0-9a-f]*"' <<<"$json" | cut -d'"' -f4)
  port=$(grep -o '"metrics_port":[0-9]*' <<<"$json" | cut -d: -f2)
  printf 'worker-%-2s %-9.4f %-18s http://127.0.0.1:%s/metrics\n' "$r" "$acc" "$sum" "$port"
done
echo
echo "== Bytes on every ring link (payload, as scraped from each sender's and receiver's /metrics)"
for ((r = 0; r < workers; r++)); do
  port=$(grep -o '"metrics_port":[0-9]*' "$dir/result-$r.json" | cut -d: -f2)
  curl -s "http://127.0.0.1:$port/metrics" |
    grep -E '^ringside_link_(bytes|expected_bytes|received_bytes)_total' | sed 's/^/  /'
done
# Payload bytes one worker sent per step, summed over its links of `mode` (from its /metrics).
sent_per_step() {
  local port=$1 mode=$2 steps=$3
  curl -s "http://127.0.0.1:$port/metrics" |
    awk -v mode="$mode" -v steps="$steps" '
      /^ringside_link_bytes_total\{/ && $0 ~ "mode=\"" mode "\"" && $0 ~ "src=\"worker-0\"" { sum += $2 }
      END { printf "%.0f", sum / steps }'
}
ring_port=$(grep -o '"metrics_port":[0-9]*' "$dir/result-0.json" | cut -d: -f2)
ring_bytes=$(sent_per_step "$ring_port" ring 200)

echo
echo "== The same job through 2 parameter-server shards (ringside-ps) and 4 workers"
shards=""
for s in 0 1; do
  port=$(pick_port)
  shards+="${shards:+,}127.0.0.1:$port"
  "$bin/ringside-ps" --shard=$s --ps_shards=2 --workers=$workers --listen=127.0.0.1:$port \
    >"$dir/ps-$s.log" 2>&1 &
  pids+=($!)
done
for ((r = 0; r < workers; r++)); do
  "$bin/ringside-worker" --mode=ps --rank=$r --workers=$workers --ps="$shards" --job=train \
    --device=cpu --linger --result_file="$dir/ps-result-$r.json" >"$dir/ps-worker-$r.log" 2>&1 &
  pids+=($!)
done
for ((r = 0; r < workers; r++)); do
  for _ in $(seq 600); do [ -s "$dir/ps-result-$r.json" ] && break; sleep 0.1; done
  if [ ! -s "$dir/ps-result-$r.json" ]; then
    echo "ps worker $r produced no result; its log:" >&2; tail -20 "$dir/ps-worker-$r.log" >&2
    exit 1
  fi
done
grep -h "trained" "$dir/ps-worker-0.log"
ps_port=$(grep -o '"metrics_port":[0-9]*' "$dir/ps-result-0.json" | cut -d: -f2)
ps_bytes=$(sent_per_step "$ps_port" ps 200)
params=$(grep -o '"parameters":[0-9]*' "$dir/result-0.json" | cut -d: -f2)
echo
echo "== Bytes worker-0 sent per step (measured on /metrics; model in brackets)"
# Rank 0 sends every chunk but c1 in scatter-reduce and every chunk but c2 in allgather; chunks
# are EvenRanges(K, N): the first K mod N of them one element longer.
chunk() { echo $((params / workers + ($1 < params % workers ? 1 : 0))); }
ring_model=$(((2 * params - $(chunk 1) - $(chunk 2)) * 4))
echo "  ring: $ring_bytes   [2K - |c1| - |c2| elements * 4 = $ring_model, about 2(N-1)/N * K * 4; N=$workers, K=$params]"
echo "  ps:   $ps_bytes   [K * 4 = $((params * 4)), split over the shards; every shard takes N * K/S * 4]"

echo
echo "== Ring allreduce vs Gloo, 16 MiB, N=2 and N=4 (ratios measured in this run)"
"$bin/ringside-bench" ring --worlds=2,4 --sizes=16MiB 2>/dev/null
