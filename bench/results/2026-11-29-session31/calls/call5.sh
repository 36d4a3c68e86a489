#!/usr/bin/env bash
# Session 31 call 5 (one GPU), bundle 700b4f6: GEMM parity on the sweep's 88 GEMMs, plain (no variant), 3 alternating
# rounds, ubuf tuned afresh by the heated tuner (call 1 ran the same on the cache of the unheated one); then every
# layer kernel beside its PyTorch twin, 2 alternating rounds (the staged LayerNorm backward of 2f6db7e).
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT; start=$SECONDS
export UB_SKIPMC=1 NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $O/node.txt
mkdir -p /tmp/xdg5
XDG_CACHE_HOME=/tmp/xdg5 ALT_BUDGET_S=330 timeout -k 10 350 \
  bash $B/run-gpu.sh "parity=3 --iters 30 --heat-ms 300 -- --iters 30 --heat-ms 300" > $O/run.log 2>&1
echo "== parity rc=$? t=$((SECONDS-start))"
python3 $B/parity-summary.py $O/parity | tee $O/parity-summary.txt
cp /tmp/xdg5/ubuf/*.tsv $O/parity/ 2>/dev/null
OUT=/tmp/kt5 ALT_BUDGET_S=150 timeout -k 10 170 bash $B/run-gpu.sh "kernels=2 --iters 30 -- --iters 30" > $O/kernels.log 2>&1
echo "== kernels rc=$? t=$((SECONDS-start))"
cat /tmp/kt5/summary.txt 2>/dev/null | tail -5
grep -h "% of copy" /tmp/kt5/*.log 2>/dev/null | grep layernorm | cut -c1-110 | head -8
mkdir -p /tmp/kernels5 && cp /tmp/kt5/*.json /tmp/kt5/summary.txt /tmp/kernels5/ 2>/dev/null
tar czf $O/kernels.tgz -C /tmp kernels5
cd $O && tar czf parity.tgz parity run.log 2>/dev/null; rm -rf parity
