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
only=${ONLY:-tests,bench,compare}  # and lab: the overlap measurement below
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
if [[ $only == *lab* ]]; then
  # Sync overlapped with the backward pass on shaped links, with cores enough that the sync's CPU
  # work does not slow the compute: calibrate without overlap, then the batch at which the
  # ring's sync is ${LAB_RATIO:-0.3} of its compute, each without and with --bucket_bytes.
  # Two BLAS threads a worker: 8 of the 16 cores compute, the rest serve the sync, the shards and
  # gRPC, as separate hosts' spare cores would.
  export OPENBLAS_NUM_THREADS=${LAB_BLAS_THREADS:-2}
  # ringside lab runs iproute2 from /usr/sbin or /sbin only; the GPU machine is a throwaway root.
  for tool in ip tc; do [[ -x /usr/sbin/$tool || -x /sbin/$tool ]] || cp "$bundle/sbin/$tool" /usr/sbin/; done
  lab="--link_rate=${LAB_RATE:-1gbit} --model=784,1024,1024,10 --data=synthetic:16384 --workers=4
       --ps_shards=2 --steps=8 --eval_every=1000 --device=${LAB_DEVICE:-cpu}"
  summary() { python3 -c "
import json,sys
j=json.load(open(sys.argv[1]))
for m in ('ring','ps'):
    d=j['modes'][m]
    print('  %s: step %.3f compute %.3f sync %.3f overlap %.2f bytes %.4f' % (m, d['step_seconds']['p50'],
          d['compute_seconds']['p50'], d['sync_seconds']['p50'], d.get('overlap_share') or 0,
          d['bytes_per_worker_per_step']['measured'] / max(1, d['bytes_per_worker_per_step']['expected'])))
" "$1"; }
  timeout 150 "$bin/ringside" lab $lab --batch_size=8192 --bucket_bytes=0 --json="$out/lab-cal.json" \
      > "$out/lab-cal.log" 2>&1 || { echo "lab calibration failed"; tail -5 "$out/lab-cal.log"; exit 1; }
  echo "== lab calibration, batch 8192"; summary "$out/lab-cal.json"
  batch=$(python3 -c "
import json; d=json.load(open('$out/lab-cal.json'))['modes']['ring']
print(min(16384, max(256, int(round(8192*d['sync_seconds']['p50']/(${LAB_RATIO:-0.3}*d['compute_seconds']['p50'])/256))*256)))")
  for run in ${LAB_RUNS:-1 2}; do
    for b in 0 1048576; do
      echo "== lab batch $batch, --bucket_bytes=$b, run $run"
      timeout 150 "$bin/ringside" lab $lab --batch_size=$batch --bucket_bytes=$b \
          --json="$out/lab-$b-$run.json" > "$out/lab-$b-$run.log" 2>&1 && summary "$out/lab-$b-$run.json"
    done
  done
fi
