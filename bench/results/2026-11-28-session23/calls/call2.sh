#!/usr/bin/env bash
# Session 23 call 2 (4 GPUs): the model-shape sweep at tp 4, ubuf timed as CUDA graph replays (SWEEP_GRAPH=1), with
# the tp > 2 fused scatter candidates in the planner's space, alternating with PyTorch (eager).
set -u
cd "$(dirname "$0")/.."
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
SWEEP_GRAPH=1 OUT=$OUT SWEEP_WORK=/tmp/sweep-work timeout -k 10 575 bash .gpu/sweep-calls.sh tp4
echo "rc=$?"; ls $OUT; cat $OUT/sweep-tp4-graph-summary.txt 2>/dev/null | tail -40
