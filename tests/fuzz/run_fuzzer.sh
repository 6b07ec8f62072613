#!/bin/sh
# Runs one fuzz target for a few seconds from its checked-in corpus (the ctest fuzz_NAME): every
# seed first, then fuzzing. Fails on a crash, a broken invariant, a leak, a timeout (-timeout)
# or too much memory (-rss_limit_mb, and -malloc_limit_mb, which defaults to it), and says where
# libFuzzer kept the input. New inputs go to WORK_DIR, never into the checked-in corpus.
# Usage: run_fuzzer.sh FUZZER CORPUS_DIR WORK_DIR [SECONDS]
set -u
fuzzer=$1 corpus=$2 work=$3 seconds=${4:-5}
if [ ! -x "$fuzzer" ]; then
  echo "FAIL: $fuzzer is missing: the fuzz build (build/fuzz) failed or did not run"
  exit 1
fi
if [ -z "$(ls -A "$corpus" 2>/dev/null)" ]; then
  echo "FAIL: no seed in $corpus (build/fuzz/make_seeds tests/fuzz/corpus writes them)"
  exit 1
fi
rm -rf "$work"
mkdir -p "$work/new" "$work/artifacts"
"$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=1024 -print_final_stats=1 \
  -artifact_prefix="$work/artifacts/" "$work/new" "$corpus" >"$work/log" 2>&1
status=$?
# The seeds' coverage and the end: what a reader of the test log needs.
grep -E '^(INFO: seed corpus|#[0-9]+[[:space:]]+INITED|Done|stat::)' "$work/log"
if [ "$status" -ne 0 ]; then
  tail -n 60 "$work/log"
  echo "FAIL: $(basename "$fuzzer") exited with $status; the input is in $work/artifacts:"
  ls "$work/artifacts"
  echo "Reproduce: $fuzzer $work/artifacts/<file>"
fi
exit "$status"
