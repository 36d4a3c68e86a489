#!/usr/bin/env bash
# Session 35 call 6 (one GPU), bundle 2badab3: every layer kernel beside its PyTorch twin, 2 alternating rounds
# (`bench kernels` and bench/torch/torch_kernels.py), for the results table at the session's last kernels.
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT; start=$SECONDS
export UB_SKIPMC=1 NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $O/node.txt
OUT=/tmp/kt6 ALT_BUDGET_S=150 timeout -k 10 170 bash $B/run-gpu.sh "kernels=2 --iters 30 -- --iters 30" > $O/kernels.log 2>&1
echo "== kernels rc=$? t=$((SECONDS-start))"
mkdir -p /tmp/kernels6 && cp /tmp/kt6/*.json /tmp/kt6/summary.txt /tmp/kernels6/ 2>/dev/null
tar czf $O/kernels.tgz -C /tmp kernels6
cat /tmp/kt6/summary.txt
