#!/usr/bin/env bash
# Session 23 call 4 (2 GPUs): the LayerNorm backward's new walk and one-launch finishing sums: LayerKernelsGpuTest
# (GPU 0) beside TpLayersGpuTest (GPUs 0,1 after it), then every layer kernel beside its PyTorch twin, 2 alternating
# rounds (GPU 0).
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee $O/node.txt
export UB_SKIPMC=1 XDG_CACHE_HOME=$B/xdg
t='dev\.ubuf\..*\.'
OUT=/tmp/suite4 STALL_S=90 timeout -k 10 200 bash $B/gpu-lanes.sh "0,1:${t}LayerKernelsGpuTest;${t}TpLayersGpuTest"
echo "lanes rc=$?"
sed -E "s/\[ [0-9]+ containers [a-z]+ \]//g" /tmp/suite4/lanes.txt 2>/dev/null
for f in /tmp/suite4/*/tests.txt; do grep -h -A3 -E "✘" $f 2>/dev/null | head -20 | cut -c1-250; done
CUDA_VISIBLE_DEVICES=0 OUT=/tmp/kt4 ALT_BUDGET_S=280 timeout -k 10 300 bash $B/run-gpu.sh "kernels=2 --iters 30 -- --iters 30"
echo "kernels rc=$?"
tar czf $O/suite.tgz -C /tmp suite4 2>/dev/null
tar czf $O/kernels.tgz -C /tmp kt4
grep -h -E "layernorm" /tmp/kt4/*.txt 2>/dev/null | head -20
