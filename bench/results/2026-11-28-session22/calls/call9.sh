#!/usr/bin/env bash
# Session 22 call 9 (2 GPUs): the 8B tp 2 step at the session's last kernels beside PyTorch's TP layer (NCCL and
# async-TP), 2 alternating rounds (run-gpu.sh's layer stage: the demo first in odd rounds, PyTorch in even ones).
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee $O/node.txt
M8="--hidden 4096 --ffn 14336 --swiglu --tokens 8192"
T8="--hidden 4096 --activation swiglu --ffn 14336 --tokens 8192 --iters 20"
export XDG_CACHE_HOME=$B/xdg UB_PLAN_CACHE=/tmp/plans9.properties
CUDA_VISIBLE_DEVICES=0,1 UB_TIMEOUT=20 OUT=/tmp/layer9 ALT_BUDGET_S=150 timeout -k 10 165 bash $B/run-gpu.sh "layer=2 --tp 2 $M8 --iters 20 --config $B/auto.yaml --cuda-graph --clocks -- $T8" > /tmp/layer9.log 2>&1
echo "layer rc=$?"
grep -hE '^median step|hidden share|MFU of the overlap|torch_(nccl|async)|round' /tmp/layer9.log | head -30
cp /tmp/layer9.log /tmp/layer9/ 2>/dev/null
tar czf $O/layer.tgz -C /tmp layer9
