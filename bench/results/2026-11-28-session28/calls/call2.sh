#!/usr/bin/env bash
# Call 2 (session 28): the tp 2 model-shape sweep, bf16, ubuf timed as CUDA graph replays, on GPUs 0,1 of a 4-GPU
# node, with the planner's runoff between the candidates within 5% of the fastest (the bundle's commit).
set -uo pipefail
cd "$(dirname "$0")/.."
echo "commit $(cat .gpu/COMMIT)"; nvidia-smi --query-gpu=name,power.limit,clocks.max.sm --format=csv
export UB_SKIPMC=1 NCCL_NVLS_ENABLE=0
SWEEP_GRAPH=1 timeout -k 10 585 bash .gpu/sweep-calls.sh tp2
echo "sweep rc=$?"
ls -la "$OUT"
