#!/usr/bin/env bash
# Session 15 call 6 (1 H100, the machine of call 5): GEMM parity, three alternating rounds on the choices call 5's
# retune kept (its tuning file, copied, so this run's own tuning writes do not touch the original).
set -u
O=$OUT; B=$(cd "$(dirname "$0")" && pwd); start=$SECONDS
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader > $O/gpus.txt 2>&1
mkdir -p $O/parity && cp $B/gemm-tuning-retuned.properties $O/parity/gemm-tuning.properties
CUDA_VISIBLE_DEVICES=0 UB_GEMM_TUNING_FILE=$O/parity/gemm-tuning.properties OUT=$O/parity ALT_BUDGET_S=330 \
  timeout -k 10 345 bash $B/run-gpu.sh "parity=3 --iters 30 --heat-ms 300 -- --iters 30 --heat-ms 300" > $O/parity.log 2>&1
echo "parity rc=$? t=$((SECONDS-start))" >> $O/times.txt
cat $O/gpus.txt $O/times.txt; tail -4 $O/parity.log | cut -c1-200
tar czf $O/call6.tgz -C $O gpus.txt times.txt parity parity.log 2>/dev/null
rm -rf $O/parity $O/*.log $O/gpus.txt $O/times.txt; ls $O
