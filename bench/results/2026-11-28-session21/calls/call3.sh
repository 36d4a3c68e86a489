#!/usr/bin/env bash
# Session 21 call 3 (GPUs 0,1 of 4): the model-shape sweep at tp 2 with ubuf timed as CUDA graph replays in the warm-up
# and every round (SWEEP_GRAPH=1: bench sweep --cuda-graph, auto planned as replays), alternating with PyTorch (eager).
set -u
cd "$(dirname "$0")/.."
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
ALT_BUDGET_S=520 SWEEP_GRAPH=1 OUT=$OUT SWEEP_WORK=/tmp/sweep-work timeout -k 10 560 bash .gpu/sweep-calls.sh tp2
echo "rc=$?"; ls $OUT; cat $OUT/sweep-tp2-graph-summary.txt 2>/dev/null | tail -40
