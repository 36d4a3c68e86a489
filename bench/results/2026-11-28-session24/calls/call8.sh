#!/usr/bin/env bash
# Session 24 call 8 (2 GPUs): the session's final kernels (05e887f): LayerKernelsGpuTest (GPU 0) beside
# TpLayersGpuTest (GPUs 0,1 after it); every layer kernel beside its PyTorch twin, 2 alternating rounds (GPU 0); the
# 8B tp 2 bf16 step beside PyTorch's TP layer, 2 alternating rounds (planning afresh).
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee $O/node.txt
export UB_SKIPMC=1 XDG_CACHE_HOME=$B/xdg
t='dev\.ubuf\..*\.'
OUT=/tmp/suite8 STALL_S=90 timeout -k 10 220 bash $B/gpu-lanes.sh "0,1:${t}LayerKernelsGpuTest;${t}TpLayersGpuTest"
echo "lanes rc=$?"
sed -E "s/\[ [0-9]+ containers [a-z]+ \]//g" /tmp/suite8/lanes.txt 2>/dev/null
for f in /tmp/suite8/*/tests.txt; do grep -h -A3 -E "✘" $f 2>/dev/null | head -20 | cut -c1-250; done
CUDA_VISIBLE_DEVICES=0 OUT=/tmp/kt8 ALT_BUDGET_S=200 timeout -k 10 220 bash $B/run-gpu.sh "kernels=2 --iters 30 -- --iters 30" > /tmp/kt8.log 2>&1
echo "kernels rc=$?"
grep -h "of copy" /tmp/kt8.log | head -40
M8="--hidden 4096 --ffn 14336 --swiglu --tokens 8192"
T8="--hidden 4096 --activation swiglu --ffn 14336 --tokens 8192 --iters 20"
export UB_PLAN_CACHE=/tmp/plans8.properties
CUDA_VISIBLE_DEVICES=0,1 UB_TIMEOUT=20 OUT=/tmp/layer8 ALT_BUDGET_S=150 timeout -k 10 165 bash $B/run-gpu.sh "layer=2 --tp 2 $M8 --iters 20 --config $B/auto.yaml --cuda-graph --clocks -- $T8" > /tmp/layer8.log 2>&1
echo "layer rc=$?"
grep -hE '^median step|hidden share|MFU of the overlap|torch_(nccl|async) +step|round' /tmp/layer8.log | head -30
cp /tmp/layer8.log /tmp/layer8/ 2>/dev/null
tar czf $O/suite.tgz -C /tmp suite8 2>/dev/null
tar czf $O/kernels.tgz -C /tmp kt8
tar czf $O/layer.tgz -C /tmp layer8
