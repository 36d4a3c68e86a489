#!/usr/bin/env bash
# Session 15 call 2 (4 GPUs): the bf16 model-shape sweep at tp 2 on GPUs 0,1 beside PyTorch (alternating rounds,
# SWEEP_ITERS=20 so a round is a larger sample for tp2/plan-vs-sweep.txt); meanwhile GEMM parity with offline
# retuning (its first run on an H100) on GPU 3 and the layer kernels beside PyTorch's on GPU 2 (b090a01's GELU loop
# has not run on a GPU).
set -u
O=$OUT; B=$(cd "$(dirname "$0")" && pwd); start=$SECONDS
bash $B/java.sh -version > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader > $O/gpus.txt 2>&1
( CUDA_VISIBLE_DEVICES=3 OUT=$O/parity ALT_BUDGET_S=500 timeout -k 10 520 bash $B/run-gpu.sh \
    "parity=3 --iters 30 --heat-ms 300 --retune -- --iters 30 --heat-ms 300" > $O/parity.log 2>&1
  echo "parity rc=$? t=$((SECONDS-start))" >> $O/times.txt ) &
( CUDA_VISIBLE_DEVICES=2 OUT=$O/kernels ALT_BUDGET_S=300 timeout -k 10 320 bash $B/run-gpu.sh \
    "kernels=3 --iters 30 -- --iters 30" > $O/kernels.log 2>&1
  echo "kernels rc=$? t=$((SECONDS-start))" >> $O/times.txt ) &
(cd $O && SWEEP_ITERS=20 ALT_BUDGET_S=540 timeout -k 10 560 bash $B/sweep-calls.sh tp2 > $O/sweep.log 2>&1)
echo "sweep tp2 rc=$? t=$((SECONDS-start))" >> $O/times.txt
wait
cat $O/gpus.txt $O/times.txt; tail -25 $O/sweep-tp2-summary.txt 2>/dev/null | cut -c1-200
tail -5 $O/parity.log | cut -c1-200; tail -5 $O/kernels.log | cut -c1-200
tar czf $O/call2.tgz -C $O gpus.txt times.txt parity parity.log kernels kernels.log sweep.log 2>/dev/null
rm -rf $O/parity $O/kernels $O/*.log $O/gpus.txt $O/times.txt; ls $O
