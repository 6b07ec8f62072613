#!/usr/bin/env bash
# Packs what a GPU machine without Debian's libraries needs to run this build's CUDA checks
# (scripts/device-check.sh): stripped binaries and test binaries, the CUDA plug-in, and every
# shared library they load except glibc's and the C++ runtime's own, which the GPU machine's newer
# system provides (a carried older libc would not load under its newer dynamic loader).
# Usage: scripts/device-bundle.sh BUILD_DIR OUT_DIR   (OUT_DIR is emptied first)
set -euo pipefail
build=${1:?usage: device-bundle.sh BUILD_DIR OUT_DIR}
out=${2:?usage: device-bundle.sh BUILD_DIR OUT_DIR}
[[ -f "$build/bin/libringside_cuda.so" ]] || { echo "no $build/bin/libringside_cuda.so: CUDA was not built" >&2; exit 1; }
rm -rf "$out" && mkdir -p "$out/bin"
binaries=("$build"/bin/ringside "$build"/bin/ringside-worker "$build"/bin/ringside-ps
          "$build"/bin/ringside-controller "$build"/bin/ringside-bench
          "$build"/tests/worker_compute_test "$build"/tests/worker_elastic_test)
for b in "${binaries[@]}" "$build/bin/libringside_cuda.so"; do strip -o "$out/bin/$(basename "$b")" "$b"; done
# `ringside lab` there needs iproute2's ip and tc and iptables (xtables-nft-multi, which acts as
# the name it is run by, with its extensions), which a bare GPU machine may lack.
tools=(/usr/sbin/ip /usr/sbin/tc /usr/sbin/xtables-nft-multi)
mkdir -p "$out/sbin" && cp "${tools[@]}" "$out/sbin/"
mv "$out/sbin/xtables-nft-multi" "$out/sbin/iptables"
tar czf "$out/xtables.tgz" -C /usr/lib/x86_64-linux-gnu xtables
ldd "${binaries[@]}" "${tools[@]}" | awk '/=> \//{print $3}' | sort -u |
  grep -Ev '/(libc|libm|libpthread|libdl|librt|ld-linux-x86-64|libstdc\+\+|libgcc_s)\.so' > "$out/libs.txt"
tar czhf "$out/libs.tgz" -T "$out/libs.txt" 2>/dev/null
du -sh "$out"
