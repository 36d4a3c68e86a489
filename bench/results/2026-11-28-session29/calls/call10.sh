#!/usr/bin/env bash
# Session 29 call 10 (2x H200, bundle b089415): the 8B layer at tp 2 beside PyTorch's TP layer (torch_layer.py:
# NCCL and async-TP), both 4 steps a sample (the power-limited regime of back-to-back training; torch_layer.py's
# --steps-per-sample on a GPU for the first time), 2 alternating rounds.
set -u
cd "$(dirname "$0")/.."
B=$PWD/.gpu
O=$OUT
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee $O/node.txt
export UB_SKIPMC=1 NCCL_NVLS_ENABLE=0 XDG_CACHE_HOME=$B/xdg
OUT=$O/layer ALT_BUDGET_S=230 timeout -k 10 240 bash $B/run-gpu.sh \
  "layer=2 --tp 2 --hidden 4096 --ffn 14336 --swiglu --tokens 8192 --iters 20 --config $B/auto.yaml --cuda-graph --clocks --steps-per-sample 4 -- --hidden 4096 --ffn 14336 --activation swiglu --tokens 8192 --iters 20 --steps-per-sample 4" \
  > $O/layer.log 2>&1
echo "layer rc=$?"
grep -E "median step|hidden share|torch_nccl|torch_async|round|MFU" $O/layer.log | cut -c1-180 | head -40
