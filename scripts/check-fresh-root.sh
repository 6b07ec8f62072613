#!/usr/bin/env bash
# Proves scripts/setup-debian.sh on a fresh machine: makes a fresh Debian 12 root
# (debootstrap --variant=minbase), runs the set-up script in it, then scripts/check-runtime.sh
# --owners there, so a package this machine happens to have cannot hide a missing one.
# Usage (root; reaches the Debian mirror this machine's apt uses):
#   scripts/check-fresh-root.sh [--keep DIR]
# Takes several minutes (the download of every package). Everything it mounts and makes is
# removed on every exit path unless --keep names a directory to leave the root in.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
keep=
[ "${1:-}" = --keep ] && keep=${2:?--keep needs a directory}
[ "$(id -u)" -eq 0 ] || { echo "check-fresh-root: run as root (debootstrap, chroot)" >&2; exit 1; }
command -v debootstrap >/dev/null ||
  { echo "check-fresh-root: needs debootstrap (apt-get install debootstrap)" >&2; exit 1; }

# The mirror this machine's apt already uses (deb822 sources or the classic list).
mirror=$(grep -hoE '^URIs: *http[^ ]+/debian/?$' /etc/apt/sources.list.d/*.sources 2>/dev/null |
         head -1 | sed 's/^URIs: *//')
[ -n "$mirror" ] || mirror=$(grep -hoE '^deb +http[^ ]+/debian/? ' /etc/apt/sources.list 2>/dev/null |
                             head -1 | awk '{print $2}')
mirror=${mirror:-http://deb.debian.org/debian}

root=${keep:-$(mktemp -d -t ringside-fresh-root-XXXXXX)}
mounts=()
cleanup() {
  for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do umount -l "${mounts[i]}" 2>/dev/null || true; done
  [ -z "$keep" ] && rm -rf --one-file-system "$root"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "check-fresh-root: debootstrap --variant=minbase bookworm $root $mirror" >&2
debootstrap --variant=minbase bookworm "$root" "$mirror" >"$root.debootstrap.log" 2>&1 ||
  { tail -20 "$root.debootstrap.log" >&2; exit 1; }
rm -f "$root.debootstrap.log"
# The repository as a fresh clone has it: tracked files only.
mkdir -p "$root/src"
git -C "$repo" ls-files -z | (cd "$repo" && xargs -0 cp --parents -t "$root/src")
cp /etc/resolv.conf "$root/etc/resolv.conf"
# The root trusts what this machine trusts (a TLS-inspecting proxy's CA, say), so its package
# clients reach the registries as this machine's do; ca-certificates picks these up when the
# set-up installs it. Node reads only its own roots unless told otherwise.
mkdir -p "$root/usr/local/share/ca-certificates"
cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/" 2>/dev/null || true
node_ca=()
[ -n "${NODE_EXTRA_CA_CERTS:-}" ] && node_ca=(NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt)
for fs in proc sys dev; do
  mount --bind "/$fs" "$root/$fs"
  mounts+=("$root/$fs")
done

echo "check-fresh-root: scripts/setup-debian.sh in the fresh root" >&2
chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root "${node_ca[@]}" \
  bash /src/scripts/setup-debian.sh
echo "check-fresh-root: scripts/check-runtime.sh --owners in the fresh root" >&2
chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
  bash /src/scripts/check-runtime.sh --owners
