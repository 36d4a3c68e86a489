#!/usr/bin/env bash
# Session 21 call 4 (2 GPUs: the 4-GPU kind was not lent): the FP8 subset of the model-shape sweep at tp 2 (E4M3 operands, bf16 out; ubuf alone,
# no PyTorch) with ubuf timed as CUDA graph replays (SWEEP_GRAPH=1), in what is left of the session's device time.
set -u
cd "$(dirname "$0")/.."
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
ALT_BUDGET_S=390 SWEEP_GRAPH=1 OUT=$OUT SWEEP_WORK=/tmp/sweep-work timeout -k 10 420 bash .gpu/sweep-calls.sh tp2 fp8
echo "rc=$?"; ls $OUT; cat $OUT/sweep-tp2-fp8-graph-summary.txt 2>/dev/null | tail -40
