#!/usr/bin/env bash
# Session 20 call 2 (4 GPUs): the model-shape sweep at tp 4 with ubuf timed as CUDA graph replays
# (SWEEP_GRAPH=1: bench sweep --cuda-graph, auto planned as replays), alternating with PyTorch (eager).
set -u
cd "$(dirname "$0")/.."
SWEEP_GRAPH=1 OUT=$OUT SWEEP_WORK=/tmp/sweep-work timeout -k 10 585 bash .gpu/sweep-calls.sh tp4
echo "rc=$?"; ls $OUT; cat $OUT/sweep-tp4-graph-summary.txt 2>/dev/null | tail -40
