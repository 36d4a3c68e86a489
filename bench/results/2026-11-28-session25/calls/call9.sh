#!/usr/bin/env bash
# Session 25 call 9 (2 GPUs): the 8B tp 2 bf16 step at d6e9c73 (the ring's tail adding fc2's bias in its GEMMs'
# epilogue) beside PyTorch's TP layer (NCCL, and async-TP), 2 alternating rounds, planning afresh.
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT; start=$SECONDS
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee $O/node.txt
export UB_SKIPMC=1 XDG_CACHE_HOME=$B/xdg
M8="--hidden 4096 --ffn 14336 --swiglu --tokens 8192"
T8="--hidden 4096 --activation swiglu --ffn 14336 --tokens 8192 --iters 20"
export UB_PLAN_CACHE=/tmp/plans9.properties
CUDA_VISIBLE_DEVICES=0,1 UB_TIMEOUT=20 OUT=/tmp/layer9 ALT_BUDGET_S=150 timeout -k 10 165 bash $B/run-gpu.sh "layer=2 --tp 2 $M8 --iters 20 --config $B/auto.yaml --cuda-graph --clocks -- $T8" > /tmp/layer9.log 2>&1
echo "layer rc=$? t=$((SECONDS-start))"
grep -hE '^median step|hidden share|MFU of the overlap|torch_(nccl|async) +step|round|method: auto ran .* fc2' /tmp/layer9.log | head -30 | cut -c1-200
cp /tmp/layer9.log /tmp/layer9/ 2>/dev/null
tar czf $O/layer.tgz -C /tmp layer9
