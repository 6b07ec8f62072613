#!/usr/bin/env bash
# Installs the Debian 12 packages Ringside needs. Idempotent: prints nothing and touches nothing
# when every package is already present. Needs root (or sudo) only when something is missing.
#   setup-debian.sh build   what building and `ringside compare` need (make, make demo)
#   setup-debian.sh test    that and every tool a test calls (make test; the default)
#   setup-debian.sh --list  every package it may install, one a line
# Every program a test calls is listed in scripts/runtime-requirements.txt, and
# scripts/check-runtime.sh --owners checks that this list provides it (a ctest);
# scripts/check-fresh-root.sh runs this script in a fresh Debian 12 root and checks again there.
set -euo pipefail

# Building, and the demo's data.
build_packages=(
  build-essential cmake pkg-config make
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev prometheus-cpp-dev
  # the build configures the tests too (CMake finds GoogleTest), though the demo builds none
  libgtest-dev libgmock-dev
  libopenblas-dev nlohmann-json3-dev
  libssl-dev
  # the real data set of the heavy job (--data=fashion-mnist): Fashion-MNIST's IDX files, gzipped
  # (read through zlib, which gRPC and protobuf depend on too)
  dataset-fashion-mnist zlib1g-dev
)
# The tests' tools, on top.
test_packages=(
  # the ring benchmark's baseline (bench/, tests/bench)
  libgloo-dev
  curl procps iproute2 util-linux python3 gzip
  # the formatting check (tests/architecture): .clang-format is the project's style
  clang-format
  # the fuzz targets (tests/fuzz/): clang, and its libFuzzer and sanitizer runtimes
  clang libclang-rt-14-dev
  # the HTML report's browser test (tests/cli)
  chromium
  # deploy checks (tests/deploy): promtool and a real Prometheus, yamllint, docker-compose config;
  # openssl runs the deploy certificate scripts (deploy/tls/make-certs.sh)
  prometheus yamllint docker-compose openssl
  # container tests (tests/containers): Podman with runc, its bridge networks with name
  # resolution (netavark, aardvark-dns), the pods' init (catatonit), and debootstrap for the
  # local debian:12 base image (deploy/podman/make-base-image.sh); named explicitly because this
  # script installs without recommended packages
  # netavark calls iptables at run time without depending on it: every container network needs it
  podman buildah podman-compose runc netavark aardvark-dns catatonit debootstrap iptables
  # the Kubernetes base rendered for `podman kube play` (deploy/k8s/podman/render.py) and the
  # deploy checks' Python scripts read YAML; named, not left to docker-compose's dependencies
  python3-yaml
)
# Node.js runs the npm-based deploy checks; Debian's nodejs only where the machine has no node.
node_packages=(nodejs npm)
profile=${1:-test}
case $profile in
  --list)
    # scripts/check-runtime.sh reads it
    printf '%s\n' "${build_packages[@]}" "${test_packages[@]}" "${node_packages[@]}"
    exit 0
    ;;
  build) packages=("${build_packages[@]}") ;;
  test)
    packages=("${build_packages[@]}" "${test_packages[@]}")
    command -v node >/dev/null || packages+=("${node_packages[@]}")
    ;;
  *)
    echo "setup: unknown profile '$profile' (build, test or --list)" >&2
    exit 2
    ;;
esac
packages+=(${RINGSIDE_EXTRA_PACKAGES:-})

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

# The deploy checks' npm packages (tests/deploy/package-lock.json), installed with `npm ci` when
# node_modules is missing or was installed from another lock file. Tests never download.
npm_dir=$(cd "$(dirname "$0")/../tests/deploy" && pwd)
npm_ci() {
  local stamp=$npm_dir/node_modules/.ringside-lock.sha256
  local want
  want=$(sha256sum "$npm_dir/package-lock.json" | cut -d' ' -f1)
  [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && return 0
  echo "setup: npm ci in tests/deploy (deploy checks)" >&2
  local log
  log=$(mktemp)
  if ! (cd "$npm_dir" && npm ci --no-audit --no-fund >"$log" 2>&1); then
    echo "setup: npm ci in tests/deploy failed; its last lines:" >&2
    tail -20 "$log" | sed 's/^/  /' >&2
    rm -f "$log"
    return 1
  fi
  rm -f "$log"
  echo "$want" >"$stamp"
}

# The npm packages are the deploy checks': tests only.
npm_for_profile() { if [ "$profile" = test ]; then npm_ci; fi; }

if [ ${#missing[@]} -eq 0 ]; then
  npm_for_profile
  exit 0
fi

echo "setup: installing missing Debian packages: ${missing[*]}" >&2
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "setup: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo_cmd=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
npm_for_profile
