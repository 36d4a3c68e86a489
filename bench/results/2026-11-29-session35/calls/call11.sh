#!/usr/bin/env bash
# Session 35 call 11 (one GPU), bundle 2bf03c3 (the session's last kernels: the forward's word kernels without bound
# checks on whole rows, the backwards of cd8b851): LayerKernelsGpuTest; every layer kernel beside its PyTorch twin,
# 2 alternating rounds (`bench kernels` and bench/torch/torch_kernels.py), for the results table.
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT; start=$SECONDS
export UB_SKIPMC=1 NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $O/node.txt
t='dev\.ubuf\..*\.'
OUT=/tmp/suite11 STALL_S=90 timeout -k 10 200 bash $B/gpu-lanes.sh "0:${t}LayerKernelsGpuTest"
echo "lanes rc=$? t=$((SECONDS-start))"
sed -E "s/\[ [0-9]+ containers [a-z]+ \]//g" /tmp/suite11/lanes.txt 2>/dev/null
cp /tmp/suite11/lanes.txt $O/ 2>/dev/null
for f in /tmp/suite11/*/tests.txt; do grep -h -A3 -E "✘" $f 2>/dev/null | head -20 | cut -c1-250; done
OUT=/tmp/kt11 ALT_BUDGET_S=150 timeout -k 10 170 bash $B/run-gpu.sh "kernels=2 --iters 30 -- --iters 30" > $O/kernels.log 2>&1
echo "== kernels rc=$? t=$((SECONDS-start))"
mkdir -p /tmp/kernels11 && cp /tmp/kt11/*.json /tmp/kt11/summary.txt /tmp/kernels11/ 2>/dev/null
tar czf $O/kernels.tgz -C /tmp kernels11
cat /tmp/kt11/summary.txt
