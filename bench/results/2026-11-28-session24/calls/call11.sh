#!/usr/bin/env bash
# Session 24 call 11 (one GPU): the session's last kernels (b6c50ad: GELU's backward with a block's words
# consecutive, its forward as before): LayerKernelsGpuTest; every layer kernel beside its PyTorch twin, 2
# alternating rounds. Outputs packed (the device returns at most 8 files).
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee $O/node.txt
export UB_SKIPMC=1 XDG_CACHE_HOME=$B/xdg
t='dev\.ubuf\..*\.'
OUT=/tmp/suite11 STALL_S=90 timeout -k 10 120 bash $B/gpu-lanes.sh "0:${t}LayerKernelsGpuTest"
echo "lanes rc=$?"
sed -E "s/\[ [0-9]+ containers [a-z]+ \]//g" /tmp/suite11/lanes.txt 2>/dev/null
cp /tmp/suite11/lanes.txt $O/lanes.txt 2>/dev/null
OUT=/tmp/kt11 ALT_BUDGET_S=240 timeout -k 10 260 bash $B/run-gpu.sh "kernels=2 --iters 30 -- --iters 30" > /tmp/kt11.log 2>&1
echo "kernels rc=$?"
grep -h "of copy" /tmp/kt11.log | grep -E "gelu|layernorm" | head -24
tar czf $O/suite.tgz -C /tmp suite11 2>/dev/null
mkdir -p /tmp/kernels11 && cp /tmp/kt11/*.json /tmp/kt11/summary.txt /tmp/kernels11/ && tar czf $O/kernels.tgz -C /tmp kernels11
