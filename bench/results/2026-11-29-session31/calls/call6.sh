#!/usr/bin/env bash
# Session 31 call 6 (one GPU), bundle 700b4f6: GEMM parity, plain, 3 alternating rounds, with ubuf on cuBLASLt's
# first choice untimed (UB_GEMM_TUNING=0), on the six shapes above 1.025x torch.matmul in call 5: does ubuf's first
# match torch.matmul (the same kernel) where the tuned choice did not?
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT; start=$SECONDS
export UB_SKIPMC=1 NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $O/node.txt
shapes="512,4096,14336 2048,2048,4096 2048,2560,5120 16384,13824,5120 16384,8192,5120 4096,4096,14336"
mkdir -p /tmp/xdg6
UB_GEMM_TUNING=0 XDG_CACHE_HOME=/tmp/xdg6 PARITY_SHAPES="$shapes" ALT_BUDGET_S=200 timeout -k 10 220 \
  bash $B/run-gpu.sh "parity=3 --iters 30 --heat-ms 300 -- --iters 30 --heat-ms 300" > $O/run.log 2>&1
echo "== parity rc=$? t=$((SECONDS-start))"
python3 $B/parity-summary.py $O/parity | tee $O/parity-summary.txt
cd $O && tar czf parity.tgz parity run.log 2>/dev/null; rm -rf parity
