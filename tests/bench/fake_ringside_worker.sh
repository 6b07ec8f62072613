#!/bin/sh
# A stand-in for `ringside-worker --job=allreduce` used to test ringside-bench's driver: checks
# that every flag of the worker CLI is present and well-formed, then writes the result file the
# real worker writes (without doing any allreduce). FAKE_WORKER_CHECK_OK=false reports a failed
# value check; FAKE_WORKER_EXIT=N exits with N after printing an error.
set -eu
rank= peers= job= elements= iters= warmup= segment= metrics= result=
for arg in "$@"; do
  case "$arg" in
    --rank=*) rank=${arg#*=} ;;
    --peers=*) peers=${arg#*=} ;;
    --job=*) job=${arg#*=} ;;
    --elements=*) elements=${arg#*=} ;;
    --iters=*) iters=${arg#*=} ;;
    --warmup=*) warmup=${arg#*=} ;;
    --segment_bytes=*) segment=${arg#*=} ;;
    --metrics_listen=*) metrics=${arg#*=} ;;
    --result_file=*) result=${arg#*=} ;;
    *) echo "fake worker: unknown flag $arg" >&2; exit 2 ;;
  esac
done
for name in rank peers job elements iters warmup segment metrics result; do
  eval "value=\$$name"
  if [ -z "$value" ]; then echo "fake worker: missing --$name" >&2; exit 2; fi
done
[ "$job" = allreduce ] || { echo "fake worker: --job=$job" >&2; exit 2; }
[ "$metrics" = 127.0.0.1:0 ] || { echo "fake worker: --metrics_listen=$metrics" >&2; exit 2; }
world=$(echo "$peers" | tr ',' '\n' | grep -c '^127\.0\.0\.1:[1-9][0-9]*$' || true)
count=$(echo "$peers" | tr ',' '\n' | wc -l)
[ "$world" -eq "$count" ] || { echo "fake worker: bad --peers=$peers" >&2; exit 2; }
[ "$rank" -lt "$world" ] || { echo "fake worker: rank $rank >= world $world" >&2; exit 2; }
if [ -n "${FAKE_WORKER_EXIT:-}" ]; then
  echo "fake worker: failing on purpose" >&2
  exit "$FAKE_WORKER_EXIT"
fi
check_ok=${FAKE_WORKER_CHECK_OK:-true}
printf '{"rank":%s,"world":%s,"elements":%s,"iters":%s,"seconds_per_op":0.001,"seconds_total":%s,"check_ok":%s,"max_abs_error":0}\n' \
  "$rank" "$world" "$elements" "$iters" "$iters" "$check_ok" > "$result.tmp"
mv "$result.tmp" "$result"
