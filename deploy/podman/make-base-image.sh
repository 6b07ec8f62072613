#!/usr/bin/env bash
# Makes the local Debian 12 base image the Dockerfiles build FROM, without any container
# registry: debootstrap a minimal bookworm from the machine's own Debian mirror, import it into
# Podman as localhost/debian:12 and tag it with the names the Dockerfiles use (debian:12-slim,
# debian:12, in both their short and docker.io forms), so `podman build --pull=never` finds it.
#
#   deploy/podman/make-base-image.sh            (needs root: debootstrap)
#
# Idempotent and cheap when the image exists: it then only adds missing tags. The mirror is the
# first Debian one in the machine's apt sources (override with RINGSIDE_DEBIAN_MIRROR).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export CONTAINERS_CONF=${CONTAINERS_CONF:-$here/containers.conf}
image=localhost/debian:12
tags=(localhost/debian:12-slim docker.io/library/debian:12 docker.io/library/debian:12-slim)

die() { echo "make-base-image.sh: $*" >&2; exit 1; }
command -v podman >/dev/null || die "podman is missing: run scripts/setup-debian.sh"

if ! podman image exists "$image"; then
  command -v debootstrap >/dev/null || die "debootstrap is missing: run scripts/setup-debian.sh"
  [ "$(id -u)" = 0 ] || die "debootstrap needs root to make $image (run it as root once)"
  mirror=${RINGSIDE_DEBIAN_MIRROR:-}
  if [ -z "$mirror" ]; then
    # deb822 (URIs: ...) and one-line (deb URL bookworm ...) sources; the first main archive.
    # (A source file may be missing: cat's status is not the answer.)
    mirror=$( (cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
                   /etc/apt/sources.list.d/*.sources 2>/dev/null || true) \
               | grep -oE 'https?://[^ ]+/debian/?( |$)' | head -n1 | tr -d ' ')
  fi
  [ -n "$mirror" ] || die "no Debian mirror in /etc/apt/sources*: set RINGSIDE_DEBIAN_MIRROR"
  rootfs=$(mktemp -d /var/tmp/ringside-rootfs.XXXXXX)
  trap 'rm -rf "$rootfs"' EXIT
  echo "make-base-image.sh: debootstrap bookworm from $mirror (about 90 s)" >&2
  debootstrap --variant=minbase bookworm "$rootfs" "$mirror" >"$rootfs.log" 2>&1 \
    || { tail -n 30 "$rootfs.log" >&2; rm -f "$rootfs.log"; die "debootstrap failed"; }
  rm -f "$rootfs.log"
  # What an official debian image has: the mirror (with security updates) and no apt cache.
  cat >"$rootfs/etc/apt/sources.list" <<SOURCES
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb ${mirror%/debian*}/debian-security bookworm-security main
SOURCES
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
  tar -C "$rootfs" -c . | podman import --quiet --change 'CMD ["/bin/bash"]' - "$image" >/dev/null
fi
for tag in "${tags[@]}"; do
  podman image exists "$tag" || podman tag "$image" "$tag"
done
echo "make-base-image.sh: $image ($(podman image inspect --format '{{.Size}}' "$image") bytes)" \
  "tagged ${tags[*]}" >&2
