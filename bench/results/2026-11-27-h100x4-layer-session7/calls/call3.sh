#!/usr/bin/env bash
# Session 7 call 3 (4x H100) at 127391f: the model-shape sweep at tp 2 (GPUs 0,1; the one-stream candidates first and
# the bidirectional rings among the candidates, never run at tp 2 before) beside GEMM parity with torch.matmul on
# GPU 3 (3 rounds, the sweep's per-rank GEMM shapes).
set -u
O=$OUT; B=$(cd "$(dirname "$0")" && pwd); start=$SECONDS
bash $B/java.sh -version > /dev/null 2>&1
(
  cd $O && ALT_BUDGET_S=540 timeout -k 10 570 bash $B/sweep-calls.sh tp2 > $O/sweep-call.log 2>&1
  echo "sweep rc=$? t=$((SECONDS-start))" >> $O/times.txt
) &
a=$!
(
  export PET_MASTER_PORT=29611
  CUDA_VISIBLE_DEVICES=3 OUT=$O/parity-run ALT_BUDGET_S=540 timeout -k 10 560 bash $B/run-gpu.sh "parity=3 --iters 30 --heat-ms 300 -- --iters 30 --heat-ms 300" > $O/parity.log 2>&1
  echo "parity rc=$? t=$((SECONDS-start))" >> $O/times.txt
) &
b=$!
wait $a $b
cat $O/times.txt
tail -30 $O/sweep-tp2-summary.txt 2>/dev/null
tail -20 $O/parity-run/log.txt 2>/dev/null
tar czf $O/parity.tgz -C $O parity.log parity-run 2>/dev/null
rm -rf $O/parity-run $O/sweep-work
