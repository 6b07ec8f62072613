#!/bin/sh
# A stand-in for `ringside-bench ring-rank` used to test ringside-bench's driver: checks that
# the command and every flag of the rank CLI are present and well-formed, then writes the result
# file the real rank writes (without doing any allreduce). FAKE_WORKER_CHECK_OK=false reports a failed
# value check; FAKE_WORKER_EXIT=N exits with N after printing an error.
set -eu
rank= peers= elements= iters= warmup= segment= metrics= result= insecure=
[ "${1:-}" = ring-rank ] || { echo "fake rank: the first argument is '${1:-}', not ring-rank" >&2; exit 2; }
shift
for arg in "$@"; do
  case "$arg" in
    --rank=*) rank=${arg#*=} ;;
    --peers=*) peers=${arg#*=} ;;
    --elements=*) elements=${arg#*=} ;;
    --iters=*) iters=${arg#*=} ;;
    --warmup=*) warmup=${arg#*=} ;;
    --segment_bytes=*) segment=${arg#*=} ;;
    --metrics_listen=*) metrics=${arg#*=} ;;
    --result_file=*) result=${arg#*=} ;;
    --insecure) insecure=yes ;;
    *) echo "fake rank: unknown flag $arg" >&2; exit 2 ;;
  esac
done
for name in rank peers elements iters warmup segment metrics result insecure; do
  eval "value=\$$name"
  if [ -z "$value" ]; then echo "fake rank: missing --$name" >&2; exit 2; fi
done
[ "$metrics" = 127.0.0.1:0 ] || { echo "fake rank: --metrics_listen=$metrics" >&2; exit 2; }
world=$(echo "$peers" | tr ',' '\n' | grep -c '^127\.0\.0\.1:[1-9][0-9]*$' || true)
count=$(echo "$peers" | tr ',' '\n' | wc -l)
[ "$world" -eq "$count" ] || { echo "fake rank: bad --peers=$peers" >&2; exit 2; }
[ "$rank" -lt "$world" ] || { echo "fake rank: rank $rank >= world $world" >&2; exit 2; }
if [ -n "${FAKE_WORKER_EXIT:-}" ]; then
  echo "fake rank: failing on purpose" >&2
  exit "$FAKE_WORKER_EXIT"
fi
check_ok=${FAKE_WORKER_CHECK_OK:-true}
printf '{"rank":%s,"world":%s,"elements":%s,"iters":%s,"seconds_per_op":0.001,"seconds_total":%s,"check_ok":%s,"max_abs_error":0}\n' \
  "$rank" "$world" "$elements" "$iters" "$iters" "$check_ok" > "$result.tmp"
mv "$result.tmp" "$result"
