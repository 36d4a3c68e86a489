#!/usr/bin/env bash
# Session 35 call 8 (one GPU), bundle 881e8bb (the session's last kernels: the forward of 62c6e46, the backwards'
# means times 1 / cols of cd8b851): LayerKernelsGpuTest; every layer kernel beside its PyTorch twin, 2 alternating
# rounds (`bench kernels` and bench/torch/torch_kernels.py), for the results table.
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT; start=$SECONDS
export UB_SKIPMC=1 NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $O/node.txt
t='dev\.ubuf\..*\.'
OUT=/tmp/suite8 STALL_S=90 timeout -k 10 200 bash $B/gpu-lanes.sh "0:${t}LayerKernelsGpuTest"
echo "lanes rc=$? t=$((SECONDS-start))"
sed -E "s/\[ [0-9]+ containers [a-z]+ \]//g" /tmp/suite8/lanes.txt 2>/dev/null
cp /tmp/suite8/lanes.txt $O/ 2>/dev/null
for f in /tmp/suite8/*/tests.txt; do grep -h -A3 -E "✘" $f 2>/dev/null | head -20 | cut -c1-250; done
OUT=/tmp/kt8 ALT_BUDGET_S=150 timeout -k 10 170 bash $B/run-gpu.sh "kernels=2 --iters 30 -- --iters 30" > $O/kernels.log 2>&1
echo "== kernels rc=$? t=$((SECONDS-start))"
mkdir -p /tmp/kernels8 && cp /tmp/kt8/*.json /tmp/kt8/summary.txt /tmp/kernels8/ 2>/dev/null
tar czf $O/kernels.tgz -C /tmp kernels8
cat /tmp/kt8/summary.txt
