#!/usr/bin/env bash
# `make demo` until `ringside compare` exists: a static ring of 4 ringside-worker processes on
# loopback trains the Iris MLP, shows every link's bytes as Prometheus serves them next to the
# cost model, then times the ring against Gloo. Stops every process it started (by PID), also
# on Ctrl-C.
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
echo
echo "== Ring allreduce vs Gloo, 16 MiB, N=2 and N=4 (ratios measured in this run)"
"$bin/ringside-bench" ring --worlds=2,4 --sizes=16MiB 2>/dev/null
