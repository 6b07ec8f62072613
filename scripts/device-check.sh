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
only=,${ONLY:-tests,bench,compare},  # and lab, gpulab: the overlap measurements below
nvidia-smi -L; nproc
# ringside lab runs iproute2 and iptables from /usr/sbin or /sbin only; the GPU machine is a
# throwaway root. The bundle's iptables finds its extensions through XTABLES_LIBDIR.
install_lab_tools() {
  for tool in ip tc iptables; do
    [[ -x /usr/sbin/$tool || -x /sbin/$tool ]] || cp "$bundle/sbin/$tool" /usr/sbin/
  done
  if [[ ! -d /usr/lib/x86_64-linux-gnu/xtables ]]; then
    mkdir -p /tmp/devxtables && tar xzf "$bundle/xtables.tgz" -C /tmp/devxtables
    export XTABLES_LIBDIR=/tmp/devxtables/xtables
  fi
}
# A lab or compare JSON's two modes, a line each: p50s of step, compute and sync (seconds), the
# step over the larger of the two, the overlapped share, and measured/expected bytes.
summary() { python3 -c "
import json,sys
j=json.load(open(sys.argv[1]))
for m in ('ring','ps'):
    d=j['modes'][m]; c=d['compute_seconds']['p50']; s=d['sync_seconds']['p50']; t=d['step_seconds']['p50']
    b=d['bytes_per_worker_per_step']
    print('  %s: step %.4f compute %.4f sync %.4f step/max %.3f overlap %.2f bytes %.4f' % (m, t, c,
          s, t / max(c, s), d.get('overlap_share') or 0, b['measured'] / max(1, b['expected'])))
" "$1"; }
if [[ $only == *,tests,* ]]; then
echo "== worker_compute_test"; "$bin/worker_compute_test" --gtest_brief=1 2>&1 | tail -6
echo "== worker_elastic_test (${ELASTIC_FILTER:-*})"
"$bin/worker_elastic_test" --gtest_brief=1 --gtest_filter="${ELASTIC_FILTER:-*}" 2>&1 | tail -6
fi
if [[ $only == *,bench,* ]]; then
  for run in 1 2 3; do
    echo "== ringside-bench compute, run $run"; "$bin/ringside-bench" compute --json="$out/compute-$run.json" 2>&1 | tail -8
  done
fi
if [[ $only == *,compare,* ]]; then
for b in 0 1048576; do
  echo "== compare on cuda, --bucket_bytes=$b"
  "$bin/ringside" compare --model=784,1024,1024,10 --data=synthetic:4096 --steps=30 --batch_size=256 \
      --workers=2 --ps_shards=1 --device=cuda --insecure --bucket_bytes=$b \
      --json="$out/compare-$b.json" > "$out/compare-$b.log" 2>&1
  echo "rc $?"; grep -E "device|step time p50|compute/sync|overlapped|final loss|parity" "$out/compare-$b.log" | head -12
done
fi
if [[ $only == *,lab,* ]]; then
  # Sync overlapped with the backward pass on shaped links, with cores enough that the sync's CPU
  # work does not slow the compute: calibrate without overlap, then the batch at which the
  # ring's sync is ${LAB_RATIO:-0.3} of its compute, each without and with --bucket_bytes.
  # Two BLAS threads a worker: 8 of the 16 cores compute, the rest serve the sync, the shards and
  # gRPC, as separate hosts' spare cores would.
  export OPENBLAS_NUM_THREADS=${LAB_BLAS_THREADS:-2}
  install_lab_tools
  lab="--link_rate=${LAB_RATE:-1gbit} --model=784,1024,1024,10 --data=synthetic:16384 --workers=4
       --ps_shards=2 --steps=${LAB_STEPS:-8} --eval_every=1000 --device=${LAB_DEVICE:-cpu}"
  timeout 150 "$bin/ringside" lab $lab --batch_size=8192 --bucket_bytes=0 --json="$out/lab-cal.json" \
      > "$out/lab-cal.log" 2>&1 || { echo "lab calibration failed"; tail -5 "$out/lab-cal.log"; exit 1; }
  echo "== lab calibration, batch 8192"; summary "$out/lab-cal.json"
  batch=$(python3 -c "
import json; d=json.load(open('$out/lab-cal.json'))['modes']['ring']
print(min(16384, max(256, int(round(8192*d['sync_seconds']['p50']/(${LAB_RATIO:-0.3}*d['compute_seconds']['p50'])/256))*256)))")
  for run in ${LAB_RUNS:-1 2}; do
    for b in 0 1048576; do
      echo "== lab batch $batch, --bucket_bytes=$b, run $run"; uptime
      timeout 150 "$bin/ringside" lab $lab --batch_size=$batch --bucket_bytes=$b \
          --json="$out/lab-$b-$run.json" > "$out/lab-$b-$run.log" 2>&1 && summary "$out/lab-$b-$run.json"
    done
  done
fi
if [[ $only == *,gpulab,* ]]; then
  # Sync overlapped with the backward pass on shaped links, the workers computing on the GPU, so
  # that the sync's CPU work (TLS, copies, sums) has the 16 cores to itself. A GPU's compute is
  # short, so the job is placed on the sync's side of "the same order": calibrate at the largest
  # batch, then move the link rate (or the batch, when even that is compute-heavy) until the
  # ring's sync is ${GPU_LAB_RATIO:-3} × its compute; then each without and with --bucket_bytes.
  install_lab_tools
  gpulab() { # RATE BATCH BUCKET_BYTES JSON
    timeout ${GPU_LAB_TIMEOUT:-90} "$bin/ringside" lab --link_rate=$1 --model=784,1024,1024,10 \
        --data=synthetic:16384 --workers=4 --ps_shards=2 --steps=${GPU_LAB_STEPS:-12} \
        --eval_every=1000 --device=${GPU_LAB_DEVICE:-cuda} --batch_size=$2 --bucket_bytes=$3 --json="$4" > "${4%.json}.log" 2>&1 ||
      { echo "lab failed: rc $?"; tail -8 "${4%.json}.log"; return 1; }
    summary "$4"; }
  uptime
  max_batch=${GPU_LAB_BATCH:-16384}
  if [[ -n ${GPU_LAB_RATE:-} ]]; then  # a rate chosen from an earlier calibration
    rate=$GPU_LAB_RATE batch=$max_batch
  else
    echo "== gpu lab calibration, 1gbit, batch $max_batch"
    gpulab 1gbit $max_batch 0 "$out/gpulab-cal.json" || exit 1
    read -r rate batch < <(python3 -c "
import json; d=json.load(open('$out/gpulab-cal.json'))['modes']['ring']
r=d['sync_seconds']['p50']/d['compute_seconds']['p50']; want=${GPU_LAB_RATIO:-3}
if r > want: print('%dmbit $max_batch' % min(10000, round(1000*r/want)))
else: print('1gbit %d' % max(256, round($max_batch*r/want/256)*256))")
  fi
  for run in ${GPU_LAB_RUNS:-1 2 3}; do
    for b in 0 1048576; do
      echo "== gpu lab $rate, batch $batch, --bucket_bytes=$b, run $run"; uptime
      gpulab "$rate" "$batch" "$b" "$out/gpulab-$b-$run.json"
    done
  done
fi
