#!/usr/bin/env bash
# Session 21 call 1 (4 GPUs): the model-shape sweep at tp 4 with ubuf timed as CUDA graph replays in the warm-up
# and every round (SWEEP_GRAPH=1: bench sweep --cuda-graph, auto planned as replays), alternating with PyTorch (eager).
set -u
cd "$(dirname "$0")/.."
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
SWEEP_GRAPH=1 OUT=$OUT SWEEP_WORK=/tmp/sweep-work timeout -k 10 580 bash .gpu/sweep-calls.sh tp4
echo "rc=$?"; ls $OUT; cat $OUT/sweep-tp4-graph-summary.txt 2>/dev/null | tail -40
