#!/usr/bin/env bash
# Call 2 (session 27): the tp 2 model-shape sweep, bf16 (GPUs 0,1 of the same 4x H200 machine), ubuf timed as CUDA graph replays, with the reduce-scatter
# credits at the next call's start (771bc2b) in the bundle: the first sweep since that change.
set -uo pipefail
cd "$(dirname "$0")/.."
echo "commit $(cat .gpu/COMMIT)"; nvidia-smi --query-gpu=name,power.limit,clocks.max.sm --format=csv
export UB_SKIPMC=1 NCCL_NVLS_ENABLE=0
SWEEP_GRAPH=1 timeout -k 10 585 bash .gpu/sweep-calls.sh tp2
echo "sweep rc=$?"
ls -la "$OUT"
