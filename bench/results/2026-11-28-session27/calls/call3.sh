#!/usr/bin/env bash
# Call 3 (session 27): the FP8 subset of the sweep at tp 4 (E4M3 operands, bf16 output and partials), ubuf timed as CUDA
# graph replays, with the reduce-scatter credits at the next call's start (771bc2b) in the bundle.
set -uo pipefail
cd "$(dirname "$0")/.."
echo "commit $(cat .gpu/COMMIT)"; nvidia-smi --query-gpu=name,power.limit,clocks.max.sm --format=csv
export UB_SKIPMC=1 NCCL_NVLS_ENABLE=0
SWEEP_GRAPH=1 ALT_BUDGET_S=420 timeout -k 10 585 bash .gpu/sweep-calls.sh tp4 fp8
echo "sweep rc=$?"
ls -la "$OUT"
