#!/usr/bin/env bash
# Every binary's --help and every `ringside` subcommand's --help: exit 0, the command's own
# flags listed with their defaults, and nothing that belongs elsewhere (another subcommand's
# flags, test-only flags).  Usage: help_test.sh BIN_DIR
set -uo pipefail
bin=$1
source "$(dirname "$0")/refusals.sh"

# expect_help "COMMAND..." "FLAGS IT MUST LIST" "FLAGS IT MUST NOT LIST"
expect_help() {
  local command=$1 must=$2 must_not=$3 out code
  out=$($bin/$command --help 2>&1); code=$?
  [ "$code" -eq 0 ] || fail "'$command --help' exited $code"
  for flag in $must; do
    grep -q -- "^  --$flag=" <<<"$out" || fail "'$command --help' does not list --$flag"
  done
  for flag in $must_not; do
    grep -q -- "^  --$flag=" <<<"$out" && fail "'$command --help' lists --$flag"
  done
  echo "ok: $command --help ($(grep -c '^  --' <<<"$out") flags)"
}

expect_help "ringside" "" "fault_at"
expect_help "ringside compare" "workers ps_shards colocate json report model data steps lr insecure" \
  "link_rate slow_link cleanup address controller ready_file fault_at"
expect_help "ringside lab" "link_rate slow_link colocate cleanup workers json model" "address ready_file controller"
expect_help "ringside plan" "workers ps_shards link_rate link_latency probe probe_out straggler json chart model" \
  "slow_link cleanup colocate address controller ready_file report"
expect_help "ringside up" "workers mode ready_file model insecure" "link_rate colocate json address"
expect_help "ringside ctl mode" "controller operator_token_file tls_ca tls_cert tls_key insecure" \
  "workers model link_rate address"
expect_help "ringside health" "address timeout tls_ca insecure" "controller workers model"
expect_help "ringside-controller" "workers ps_shards join_token_file operator_token_file" ""
expect_help "ringside-ps" "shard ps_shards listen controller" ""
expect_help "ringside-worker" "rank peers mode controller model" "fault_at"
expect_help "ringside-bench" "" ""
expect_help "ringside-bench ring" "worlds sizes implementations iters json" "torch model devices"
expect_help "ringside-bench train" "model steps torch runs" "implementations worlds devices"
# --helpfull lists every flag of the binary, test-only ones too, and exits 0.
out=$($bin/ringside-worker --helpfull 2>&1) || fail "'ringside-worker --helpfull' exited $?"
grep -q -- "^  --fault_at=" <<<"$out" || fail "'ringside-worker --helpfull' does not list --fault_at"
out=$($bin/ringside lab --helpfull 2>&1) || fail "'ringside lab --helpfull' exited $?"
grep -q -- "^  --address=" <<<"$out" || fail "'ringside --helpfull' does not list every flag"

# Every flag of `ringside` belongs to some subcommand's --help (a new flag left out of all of
# them would be invisible).
all=$($bin/ringside --helpfull | grep -o '^  --[a-z0-9_]*' | sort -u)
shown=$(for c in compare lab plan up "ctl mode" health; do $bin/ringside $c --help; done |
        grep -o '^  --[a-z0-9_]*' | sort -u)
missing=$(comm -23 <(echo "$all") <(echo "$shown") | tr -d ' ' | tr '\n' ' ')
[ -z "$missing" ] || fail "no ringside subcommand's --help lists: $missing"

# `ringside` alone prints its usage (a misuse: exit 2), not "unknown command".
out=$($bin/ringside 2>&1); code=$?
[ "$code" -eq 2 ] || fail "'ringside' alone exited $code, not 2"
grep -q "^usage: ringside compare" <<<"$out" || fail "'ringside' alone does not print its usage: $out"
# compare's --help says what plain compare runs (its defaults below are the Iris job's).
grep -q "784,1024,1024,10" <<<"$($bin/ringside compare --help)" ||
  fail "'ringside compare --help' does not say which jobs plain compare runs"

echo "help checks: $failures failures"
[ "$failures" -eq 0 ]
