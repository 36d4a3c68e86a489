#!/usr/bin/env bash
# Session 16 call 3 (4 GPUs): the bf16 model-shape sweep at tp 4 beside PyTorch with 20 iterations a round (the
# default since 87a8296; the last tp 4 sweep, at fae6d5e, timed 10): issue 26's planner criterion and plan-vs-sweep
# agreement at tp 4 with the larger sample.
set -u
O=$OUT; B=$(cd "$(dirname "$0")" && pwd); start=$SECONDS
bash $B/java.sh -version > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader > $O/gpus.txt 2>&1
(cd $O && ALT_BUDGET_S=540 timeout -k 10 560 bash $B/sweep-calls.sh tp4 > $O/sweep.log 2>&1)
echo "sweep tp4 rc=$? t=$((SECONDS-start))" >> $O/times.txt
cat $O/gpus.txt $O/times.txt; tail -25 $O/sweep-tp4-summary.txt 2>/dev/null | cut -c1-200
tar czf $O/call3.tgz -C $O gpus.txt times.txt sweep.log 2>/dev/null
rm -f $O/*.log $O/gpus.txt $O/times.txt; ls $O
