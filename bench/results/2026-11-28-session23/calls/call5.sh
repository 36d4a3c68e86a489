#!/usr/bin/env bash
# Session 23 call 5 (2 GPUs): LayerKernelsGpuTest with both fused LayerNorm backwards on the same parts, then the
# 8B tp 2 bf16 step (--cuda-graph) beside PyTorch's TP layer (NCCL, async-TP), 2 alternating rounds.
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee $O/node.txt
export UB_SKIPMC=1 XDG_CACHE_HOME=$B/xdg
t='dev\.ubuf\..*\.'
OUT=/tmp/suite5 STALL_S=90 timeout -k 10 120 bash $B/gpu-lanes.sh "0,1:${t}LayerKernelsGpuTest"
echo "lanes rc=$?"
sed -E "s/\[ [0-9]+ containers [a-z]+ \]//g" /tmp/suite5/lanes.txt 2>/dev/null
for f in /tmp/suite5/*/tests.txt; do grep -h -A3 -E "FAILED" $f 2>/dev/null | head -20 | cut -c1-250; done
M8="--hidden 4096 --ffn 14336 --swiglu --tokens 8192"
T8="--hidden 4096 --activation swiglu --ffn 14336 --tokens 8192 --iters 20"
export UB_PLAN_CACHE=/tmp/plans5.properties
CUDA_VISIBLE_DEVICES=0,1 UB_TIMEOUT=20 OUT=/tmp/layer5 ALT_BUDGET_S=150 timeout -k 10 165 bash $B/run-gpu.sh "layer=2 --tp 2 $M8 --iters 20 --config $B/auto.yaml --cuda-graph --clocks -- $T8" > /tmp/layer5.log 2>&1
echo "layer rc=$?"
grep -hE '^median step|hidden share|MFU of the overlap|torch_(nccl|async)|round' /tmp/layer5.log | head -30
cp /tmp/layer5.log /tmp/layer5/ 2>/dev/null
tar czf $O/suite.tgz -C /tmp suite5 2>/dev/null
tar czf $O/layer.tgz -C /tmp layer5
