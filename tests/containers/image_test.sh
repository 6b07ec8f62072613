#!/usr/bin/env bash
# The built image (issue 14, point 1): every binary runs inside it as the image's user 10001
# with a read-only root file system and no capabilities, and `ringside health` in one container
# reaches a controller in another over a network of this run's own.
source "$(dirname "$0")/lib.sh"
set_budget "${RINGSIDE_CONTAINER_BUDGET:-240}"
require_image
image=$RINGSIDE_TEST_IMAGE
# What every container here gets: the compose file's hardening.
locked=(--pull=never --read-only --cap-drop=ALL --security-opt=no-new-privileges)

# --help: absl exits 1 after printing usage, so the text is what is checked.
declare -A usage=(
  [ringside]="usage: ringside compare|lab|plan|up|ctl mode"
  [ringside-controller]="ringside-controller: assigns ranks"
  [ringside-ps]="ringside-ps: one parameter-server shard"
  [ringside-worker]="ringside-worker: computes gradients"
)
for binary in "${!usage[@]}"; do
  out=$(podman run --rm --network=none "${locked[@]}" "$image" "$binary" --help 2>&1 || true)
  grep -qF "${usage[$binary]}" <<<"$out" ||
    die "$binary --help in the image did not print '${usage[$binary]}': ${out:0:400}"
done
note "--help of ringside, ringside-controller, ringside-ps and ringside-worker: ok"

net=ringside-img-$run_id
make_network "$net"
ctl=ringside-img-ctl-$run_id
echo "token-$run_id" >"$work/join_token"
chmod 0644 "$work/join_token"  # read by user 10001 through the bind mount
on_exit podman rm -f "$ctl"
podman run -d --name "$ctl" --network "$net" "${locked[@]}" \
  -v "$work/join_token:/run/secrets/join_token:ro" "$image" \
  ringside-controller --insecure --listen=0.0.0.0:7000 --metrics_listen=0.0.0.0:9100 \
  --join_token_file=/run/secrets/join_token --workers=1 --ps_shards=0 >/dev/null ||
  die "could not start the controller container"

health() {
  podman run --rm --network "$net" "${locked[@]}" "$image" \
    ringside health --address="$1" --insecure --timeout=2s
}
serving() { [ "$(health "$1")" = SERVING ]; }
wait_for 60 "ringside health (another container) reports SERVING for $ctl:7000" serving "$ctl:7000"
# The check can fail: a name nothing answers on is not healthy.
if health "nobody-$run_id:7000" >"$work/neg.log" 2>&1; then
  die "ringside health reported a missing daemon as healthy: $(cat "$work/neg.log")"
fi
note "ringside health across containers: SERVING; a missing daemon: refused"

# The daemon runs as the image's user, on a root file system it cannot write.
uid=$(podman exec "$ctl" id -u) || die "podman exec id -u in $ctl failed"
[ "$uid" = 10001 ] || die "the controller runs as uid $uid, not the image's 10001"
if podman exec "$ctl" touch /usr/local/bin/written 2>/dev/null; then
  die "the root file system was writable despite --read-only"
fi
[ "$(podman inspect --format '{{.Config.User}}' "$image")" = "10001:10001" ] ||
  die "the image's USER is not 10001:10001"
podman ps --filter "name=^$ctl\$" --format '{{.Status}}' | grep -q '^Up' ||
  die "the controller container exited: $(podman logs --tail 20 "$ctl" 2>&1)"
echo "container_image_run: ok (image $image, $(($(podman image inspect \
  --format '{{.Size}}' "$image") / 1000000)) MB)"
