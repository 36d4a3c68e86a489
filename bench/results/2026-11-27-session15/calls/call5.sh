#!/usr/bin/env bash
# Session 15 call 5 (1 H100): GEMM parity with offline retuning, keeping the tuning file it writes
# (UB_GEMM_TUNING_FILE under $OUT) so that a later call can run three alternating rounds on the retuned choices
# without retuning again (call 2's retune took 384 s of its one round, and its file stayed on the machine).
set -u
O=$OUT; B=$(cd "$(dirname "$0")" && pwd); start=$SECONDS
bash $B/java.sh -version > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader > $O/gpus.txt 2>&1
mkdir -p $O/parity
CUDA_VISIBLE_DEVICES=0 UB_GEMM_TUNING_FILE=$O/parity/gemm-tuning-retuned.properties OUT=$O/parity ALT_BUDGET_S=480 \
  timeout -k 10 500 bash $B/run-gpu.sh "parity=2 --iters 30 --heat-ms 300 --retune -- --iters 30 --heat-ms 300" > $O/parity.log 2>&1
echo "parity rc=$? t=$((SECONDS-start))" >> $O/times.txt
cat $O/gpus.txt $O/times.txt; tail -4 $O/parity.log | cut -c1-200; ls -la $O/parity
tar czf $O/call5.tgz -C $O gpus.txt times.txt parity parity.log 2>/dev/null
rm -rf $O/parity $O/*.log $O/gpus.txt $O/times.txt; ls $O
