#!/usr/bin/env bash
# ctest fixture container_image: checks that Podman can run a container here, makes the local
# Debian base image (deploy/podman/make-base-image.sh), builds deploy/docker/Dockerfile (the
# CPU image) as RINGSIDE_TEST_IMAGE and deploy/prometheus/Dockerfile (Prometheus from Debian's
# package, for the compose cluster) as RINGSIDE_TEST_PROMETHEUS_IMAGE. Podman's layer cache makes a rebuild of unchanged sources
# cheap; the build's long log is kept in a file and only its tail is shown on failure.
source "$(dirname "$0")/lib.sh"
set_budget "${RINGSIDE_CONTAINER_BUDGET:-1500}"
[ -n "${RINGSIDE_TEST_IMAGE:-}" ] || die "RINGSIDE_TEST_IMAGE is not set"
[ -n "${RINGSIDE_TEST_PROMETHEUS_IMAGE:-}" ] || die "RINGSIDE_TEST_PROMETHEUS_IMAGE is not set"

"$SOURCE_DIR/deploy/podman/make-base-image.sh" 2>"$work/base.log" ||
  { tail -n 30 "$work/base.log" >&2; die "could not make the local debian:12 base image"; }

# Podman can run a container here: the smallest real one, on the base image just made.
probe=ringside-probe-$run_id
on_exit podman rm -f "$probe"
out=$(podman run --name "$probe" --pull=never --network=none localhost/debian:12 echo ran 2>&1) ||
  die "podman cannot run a container here (with $CONTAINERS_CONF): $out"
[ "$out" = ran ] || die "the probe container printed '$out', not 'ran'"

start=$SECONDS
if ! podman build --pull=never --layers -f "$SOURCE_DIR/deploy/docker/Dockerfile" \
    --ignorefile "$SOURCE_DIR/deploy/docker/Dockerfile.dockerignore" \
    -t "$RINGSIDE_TEST_IMAGE" "$SOURCE_DIR" >"$work/build.log" 2>&1; then
  tail -n 60 "$work/build.log" >&2
  die "podman build of deploy/docker/Dockerfile failed (the log's last 60 lines above)"
fi
cached=$(grep -c -- '--> Using cache' "$work/build.log" || true)
size=$(podman image inspect --format '{{.Size}}' "$RINGSIDE_TEST_IMAGE")
note "built $RINGSIDE_TEST_IMAGE in $((SECONDS - start)) s ($cached steps from the layer cache)"
note "runtime image size: $((size / 1000000)) MB ($size bytes)"
# Kept lean: the runtime stage holds the shared libraries and the four binaries, no toolchain.
limit_mb=${RINGSIDE_IMAGE_LIMIT_MB:-400}
((size / 1000000 <= limit_mb)) ||
  die "the runtime image is $((size / 1000000)) MB, over $limit_mb MB: did a build tool reach it?"
podman run --rm --network=none "$RINGSIDE_TEST_IMAGE" sh -c 'command -v c++ cmake' &&
  die "the runtime image holds a compiler or cmake"

start=$SECONDS
podman build --pull=never --layers -f "$SOURCE_DIR/deploy/prometheus/Dockerfile" \
    -t "$RINGSIDE_TEST_PROMETHEUS_IMAGE" "$SOURCE_DIR/deploy/prometheus" >"$work/prom.log" 2>&1 ||
  { tail -n 30 "$work/prom.log" >&2; die "podman build of deploy/prometheus/Dockerfile failed"; }
version=$(podman run --rm --network=none "$RINGSIDE_TEST_PROMETHEUS_IMAGE" --version 2>&1 | head -n1)
grep -q '^prometheus, version 2\.' <<<"$version" ||
  die "$RINGSIDE_TEST_PROMETHEUS_IMAGE --version printed '$version'"
note "built $RINGSIDE_TEST_PROMETHEUS_IMAGE in $((SECONDS - start)) s: $version"
echo "container_image: ok"
