#!/usr/bin/env bash
# The compose cluster for real (issue 14, point 2): deploy/compose/docker-compose.yml brought up
# with the built image by Debian's docker-compose 1.29 talking to `podman system service`
# (the client Docker users run, so depends_on's service_healthy and the file secrets behave as
# with Docker; podman-compose 1.0 ignores health conditions). Controller, 2 shards, 4 workers
# and Prometheus (Debian's, deploy/prometheus/Dockerfile); Grafana is not packaged for Debian
# and Docker Hub is out of reach, so its service is not started. Checked, each by observing
# state: every health check turns healthy, the workers train, every Prometheus target is up,
# the recording rules and the dashboard's queries return data, a live `ctl mode ps` shows in the
# per-mode link counters, a worker killed with kill -9 is regrouped around and rejoins, and a
# rolling restart of every process (each stopped with SIGTERM and re-created in turn) never
# restarts the job.
source "$(dirname "$0")/lib.sh"
set_budget "${RINGSIDE_CONTAINER_BUDGET:-1740}"
require_image
command -v docker-compose >/dev/null ||
  die "docker-compose not found: run scripts/setup-debian.sh (as root)"
command -v curl >/dev/null || die "curl not found: run scripts/setup-debian.sh (as root)"
[ -n "${RINGSIDE_TEST_PROMETHEUS_IMAGE:-}" ] || die "RINGSIDE_TEST_PROMETHEUS_IMAGE is not set"
podman image exists "$RINGSIDE_TEST_PROMETHEUS_IMAGE" ||
  die "image $RINGSIDE_TEST_PROMETHEUS_IMAGE missing: the container_image test builds it"
checks=$SOURCE_DIR/tests/containers/prometheus_checks.py

# The user's files, made as the compose file's header says, in a copy of deploy/.
cp -r "$SOURCE_DIR/deploy" "$work/deploy"
rm -rf "$work/deploy/compose/tls" # a developer's own certificates are not this run's
compose_dir=$work/deploy/compose
head -c 32 /dev/urandom | base64 >"$compose_dir/join_token"
head -c 32 /dev/urandom | base64 >"$compose_dir/operator_token"
"$compose_dir/make-certs.sh" >"$work/certs.log" 2>&1 ||
  { cat "$work/certs.log" >&2; die "deploy/compose/make-certs.sh failed"; }
chmod 0644 "$compose_dir"/tls/*.crt "$compose_dir"/join_token "$compose_dir"/operator_token

# Podman's Docker-compatible API on a socket of this run's own.
socket=$work/podman.sock
podman system service --time=0 "unix://$socket" >"$work/service.log" 2>&1 &
service_pid=$!
on_exit kill "$service_pid"
wait_for 30 "podman system service answering on $socket" \
  curl -sf --unix-socket "$socket" http://podman/_ping

project=ringside-ct-$run_id
prometheus_port=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export DOCKER_HOST=unix://$socket COMPOSE_PROJECT_NAME=$project
export RINGSIDE_IMAGE=$RINGSIDE_TEST_IMAGE PROMETHEUS_IMAGE=$RINGSIDE_TEST_PROMETHEUS_IMAGE
export PROMETHEUS_PORT=$prometheus_port RINGSIDE_MODE=ring
compose() { (cd "$compose_dir" && docker-compose -f docker-compose.yml "$@"); }

# The step model's prediction for this cluster, made by `ringside plan` in the image (a loopback
# probe inside the container), given to the workers for the dashboard's predicted-step panel.
podman run --rm --network none "$RINGSIDE_IMAGE" sh -c 'ringside plan --workers=4 \
  --ps_shards=2 --model=64,256,256,10 --batch_size=256 --json=/tmp/plan.json >/dev/null &&
  cat /tmp/plan.json' >"$work/plan.json" 2>"$work/plan.log" ||
  { cat "$work/plan.log" >&2; die "ringside plan in the image failed"; }
RINGSIDE_PREDICTED_STEP_SECONDS=$(/usr/bin/python3 -c '
import json, sys
ranking = json.load(open(sys.argv[1]))["cells"][0]["ranking"]
step = {row["mode"]: row["step_seconds"] for row in ranking}
print("ring=%r,ps=%r" % (step["ring"], step["ps"]))' "$work/plan.json") ||
  die "no ring and ps step in ringside plan's JSON: $(head -c 400 "$work/plan.json")"
export RINGSIDE_PREDICTED_STEP_SECONDS
note "ringside plan predicts $RINGSIDE_PREDICTED_STEP_SECONDS (seconds per step)"
in_project=(--filter "label=com.docker.compose.project=$project")
# Undone in this order: compose's own down, then anything of this project it left behind.
on_exit 'podman volume ls -q "${in_project[@]}" | xargs -r podman volume rm -f'
on_exit 'podman network rm -f "${project}_default"'
on_exit 'podman ps -aq "${in_project[@]}" | xargs -r podman rm -f'
on_exit 'compose down -v --remove-orphans --timeout 5'

# Podman 4.3 schedules health checks with systemd timers; without systemd (these machines, CI)
# nothing runs them, so this loop does what the timer would: run each container's own health
# check (`podman healthcheck run`), which records the result in its health status.
(
  while :; do
    for id in $(podman ps -q "${in_project[@]}" --filter health=starting) \
              $(podman ps -q "${in_project[@]}" --filter health=healthy) \
              $(podman ps -q "${in_project[@]}" --filter health=unhealthy); do
      podman healthcheck run "$id" >/dev/null 2>&1 || true
    done
    sleep 5 # the compose file's health-check interval
  done
) </dev/null >/dev/null 2>&1 &
on_exit kill "$!"

# By label rather than `docker-compose ps` (a Python start per call, slow on a loaded machine).
container() {
  podman ps -aq "${in_project[@]}" --filter "label=com.docker.compose.service=$1"
}
# On failure: each container's state, health and last log lines.
show_state() {
  local id
  for id in $(podman ps -aq "${in_project[@]}"); do
    podman inspect --format '--- {{.Name}}: {{.State.Status}} (exit {{.State.ExitCode}}), health {{.State.Health.Status}}' "$id"
    podman logs --tail 8 "$id" 2>&1 | sed 's/^/    /'
  done
}
diagnose=show_state

services=(controller ps-0 ps-1 worker-0 worker-1 worker-2 worker-3 prometheus)
note "docker-compose up -d ${services[*]} (project $project)"
compose up -d "${services[@]}" >"$work/up.log" 2>&1 ||
  { tail -n 40 "$work/up.log" >&2; die "docker-compose up failed (its last 40 lines above)"; }

all_healthy() {
  local service status
  for service in "${services[@]}"; do
    status=$(podman inspect --format '{{.State.Health.Status}}' "$(container "$service")")
    [ "$status" = healthy ] || { echo "$service: $status"; return 1; }
  done
}
wait_for 900 "every service's health check healthy (${services[*]})" all_healthy
note "every health check healthy: ${services[*]}"

url=http://127.0.0.1:$prometheus_port
# A failed check shows every container's state and last log lines, as any other failure does.
prom() { /usr/bin/python3 "$checks" "$url" "$@" || die "Prometheus check failed: $*"; }
prom targets 7 300 >/dev/null
note "Prometheus: 7 targets (controller, ps-0, ps-1, worker-0..3), every one up"

# Training: every worker's step counter moves past where it is now. The first step waits for
# all four workers to register and the controller to form the ring: on a loaded machine (the
# suite runs beside) once more than 120 s after the scrapes began.
steps_by_worker='sum by (instance) (ringside_steps_total{job="ringside-worker"})'
prom count "$steps_by_worker" 4 300 >/dev/null
prom each-above "$steps_by_worker" "$(prom series "$steps_by_worker")" 120 >/dev/null
note "the 4 workers train (ringside_steps_total grows on each)"

# Live mode switch, as the compose file's header says, from inside the controller's container.
ps_links='sum(ringside_link_bytes_total{mode="ps"})'
ps_before=$(prom value "$ps_links")
compose exec -T controller ringside ctl mode ps --controller=127.0.0.1:7000 \
  --tls_ca=/run/secrets/tls_ca --tls_cert=/run/secrets/tls_cert --tls_key=/run/secrets/tls_key \
  --operator_token_file=/run/secrets/operator_token >"$work/ctl.log" 2>&1 ||
  { cat "$work/ctl.log" >&2; die "ringside ctl mode ps in the controller's container failed"; }
prom above 'max(ringside_mode_info{mode="ps",job="ringside-controller"})' 0 120 \
  "the controller reports ps as the job's mode" >/dev/null
prom above "$ps_links" "$ps_before" 120 "the ps-mode link counters grow after the switch" >/dev/null
note "ctl mode ps: ps-mode link bytes $ps_before -> $(prom value "$ps_links")"

# The link probe from inside the controller's container, through each worker's TLS server (the
# workers serve it with the join token as its secret): every worker's link is measured.
compose exec -T controller ringside plan \
  --probe_targets=worker-0:7200,worker-1:7200,worker-2:7200,worker-3:7200 \
  --probe_token_file=/run/secrets/join_token --workers=4 --ps_shards=2 \
  --tls_ca=/run/secrets/tls_ca --tls_cert=/run/secrets/tls_cert --tls_key=/run/secrets/tls_key \
  >"$work/plan.log" 2>&1 ||
  { cat "$work/plan.log" >&2; die "ringside plan --probe_targets in the controller's container failed"; }
grep -q "probing the links to 4 members" "$work/plan.log" ||
  { cat "$work/plan.log" >&2; die "ringside plan did not probe the 4 workers"; }
note "plan --probe_targets: the 4 workers' links probed from the controller's container"

# Both modes have run now: the recording rules and every dashboard query return data.
prom rules 120
prom dashboard "$SOURCE_DIR/deploy/grafana/ringside.json" 120

# A worker killed with kill -9: the controller regroups the others (generation moves) and
# training goes on; the restart policy brings the container back and it rejoins.
generation='max(ringside_generation{job="ringside-controller"})'
gen_before=$(prom value "$generation")
victim=$(container worker-3)
pid=$(podman inspect --format '{{.State.Pid}}' "$victim")
[ "$pid" -gt 0 ] || die "worker-3's container has no process"
kill -9 "$pid"
note "kill -9 worker-3 (pid $pid; generation $gen_before)"
prom above "$generation" "$gen_before" 120 "the controller regroups (generation moves)" >/dev/null
regrouped=$(prom value "$generation")
survivors='sum(ringside_steps_total{job="ringside-worker",instance!="worker-3:9100"})'
prom above "$survivors" "$(prom value "$survivors")" 120 \
  "the other workers train on after the regroup" >/dev/null
# The restart policy (unless-stopped) starts a new process in the same container...
restarted() {
  local now
  now=$(podman inspect --format '{{.State.Running}} {{.State.Pid}}' "$victim")
  [ "${now%% *}" = true ] && [ "${now#* }" != "$pid" ] && [ "${now#* }" != 0 ]
}
wait_for 180 "worker-3's container restarted by its restart policy" restarted
# ...which rejoins: the controller's world is 4 again, in a later generation.
prom above 'max(ringside_world_size{job="ringside-controller"})' 3 180 \
  "worker-3 rejoined (world size back to 4)" >/dev/null
note "regrouped (generation $gen_before -> $regrouped), trained on, worker-3 rejoined"

# A rolling restart, as a drain or a StatefulSet's rollout makes one: every worker, then both
# shards, then the controller, one at a time while the job trains (in ps mode now). Each is
# stopped as a drain stops it (SIGTERM, then the compose file's stop_grace_period) and must
# exit 0 having logged its leave; its container is removed and a new one of the same service
# made (the same name, the address the others dial), which must turn healthy and take part: its
# own metrics, through Prometheus, show a generation after its leave. The workers' logs then
# show the job's step never going back, and the controller's that each stop was a leave, no
# member dropped for its heartbeat timeout (job_progress.py).
rolling_start=$SECONDS
gone=$work/gone
mkdir -p "$gone"
controller_lines=$(podman logs "$(container controller)" 2>&1 | wc -l) # before the restart
of() { echo "max($1{instance=\"$2:9100\"})"; } # a metric of one service's own process
healthy() {
  [ "$(podman inspect --format '{{.State.Health.Status}}' "$(container "$1")")" = healthy ]
}
# replace SERVICE SAID: stops it, checks its exit and that its log says SAID, and makes a new
# container of it, healthy. Its log is kept as $gone/SERVICE.log.
replace() {
  local service=$1 said=$2 old code
  old=$(container "$service")
  compose stop "$service" >"$work/stop.log" 2>&1 ||
    { cat "$work/stop.log" >&2; die "docker-compose stop $service failed"; }
  code=$(podman inspect --format '{{.State.ExitCode}}' "$old")
  podman logs "$old" >"$gone/$service.log" 2>&1
  [ "$code" = 0 ] ||
    { tail -n 20 "$gone/$service.log" >&2; die "$service exited $code on SIGTERM, not 0"; }
  grep -q "$said" "$gone/$service.log" ||
    { tail -n 20 "$gone/$service.log" >&2; die "$service's log does not say '$said'"; }
  compose rm -f "$service" >"$work/rm.log" 2>&1 ||
    { cat "$work/rm.log" >&2; die "docker-compose rm $service failed"; }
  compose up -d --no-deps "$service" >"$work/up.log" 2>&1 ||
    { cat "$work/up.log" >&2; die "docker-compose up -d --no-deps $service failed"; }
  wait_for 300 "$service's new container healthy" healthy "$service"
}
# The generation a member's leave log line names ("... goes on in generation G without it").
left_for() {
  sed -n 's/.*left the job, which goes on in generation \([0-9]*\) without it$/\1/p' \
    "$gone/$1.log" | tail -n 1
}
for service in worker-0 worker-1 worker-2 worker-3 ps-0 ps-1; do
  before=$(prom value "$generation")
  replace "$service" 'stopped by signal 15; left the job, which goes on in generation'
  left=$(left_for "$service")
  [ -n "$left" ] && ((left > ${before%.*})) ||
    die "$service's leave named generation '$left', not one after $before"
  prom above "$(of ringside_generation "$service")" "$left" 180 \
    "$service's new process serves a generation after its leave ($left)" >/dev/null
  prom above "$(of ringside_world_size "$service")" 3 60 \
    "$service's new process is in a generation of 4 workers" >/dev/null
  if [[ $service == ps-* ]]; then # the workers push to the new shard
    prom above "sum(ringside_link_received_bytes_total{instance=\"$service:9100\"})" 0 120 \
      "$service's new process receives the workers' pushes" >/dev/null
  fi
  note "replaced $service: it left for generation $left; its new process is in generation \
$(prom value "$(of ringside_generation "$service")")"
done
saved=$(prom value "$generation")
replace controller 'controller: stopped by signal 15 at generation .*; its membership record is saved'
resumed() {
  podman logs "$(container controller)" 2>&1 | grep -q '^controller: resumed generation '
}
wait_for 180 "the new controller resumes the job from its membership record" resumed
resumed_at=$(podman logs "$(container controller)" 2>&1 |
  sed -n 's/^controller: resumed generation \([0-9]*\) .*/\1/p')
((resumed_at >= ${saved%.*})) ||
  die "the new controller resumed generation $resumed_at, older than the job's $saved"
prom each-above "$steps_by_worker" "$(prom series "$steps_by_worker")" 180 >/dev/null
note "replaced the controller: it resumed generation $resumed_at; every worker trains on"

# The end: every worker in the controller's generation, and their logs, the leavers' with them.
prom above "count(ringside_generation{job=\"ringside-worker\"} == scalar($generation))" 3 120 \
  "every worker in the controller's generation" >/dev/null
final=$(prom value "$generation")
current=()
for service in worker-0 worker-1 worker-2 worker-3; do
  podman logs "$(container "$service")" >"$work/$service.now.log" 2>&1
  current+=("$work/$service.now.log")
done
tail -n "+$((controller_lines + 1))" "$gone/controller.log" >"$work/controller.rolling.log"
podman logs "$(container controller)" >"$work/controller.now.log" 2>&1
progress=$(/usr/bin/python3 "$SOURCE_DIR/tests/containers/job_progress.py" --final "${final%.*}" \
  --current "${current[@]}" --gone "$gone"/worker-*.log \
  --controller "$work/controller.rolling.log" "$work/controller.now.log" --leaves 6) ||
  die "the workers' logs do not show a job that never restarted (above)"
note "rolling restart in $((SECONDS - rolling_start)) s; the workers' logs: $progress"
echo "container_compose: ok"
