#!/usr/bin/env bash
# On a GPU machine (the device tool), from the repository root, with the bundle that
# scripts/device-bundle.sh made in BUNDLE: the CUDA tests, ringside-bench compute, and a short
# compare on CUDA with and without --bucket_bytes. Results under ${OUT:-/tmp/device-out}.
set -uo pipefail
bundle=${1:?usage: device-check.sh BUNDLE}
out=${OUT:-/tmp/device-out}; mkdir -p "$out"
mkdir -p /tmp/devlibs && tar xzf "$bundle/libs.tgz" -C /tmp/devlibs
# Every folder the bundle's libraries came from (Debian keeps Gloo in /lib, most in its multiarch
# folders), then the GPU machine's own CUDA.
LD_LIBRARY_PATH=$(find /tmp/devlibs -name '*.so*' -printf '%h\n' | sort -u | paste -sd:)
export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:/usr/local/cuda/lib64:/usr/local/cuda/lib
export RINGSIDE_CUDA_MODULE=$PWD/$bundle/bin/libringside_cuda.so
bin=$bundle/bin
only=${ONLY:-tests,bench,compare}
nvidia-smi -L; nproc
if [[ $only == *tests* ]]; then
echo "== worker_compute_test"; "$bin/worker_compute_test" --gtest_brief=1 2>&1 | tail -6
echo "== worker_elastic_test (${ELASTIC_FILTER:-*})"
"$bin/worker_elastic_test" --gtest_brief=1 --gtest_filter="${ELASTIC_FILTER:-*}" 2>&1 | tail -6
fi
if [[ $only == *bench* ]]; then
  for run in 1 2 3; do
    echo "== ringside-bench compute, run $run"; "$bin/ringside-bench" compute --json="$out/compute-$run.json" 2>&1 | tail -8
  done
fi
if [[ $only == *compare* ]]; then
for b in 0 1048576; do
  echo "== compare on cuda, --bucket_bytes=$b"
  "$bin/ringside" compare --model=784,1024,1024,10 --data=synthetic:4096 --steps=30 --batch_size=256 \
      --workers=2 --ps_shards=1 --device=cuda --insecure --bucket_bytes=$b \
      --json="$out/compare-$b.json" > "$out/compare-$b.log" 2>&1
  echo "rc $?"; grep -E "device|step time p50|compute/sync|overlapped|final loss|parity" "$out/compare-$b.log" | head -12
done
fi
