#!/bin/sh
# The Dockerfile's build step (both variants): configure with the toolchain stage's
# RINGSIDE_CMAKE_FLAGS, build only what the image ships, and put it in /out.
set -eu
cmake -S . -B /build -DCMAKE_BUILD_TYPE=Release ${RINGSIDE_CMAKE_FLAGS}
cmake --build /build -j "$(nproc)" --target ringside ringside-controller ringside-ps ringside-worker
mkdir -p /out
cp /build/bin/ringside /build/bin/ringside-controller /build/bin/ringside-ps \
  /build/bin/ringside-worker /out/
if [ -f /build/bin/libringside_cuda.so ]; then cp /build/bin/libringside_cuda.so /out/; fi
