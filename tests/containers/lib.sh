# Shared by the container tests (sourced, not run). Each test:
#   - uses Podman with the repository's deploy/podman/containers.conf (never /etc);
#   - names everything it starts with its own random suffix and undoes it in reverse order on
#     every exit path (on_exit), including SIGTERM/SIGINT and its own overall budget, which is
#     kept below ctest's TIMEOUT because ctest's timeout kill cannot be trapped;
#   - waits for observable state (wait_for), each wait with a deadline and a message saying
#     what was not reached.
# Needs: SOURCE_DIR (the repository) and RINGSIDE_TEST_IMAGE (the image tag the build test made).

set -euo pipefail
test_name=$(basename "$0" .sh)
die() {
  echo "$test_name: FAIL: $*" >&2
  [ -z "${diagnose:-}" ] || eval "$diagnose" >&2 || true  # what the test says about its state
  exit 1
}
note() { echo "$test_name: $*" >&2; }

[ -n "${SOURCE_DIR:-}" ] || die "SOURCE_DIR (the repository) is not set"
export CONTAINERS_CONF=$SOURCE_DIR/deploy/podman/containers.conf
command -v podman >/dev/null ||
  die "podman not found: run scripts/setup-debian.sh (as root), which installs podman, buildah, \
podman-compose, debootstrap and runc"
[ "$(id -u)" = 0 ] ||
  die "these tests run Podman as root (its netavark bridge networks need it; rootless Podman \
on Debian 12 needs subuid ranges this project does not set up): run as root"

# What Podman runs without depending on it as a package, named before a container fails with a
# bare "No such file or directory": the OCI runtime containers.conf names (runc), conmon, the
# network helpers netavark and aardvark-dns (in Podman's helper directories, not on PATH), the
# iptables netavark calls at run time, and catatonit, the init of the pause image that every
# pod's infra container runs (podman kube play builds that image locally from it).
podman_preflight() {
  local missing=() program dir found
  for program in runc conmon iptables; do
    command -v "$program" >/dev/null || missing+=("$program (not on PATH)")
  done
  for program in netavark aardvark-dns catatonit; do
    found=
    for dir in /usr/local/libexec/podman /usr/local/lib/podman /usr/libexec/podman \
               /usr/lib/podman; do
      [ -x "$dir/$program" ] && found=$dir/$program
    done
    [ -n "$found" ] || command -v "$program" >/dev/null ||
      missing+=("$program (not in /usr/lib/podman, /usr/libexec/podman or on PATH)")
  done
  ((${#missing[@]} == 0)) ||
    die "Podman cannot run containers here without: $(IFS=';'; echo "${missing[*]}"). \
Run scripts/setup-debian.sh (as root), which installs runc, conmon (with podman), netavark, \
aardvark-dns, catatonit and iptables"
}
podman_preflight

# A suffix unique to this run: every container, network, volume and project name carries it.
run_id=$(head -c 6 /dev/urandom | od -An -tx1 | tr -d ' \n')
work=$(mktemp -d "/tmp/ringside-$test_name.XXXXXX")

cleanups=()
on_exit() { cleanups+=("$*"); }
run_cleanups() {
  local status=$?
  set +e # every cleanup runs, whatever the one before it returned
  trap - EXIT TERM INT
  [ -z "${watchdog_pid:-}" ] || kill "$watchdog_pid" 2>/dev/null
  local i
  for ((i = ${#cleanups[@]} - 1; i >= 0; i--)); do
    eval "${cleanups[i]}" >/dev/null 2>&1 || note "cleanup failed: ${cleanups[i]}"
  done
  rm -rf "$work"
  exit "$status"
}
trap run_cleanups EXIT
trap 'if [ -e "$work/over-budget" ]; then note "FAIL: over its budget: cleaning up"; \
      else note "interrupted: cleaning up"; fi; exit 143' TERM
trap 'note "interrupted: cleaning up"; exit 130' INT

# The whole test's budget (seconds): past it the test fails and cleans up by itself, before
# ctest's own timeout would kill it without running the trap.
# The watchdog keeps no file descriptor of ours open (ctest waits for its output pipe to close).
set_budget() {
  (
    trap 'kill "$sleeper" 2>/dev/null; exit 0' TERM
    sleep "$1" &
    sleeper=$!
    wait "$sleeper"
    touch "$work/over-budget"
    kill -TERM $$
  ) </dev/null >/dev/null 2>&1 &
  watchdog_pid=$!
}

# wait_for SECONDS WHAT COMMAND...: run COMMAND until it succeeds; fail naming WHAT after
# SECONDS. The pause between tries only paces the polling; the deadline is what is waited on.
wait_for() {
  local seconds=$1 what=$2
  shift 2
  local deadline=$((SECONDS + seconds))
  # In a subshell: a TERM (the budget, ctest) then finds the shell's own stderr, not this log.
  until ("$@") >"$work/last-try.log" 2>&1; do
    if ((SECONDS >= deadline)); then
      tail -n 20 "$work/last-try.log" >&2
      die "not reached within $seconds s: $what"
    fi
    sleep 2
  done
}

# The image the build test made (ctest fixture container_image).
require_image() {
  [ -n "${RINGSIDE_TEST_IMAGE:-}" ] || die "RINGSIDE_TEST_IMAGE is not set"
  podman image exists "$RINGSIDE_TEST_IMAGE" ||
    die "image $RINGSIDE_TEST_IMAGE missing: the container_image test builds it (ctest -L container)"
}

# A network of this run's own, removed on exit.
make_network() {
  local name=$1
  podman network create "$name" >/dev/null || die "podman network create $name failed"
  on_exit podman network rm -f "$name"
}
