#!/usr/bin/env bash
# Kubernetes as far as Podman goes (issue 23, point 5): the base (deploy/k8s/base), rendered by
# deploy/k8s/podman/render.py into what Debian 12's `podman kube play` runs (the controller's
# Deployment and its claim as they are, each StatefulSet replica as a Pod, the Services' names
# as network aliases, the Secrets as files; see that script for every change and why), played
# with the built image on a network of this run's own. Checked, each by observing state: every
# pod and container Running with the manifests' user and read-only root, every readiness
# probe's check (`ringside health` on its port) SERVING, the controller's topology holding
# every shard and worker of job.env with each member's advertised pod DNS name registered, its
# ringside_world_size equal to the workers, every worker's ringside_steps_total growing, `ringside
# plan --probe_targets` from the controller's pod measuring every worker's link and profile, and a
# rolling restart of every pod (each stopped with SIGTERM and played again in turn) that never
# restarts the job.
source "$(dirname "$0")/lib.sh"
set_budget "${RINGSIDE_CONTAINER_BUDGET:-840}"
require_image
command -v curl >/dev/null || die "curl not found: run scripts/setup-debian.sh (as root)"
/usr/bin/python3 -c 'import yaml' 2>/dev/null ||
  die "Debian's python3-yaml is missing (render.py reads the base with it): \
run scripts/setup-debian.sh"

# The user's steps from docs/deploy.md, in a copy: the tokens beside the kustomization.
cp -r "$SOURCE_DIR/deploy/k8s/base" "$work/base"
head -c 32 /dev/urandom | base64 >"$work/base/join-token"
head -c 32 /dev/urandom | base64 >"$work/base/operator-token"
render=$work/render
/usr/bin/python3 "$SOURCE_DIR/deploy/k8s/podman/render.py" "$work/base" "$render" \
  --suffix="$run_id" --image="ringside=$RINGSIDE_TEST_IMAGE" 2>"$work/render.log" ||
  { cat "$work/render.log" >&2; die "deploy/k8s/podman/render.py failed on the base"; }

# What it does not apply it refuses, rather than render something else: a patch, say.
cp -r "$work/base" "$work/patched"
printf 'patches:\n  - path: worker-patch.yaml\n' >>"$work/patched/kustomization.yaml"
if /usr/bin/python3 "$SOURCE_DIR/deploy/k8s/podman/render.py" "$work/patched" "$work/refused" \
    --suffix="$run_id" >"$work/refused.log" 2>&1; then
  die "render.py rendered a base with a patch it does not apply"
fi
grep -q "does not apply: \['patches'\]" "$work/refused.log" ||
  die "render.py refused a patched base without naming the field: $(cat "$work/refused.log")"

# pods.tsv: one line per container (see render.py).
declare -a files aliases pods components containers ready_ports metrics_ports
while IFS=$'\t' read -r file alias pod component _ container ready metrics; do
  files+=("$file") aliases+=("$alias") pods+=("$pod") components+=("$component")
  containers+=("$container") ready_ports+=("$ready") metrics_ports+=("$metrics")
done <"$render/pods.tsv"
job_value() { sed -n "s/^$1=//p" "$work/base/job.env"; }
workers=$(job_value RINGSIDE_WORKERS) shards=$(job_value RINGSIDE_PS_SHARDS)
count() {
  local n=0 c
  for c in "${components[@]}"; do [ "$c" = "$1" ] && n=$((n + 1)); done
  echo $n
}
[ "$(count worker)" = "$workers" ] && [ "$(count ps)" = "$shards" ] &&
  [ "$(count controller)" = 1 ] ||
  die "rendered $(count controller) controller, $(count ps) shard and $(count worker) worker \
containers; job.env asks for $shards shards and $workers workers"

net=ringside-kube-$run_id
make_network "$net"
# Everything kube play makes carries the run's suffix: pods (their containers go with them;
# killed at once, a graceful stop proves nothing here and a worker mid-step can take its
# collective deadline to stop), the claim's volume, the emptyDir volumes (named after their pods).
on_exit 'podman volume ls -q --filter "name=$run_id" | xargs -r podman volume rm -f'
on_exit 'podman pod ls -q --filter "name=$run_id" | xargs -r podman pod rm -f -t 0'

show_state() {
  local pod
  for pod in $(printf '%s\n' "${pods[@]}" | sort -u); do
    podman pod inspect --format "--- pod $pod: {{.State}}" "$pod" 2>&1
  done
  local i
  for i in "${!containers[@]}"; do
    podman inspect --format '--- {{.Name}}: {{.State.Status}} (exit {{.State.ExitCode}})' \
      "${containers[i]}" 2>&1
    podman logs --tail 8 "${containers[i]}" 2>&1 | sed 's/^/    /'
  done
}
diagnose=show_state

start=$SECONDS
for file in $(printf '%s\n' "${files[@]}" | sort -u); do
  for i in "${!files[@]}"; do [ "${files[i]}" = "$file" ] && alias=${aliases[i]}; done
  podman kube play --network "$net:alias=${alias//,/,alias=}" "$render/$file" \
    >"$work/play.log" 2>&1 ||
    { cat "$work/play.log" >&2; die "podman kube play $file failed"; }
done
note "played $(printf '%s\n' "${files[@]}" | sort -u | wc -l) files in $((SECONDS - start)) s \
on network $net"

all_running() {
  local pod i state
  for pod in $(printf '%s\n' "${pods[@]}" | sort -u); do
    state=$(podman pod inspect --format '{{.State}}' "$pod") || return 1
    [ "$state" = Running ] || { echo "pod $pod: $state"; return 1; }
  done
  for i in "${!containers[@]}"; do
    state=$(podman inspect --format '{{.State.Status}}' "${containers[i]}") || return 1
    [ "$state" = running ] || { echo "${containers[i]}: $state"; return 1; }
  done
}
wait_for 120 "every pod and container Running" all_running
for container in "${containers[@]}"; do
  security=$(podman inspect --format '{{.Config.User}} {{.HostConfig.ReadonlyRootfs}}' "$container")
  [ "$security" = "10001:10001 true" ] ||
    die "$container runs with user and read-only root '$security', not the manifests' \
'10001:10001 true'"
done
note "every pod Running: $(printf '%s\n' "${pods[@]}" | sort -u | tr '\n' ' ')"

# The readiness probes' check (Podman 4.3 ignores gRPC probes): plaintext gRPC health on the
# probe's port, from inside the container as the kubelet's probe would reach it.
all_ready() {
  local i answer
  for i in "${!containers[@]}"; do
    answer=$(podman exec "${containers[i]}" ringside health \
      --address="127.0.0.1:${ready_ports[i]}" --insecure --timeout=2s 2>&1) || true
    [ "$answer" = SERVING ] || { echo "${containers[i]}: $answer"; return 1; }
  done
}
wait_for 300 "every readiness probe's check (ringside health) SERVING" all_ready
note "every readiness check SERVING"

# Metrics as Prometheus would scrape them: the pod's address on the network, the annotated port.
pod_ip() {
  local infra
  infra=$(podman pod inspect --format '{{.InfraContainerID}}' "$1") &&
    podman inspect --format "{{(index .NetworkSettings.Networks \"$net\").IPAddress}}" "$infra"
}
metric() { # metric INDEX NAME: the sum of NAME's series at container INDEX
  local ip
  ip=$(pod_ip "${pods[$1]}") || return 1
  curl -sf -m 5 "http://$ip:${metrics_ports[$1]}/metrics" |
    awk -v name="$2" '$1 == name || index($1, name "{") == 1 { s += $NF; n++ }
                      END { if (!n) exit 1; printf "%d\n", s }'
}
controller=
for i in "${!components[@]}"; do [ "${components[i]}" = controller ] && controller=$i; done

# The controller sees every member: its current topology holds job.env's shards and workers,
# each member registered under its pod DNS name, and its world size is the workers'.
topology() {
  local line
  line=$(podman logs "${containers[controller]}" 2>&1 | grep 'controller: generation ' | tail -n1)
  grep -q ", $workers workers, $shards shards, mode " <<<"$line" ||
    { echo "last: $line"; return 1; }
}
wait_for 300 "the controller's topology with $workers workers and $shards shards" topology
registered=$(podman logs "${containers[controller]}" 2>&1 | grep 'controller: member .* registered')
for i in "${!components[@]}"; do
  [ "${components[i]}" = controller ] && continue
  dns=${aliases[i]##*,} # the pod's own name under its headless Service
  grep -qF "registered (\"$dns:${ready_ports[i]}\"" <<<"$registered" ||
    die "the controller has no member registered as $dns:${ready_ports[i]}: $registered"
done
world() { [ "$(metric "$controller" ringside_world_size)" = "$workers" ]; }
wait_for 120 "the controller's ringside_world_size at $workers" world
note "the controller sees $workers workers and $shards shards, each by its pod DNS name"

# Training: every worker's step counter moves past where it is now.
declare -A before
for i in "${!components[@]}"; do
  [ "${components[i]}" = worker ] || continue
  wait_for 300 "${pods[i]} reports ringside_steps_total" metric "$i" ringside_steps_total
  before[$i]=$(metric "$i" ringside_steps_total)
done
advanced() {
  local now
  now=$(metric "$1" ringside_steps_total) || return 1
  ((now > ${before[$1]}))
}
for i in "${!before[@]}"; do
  wait_for 180 "${pods[i]}'s ringside_steps_total above ${before[$i]}" advanced "$i"
done
note "every worker trains (ringside_steps_total grows: $(for i in "${!before[@]}"; do
  printf '%s ' "${pods[i]%-"$run_id"}=$(metric "$i" ringside_steps_total)"; done))"

# The link probe from inside the controller's pod, to every worker by its pod DNS name (the
# workers serve it with the join token as its secret): each member's link is measured and each
# profiles itself.
targets=
for i in "${!components[@]}"; do
  [ "${components[i]}" = worker ] && targets+="${targets:+,}${aliases[i]##*,}:${ready_ports[i]}"
done
podman exec "${containers[controller]}" ringside plan --probe_targets="$targets" \
  --probe_token_file=/etc/ringside/join-token/token --insecure --workers="$workers" \
  --ps_shards="$shards" --probe_out=/tmp/probe.json >"$work/plan.log" 2>&1 ||
  { cat "$work/plan.log" >&2; die "ringside plan --probe_targets in the controller's pod failed"; }
podman exec "${containers[controller]}" cat /tmp/probe.json >"$work/probe.json" ||
  die "the controller's pod holds no /tmp/probe.json"
/usr/bin/python3 - "$work/probe.json" "$workers" <<'CHECK' || die "the probe file misses a member's link or profile"
import json, sys
probe = json.load(open(sys.argv[1]))
links = probe["links"]
assert len(links) == int(sys.argv[2]), links
for link in links:
    assert link["bytes_per_second"] > 0 and link["compute_seconds_per_sample"] > 0, link
    assert link["usable_cores"] > 0 and link["device"], link
CHECK
note "plan --probe_targets: $workers workers' links probed and each profiled, from the controller's pod"

# A rolling restart as Kubernetes makes one, each pod in turn (every worker, then every shard,
# then the controller) while the job trains (ring mode): stopped with SIGTERM and its
# manifest's terminationGracePeriodSeconds (`podman stop -t`), it must exit 0 having logged
# its leave; the pod is removed with its emptyDir and played again from its file, so a new pod
# of the same name and DNS aliases (a new address, as a StatefulSet re-creates a pod), which
# must turn SERVING and take part: its own metrics show a generation after its leave. The
# workers' logs then show the job's step never going back, and the controller's that each stop
# was a leave, no member dropped for its heartbeat timeout (job_progress.py).
rolling_start=$SECONDS
gone=$work/gone
mkdir -p "$gone"
controller_lines=$(podman logs "${containers[controller]}" 2>&1 | wc -l) # before the restart
# What a pod's play file says of it: its grace period, then its emptyDir volumes' names.
pod_facts() {
  /usr/bin/python3 - "$render/$1" <<'PY'
import sys, yaml
workload = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d][-1]
spec = workload["spec"] if workload["kind"] == "Pod" else workload["spec"]["template"]["spec"]
print(spec.get("terminationGracePeriodSeconds", 30),
      *[v["name"] for v in spec.get("volumes", []) if "emptyDir" in v])
PY
}
# The play file again without its claims: Podman 4.3 refuses a claim whose volume exists (4.4
# reuses it), and the claim's volume is what the new pod must find (the controller's record).
without_claims() {
  /usr/bin/python3 - "$render/$1" "$2" <<'PY'
import sys, yaml
documents = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
with open(sys.argv[2], "w") as f:
    yaml.safe_dump_all([d for d in documents if d["kind"] != "PersistentVolumeClaim"], f,
                       sort_keys=False)
PY
}
serving() {
  [ "$(podman exec "${containers[$1]}" ringside health --address="127.0.0.1:${ready_ports[$1]}" \
      --insecure --timeout=2s 2>&1)" = SERVING ]
}
running() {
  [ "$(podman inspect --format '{{.State.Status}}' "${containers[$1]}" 2>/dev/null)" = running ]
}
# replace INDEX SAID: stops container INDEX's pod, checks its exit and that its log says SAID,
# and plays the pod again; its old log is kept as $gone/CONTAINER.log.
replace() {
  local i=$1 said=$2 facts grace code volume
  local pod=${pods[$1]} container=${containers[$1]} log=$gone/${containers[$1]}.log
  facts=$(pod_facts "${files[i]}") || die "cannot read ${files[i]}"
  read -r -a facts <<<"$facts"
  grace=${facts[0]}
  # The container, not the pod: `podman pod stop` stops the infra container, and with it the
  # pod's network, beside it, so the leave finds no network (the kubelet keeps a pod's
  # sandbox until its containers have exited).
  podman stop -t "$grace" "$container" >"$work/stop.log" 2>&1 ||
    { cat "$work/stop.log" >&2; die "podman stop $container failed"; }
  code=$(podman inspect --format '{{.State.ExitCode}}' "$container")
  podman logs "$container" >"$log" 2>&1
  [ "$code" = 0 ] || { tail -n 20 "$log" >&2; die "$container exited $code on SIGTERM, not 0"; }
  grep -q "$said" "$log" || { tail -n 20 "$log" >&2; die "$container's log does not say '$said'"; }
  podman pod rm -f -t 0 "$pod" >/dev/null || die "podman pod rm $pod failed"
  for volume in "${facts[@]:1}"; do # a new pod's emptyDir starts empty
    ! podman volume exists "$volume" || podman volume rm "$volume" >/dev/null ||
      die "podman volume rm $volume ($pod's emptyDir) failed"
  done
  without_claims "${files[i]}" "$work/replay.yaml"
  podman kube play --network "$net:alias=${aliases[i]//,/,alias=}" "$work/replay.yaml" \
    >"$work/play.log" 2>&1 || { cat "$work/play.log" >&2; die "podman kube play $pod again failed"; }
  wait_for 120 "$container running again" running "$i"
  wait_for 300 "$container's readiness check SERVING again" serving "$i"
}
left_for() {
  sed -n 's/.*left the job, which goes on in generation \([0-9]*\) without it$/\1/p' \
    "$gone/${containers[$1]}.log" | tail -n 1
}
after_leave() { # after_leave INDEX GENERATION: its new process serves a later one, of every worker
  local now world
  now=$(metric "$1" ringside_generation) && world=$(metric "$1" ringside_world_size) || return 1
  ((now > $2 && world == workers))
}
order=()
for component in worker ps; do
  for i in "${!components[@]}"; do [ "${components[i]}" = $component ] && order+=("$i"); done
done
for i in "${order[@]}"; do
  generation_before=$(metric "$controller" ringside_generation)
  replace "$i" 'stopped by signal 15; left the job, which goes on in generation'
  left=$(left_for "$i")
  [ -n "$left" ] && ((left > generation_before)) ||
    die "${containers[i]}'s leave named generation '$left', not one after $generation_before"
  wait_for 180 "${pods[i]}'s new process in a generation after its leave ($left) with \
$workers workers" after_leave "$i" "$left"
  note "replaced ${pods[i]%-"$run_id"}: it left for generation $left; its new process is in \
generation $(metric "$i" ringside_generation)"
done
saved=$(metric "$controller" ringside_generation)
replace "$controller" 'controller: stopped by signal 15 at generation .*; its membership record is saved'
resumed() { podman logs "${containers[controller]}" 2>&1 | grep -q '^controller: resumed generation '; }
wait_for 180 "the new controller resumes the job from its membership record" resumed
resumed_at=$(podman logs "${containers[controller]}" 2>&1 |
  sed -n 's/^controller: resumed generation \([0-9]*\) .*/\1/p')
((resumed_at >= saved)) ||
  die "the new controller resumed generation $resumed_at, older than the job's $saved"
for i in "${!before[@]}"; do
  before[$i]=$(metric "$i" ringside_steps_total) || die "no metrics from ${pods[i]}"
done
for i in "${!before[@]}"; do
  wait_for 180 "${pods[i]}'s ringside_steps_total above ${before[$i]} after the controller's \
replacement" advanced "$i"
done
note "replaced the controller: it resumed generation $resumed_at; every worker trains on"

# The end: every worker in the controller's generation, and their logs, the leavers' with them.
at_controllers() {
  local final i
  final=$(metric "$controller" ringside_generation) || return 1
  for i in "${!before[@]}"; do
    [ "$(metric "$i" ringside_generation)" = "$final" ] || return 1
  done
}
wait_for 120 "every worker in the controller's generation" at_controllers
final=$(metric "$controller" ringside_generation)
current=()
for i in "${!before[@]}"; do
  podman logs "${containers[i]}" >"$work/${containers[i]}.now.log" 2>&1
  current+=("$work/${containers[i]}.now.log")
done
gone_workers=()
for i in "${!before[@]}"; do gone_workers+=("$gone/${containers[i]}.log"); done
tail -n "+$((controller_lines + 1))" "$gone/${containers[controller]}.log" \
  >"$work/controller.rolling.log"
podman logs "${containers[controller]}" >"$work/controller.now.log" 2>&1
progress=$(/usr/bin/python3 "$SOURCE_DIR/tests/containers/job_progress.py" --final "$final" \
  --current "${current[@]}" --gone "${gone_workers[@]}" \
  --controller "$work/controller.rolling.log" "$work/controller.now.log" --leaves "${#order[@]}") ||
  die "the workers' logs do not show a job that never restarted (above)"
note "rolling restart in $((SECONDS - rolling_start)) s; the workers' logs: $progress"
echo "container_kube: ok ($((SECONDS - start)) s from the first play)"
