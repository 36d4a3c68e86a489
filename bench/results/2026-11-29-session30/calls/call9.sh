#!/usr/bin/env bash
# Session 30 call 9 (one GPU), MARGIN 2%: GEMM parity only,
# as call 6: GEMM parity on the sweep's 88 GEMMs as call 5 (ubuf tuned afresh by the product's online tuner,
# now confirming back to back, beside cuBLASLt's first choice and torch.matmul, 3 alternating rounds).
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT
export UB_SKIPMC=1 NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee $O/node.txt
mkdir -p /tmp/xdg-fresh9
XDG_CACHE_HOME=/tmp/xdg-fresh9 ALT_BUDGET_S=270 timeout -k 10 290 \
  bash $B/run-gpu.sh "parity=3 --variant 32:0 --iters 30 --heat-ms 300 -- --iters 30 --heat-ms 300" > $O/run.log 2>&1
echo "== parity rc=$?"
python3 $B/parity-summary.py $O/parity
cp /tmp/xdg-fresh9/ubuf/*.tsv $O/parity/ 2>/dev/null
cd $O && tar czf parity.tgz parity run.log log.txt summary.txt 2>/dev/null; rm -rf parity
