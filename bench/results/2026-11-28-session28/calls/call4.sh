#!/usr/bin/env bash
# Call 4 (session 28): the FP8 subset of the tp 4 sweep (E4M3 operands, M = 4096-16384), ubuf alone, timed as CUDA
# graph replays, with the planner's runoff between the candidates within 5% of the fastest (the bundle's commit).
set -uo pipefail
cd "$(dirname "$0")/.."
echo "commit $(cat .gpu/COMMIT)"; nvidia-smi --query-gpu=name,power.limit,clocks.max.sm --format=csv
export UB_SKIPMC=1 NCCL_NVLS_ENABLE=0
SWEEP_GRAPH=1 ALT_BUDGET_S=370 timeout -k 10 400 bash .gpu/sweep-calls.sh tp4 fp8
echo "sweep rc=$?"
ls -la "$OUT"
