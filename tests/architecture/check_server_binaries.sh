#!/bin/sh
# The controller and the shard must not carry the trainer: no OpenBLAS among their shared
# libraries and no training-loop symbol linked in. Usage: check_server_binaries.sh BINARY...
set -u
status=0
for binary in "$@"; do
  if [ ! -x "$binary" ]; then
    echo "FAIL: $binary is missing; build it first (make build)"; status=1; continue
  fi
  if readelf -d "$binary" | grep -i 'NEEDED.*blas'; then
    echo "FAIL: $binary links a BLAS library; it must not link the trainer (worker/)"; status=1
  fi
  trainer_symbols=$(nm -C "$binary" | grep -c 'TrainDataParallel\|TrainingJob::\|ElasticTrainer::')
  if [ "$trainer_symbols" -ne 0 ]; then
    echo "FAIL: $binary contains $trainer_symbols trainer symbols (worker/ linked in)"; status=1
  fi
  [ $status -eq 0 ] && echo "ok: $binary links neither OpenBLAS nor the trainer"
done
exit $status
