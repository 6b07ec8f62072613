# Sourced by the command-line tests (bad_values_test.sh, plan_bad_input_test.sh, help_test.sh):
# a failure count and the refusal check they share.
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# expect_refused TEXT COMMAND...: COMMAND exits 1 with one line of output containing TEXT (a
# fixed string: a flag's name, or what the refusal must say).
expect_refused() {
  local text=$1 out code lines
  shift
  out=$(timeout 60 "$@" 2>&1); code=$?
  lines=$(grep -c . <<<"$out")
  if [ "$code" -ne 1 ]; then
    fail "'$*' exited $code, not 1: $out"
  elif [ "$lines" -ne 1 ]; then
    fail "'$*' should refuse in one line, not $lines:"$'\n'"$out"
  elif ! grep -qF -- "$text" <<<"$out"; then
    fail "'$*' does not say '$text': $out"
  else
    echo "ok: $* -> $out"
  fi
}
